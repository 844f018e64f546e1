import { describe, expect, it } from 'vitest';
import { parseServerMessage, stringifyServerMessage, type CallClientMessage } from '../src/index.js';

const base: CallClientMessage = {
  type: 'callClient',
  requestId: 'r-1',
  clientId: 'c "1"',
  method: 'GET',
  path: '/docs/a/skill.md',
  kind: 'skill',
  name: '/docs/a/skill.md',
};

describe('stringifyServerMessage', () => {
  it('gives exactly the JSON.stringify value of a callClient with both forms', () => {
    const params = { id: 'x' };
    const query = { q: 'a "quoted" value', n: '1' };
    const headers = { 'user-agent': 'test', cookie: 'a=1; b=2' };
    const body = { nested: [1, null, 'two'] };
    const message: CallClientMessage = { ...base, params, query, headers, body, auth: { token: 't' }, args: { params, query, body, headers } };
    const text = stringifyServerMessage(message);
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(message)));
    expect(parseServerMessage(JSON.parse(text)).ok).toBe(true);
  });

  it('handles absent optional fields (empty args)', () => {
    const message: CallClientMessage = { ...base, args: {} };
    expect(JSON.parse(stringifyServerMessage(message))).toEqual({ ...base, args: {} });
  });

  it('falls back to JSON.stringify when args differs from the path form', () => {
    const message: CallClientMessage = { ...base, query: { a: '1' }, args: { query: { a: '2' } } };
    expect(JSON.parse(stringifyServerMessage(message))).toEqual(message);
  });

  it('serialises ping and pong as they are', () => {
    expect(stringifyServerMessage({ type: 'ping', timestamp: 5 })).toBe('{"type":"ping","timestamp":5}');
  });
});
