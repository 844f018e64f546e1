import { describe, expect, it } from 'vitest';
import { readSessionId } from '../src/session-id.js';

describe('readSessionId', () => {
  it('reads the header, else the query', () => {
    expect(readSessionId('a', undefined)).toEqual({ kind: 'ok', id: 'a' });
    expect(readSessionId(undefined, ['b'])).toEqual({ kind: 'ok', id: 'b' });
  });

  it('prefers the header over the query', () => {
    expect(readSessionId('a', ['b'])).toEqual({ kind: 'ok', id: 'a' });
  });

  it('treats absent and empty values as missing', () => {
    expect(readSessionId(undefined, undefined)).toEqual({ kind: 'missing' });
    expect(readSessionId(null, [''])).toEqual({ kind: 'missing' });
    expect(readSessionId(' ', [])).toEqual({ kind: 'missing' });
  });

  it('accepts the same id repeated', () => {
    expect(readSessionId('a, a', ['a', 'a'])).toEqual({ kind: 'ok', id: 'a' });
  });

  it('refuses two different ids from one source', () => {
    expect(readSessionId('a, b', undefined)).toMatchObject({ kind: 'malformed', error: expect.stringContaining('x-mdp-session-id') });
    expect(readSessionId(undefined, ['a', 'b'])).toMatchObject({ kind: 'malformed', error: expect.stringContaining('sessionId') });
    expect(readSessionId('a', ['a', 'b'])).toMatchObject({ kind: 'malformed' });
  });
});
