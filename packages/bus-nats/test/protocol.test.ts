/**
 * What a node takes from another: call envelopes and outcomes nest no deeper than the MDP protocol
 * lets a client's own messages nest (MAX_JSON_DEPTH), so a body or answer that came over the bus
 * is no harder on the holder (or the caller's edges) than one that came from a client.
 */
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '@mdp/protocol';
import * as v from 'valibot';
import {
  CallEnvelopeSchema,
  OutcomeSchema,
  decodeCallEnvelope,
  decodeJson,
  decodeOutcome,
  encodeJson,
  fastCallEnvelope,
  fastOutcome,
  remoteCallOf,
} from '../src/protocol.js';
import { LATENCY_BUCKETS_MS, latencyBucket } from '../src/api.js';

/** A value `depth` arrays deep. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

const envelope = (body: unknown) => encodeJson({ id: 'c-1', clientId: 'app', timeoutMs: 1000, method: 'POST', path: '/p', body });

describe('bodies between nodes', () => {
  it('take a call body or an answer as deep as a client may send, and no deeper', () => {
    expect(decodeJson(CallEnvelopeSchema, envelope(nested(MAX_JSON_DEPTH)))).toMatchObject({ clientId: 'app' });
    expect(decodeJson(CallEnvelopeSchema, envelope(nested(MAX_JSON_DEPTH + 1)))).toBeUndefined();
    // Deep enough that writing it out again (JSON.stringify) would overflow the stack.
    const deep = `${'['.repeat(200_000)}1${']'.repeat(200_000)}`;
    const text = `{"id":"c-1","clientId":"app","timeoutMs":1000,"method":"POST","path":"/p","body":${deep}}`;
    expect(decodeJson(CallEnvelopeSchema, new TextEncoder().encode(text))).toBeUndefined();
    expect(decodeJson(OutcomeSchema, encodeJson({ ok: true, data: nested(MAX_JSON_DEPTH) }))).toMatchObject({ ok: true });
    expect(decodeJson(OutcomeSchema, encodeJson({ ok: true, data: nested(MAX_JSON_DEPTH + 1) }))).toBeUndefined();
  });
});

describe('fast paths of the call envelope and the outcome', () => {
  const valid = {
    id: 'c-1',
    clientId: 'app',
    timeoutMs: 1000,
    method: 'GET',
    path: '/s1/skill.md',
    query: { q: '1' },
    headers: { accept: 'text/markdown' },
    route: 'skill',
  };
  const schemaOf = (value: unknown) => {
    const parsed = v.safeParse(CallEnvelopeSchema, value);
    return parsed.success ? parsed.output : undefined;
  };

  it('take the usual call and answer by hand, with what the schema would output', () => {
    for (const envelope of [
      valid,
      { id: 'c-1', clientId: 'app', timeoutMs: 1, method: 'POST', path: '/e/act', body: { a: [1, { b: null }] } },
      { ...valid, body: nested(MAX_JSON_DEPTH), extra: 'dropped', query: {}, headers: {} },
      { ...valid, id: 'x'.repeat(64), route: 'r'.repeat(32), timeoutMs: 24 * 3600_000, body: null },
    ]) {
      const fast = fastCallEnvelope(JSON.parse(JSON.stringify(envelope)));
      expect(fast).toBeDefined();
      expect(fast).toEqual(schemaOf(envelope));
      expect(decodeCallEnvelope(encodeJson(envelope))).toEqual(schemaOf(envelope));
    }
    for (const outcome of [{ ok: true, data: 'text' }, { ok: true }, { ok: true, data: nested(MAX_JSON_DEPTH), extra: 1 }]) {
      const fast = fastOutcome(outcome);
      expect(fast).toBeDefined();
      expect(fast).toEqual(v.parse(OutcomeSchema, outcome));
    }
  });

  it('refuse every malformed call, by hand or through the schema', () => {
    const { id: _id, clientId: _clientId, timeoutMs: _timeoutMs, method: _method, path: _path, ...rest } = valid;
    const hostile: unknown[] = [
      null,
      [],
      'call',
      7,
      Object.assign([], valid),
      { ...rest, clientId: 'app', timeoutMs: 1000, method: 'GET', path: '/p' },
      { ...valid, id: '' },
      { ...valid, id: 'x'.repeat(65) },
      { ...valid, id: 1 },
      { ...rest, id: 'c-1', timeoutMs: 1000, method: 'GET', path: '/p' },
      { ...valid, clientId: '' },
      { ...valid, clientId: ['app'] },
      { ...rest, id: 'c-1', clientId: 'app', method: 'GET', path: '/p' },
      { ...valid, timeoutMs: 0 },
      { ...valid, timeoutMs: -5 },
      { ...valid, timeoutMs: 1.5 },
      { ...valid, timeoutMs: 24 * 3600_000 + 1 },
      { ...valid, timeoutMs: '1000' },
      { ...valid, method: 'get' },
      { ...valid, method: 'FETCH' },
      { ...valid, method: 1 },
      { ...valid, method: 'toString' },
      { ...rest, id: 'c-1', clientId: 'app', timeoutMs: 1000, method: 'GET' },
      { ...valid, path: 7 },
      { ...valid, route: 'r'.repeat(33) },
      { ...valid, route: 1 },
      { ...valid, body: nested(MAX_JSON_DEPTH + 1) },
      { ...valid, query: [] },
      { ...valid, query: ['a'] },
      { ...valid, query: 'q=1' },
      { ...valid, query: null },
      { ...valid, query: { q: 1 } },
      { ...valid, query: { q: ['1'] } },
      { ...valid, headers: { accept: null } },
      { ...valid, headers: [] },
      { ...valid, headers: { accept: { v: 'x' } } },
      { ...valid, auth: { token: 1 } },
      { ...valid, auth: [] },
    ];
    for (const value of hostile) {
      expect(fastCallEnvelope(value), JSON.stringify(value)).toBeUndefined();
      expect(decodeCallEnvelope(encodeJson(value)), JSON.stringify(value)).toBeUndefined();
    }
    expect(decodeCallEnvelope(Buffer.from('{"id":'))).toBeUndefined();
  });

  it('leave to the schema what only it knows, and agree with it there', () => {
    const cases = [
      { ...valid, auth: { scheme: 'Bearer', token: 't', headers: { a: 'b' } } },
      JSON.parse('{"id":"c-1","clientId":"app","timeoutMs":5,"method":"GET","path":"/p","headers":{"__proto__":"x","a":"b"}}'),
      JSON.parse('{"id":"c-1","clientId":"app","timeoutMs":5,"method":"GET","path":"/p","query":{"constructor":"x"}}'),
    ];
    for (const value of cases) {
      expect(fastCallEnvelope(value)).toBeUndefined();
      expect(decodeCallEnvelope(encodeJson(value))).toEqual(schemaOf(value));
    }
    const failed = { ok: false, error: { code: 'not_found', message: 'no' }, source: 'server' };
    expect(fastOutcome(failed)).toBeUndefined();
    expect(decodeOutcome(encodeJson(failed))).toEqual(failed);
  });

  it('refuse every malformed answer', () => {
    for (const value of [
      null,
      [],
      'ok',
      { ok: 'true', data: 1 },
      { ok: 1, data: 1 },
      { data: 1 },
      { ok: true, data: nested(MAX_JSON_DEPTH + 1) },
      { ok: false },
      { ok: false, error: { code: 'x', message: 'y' }, source: 'elsewhere' },
    ]) {
      expect(fastOutcome(value), JSON.stringify(value)).toBeUndefined();
      expect(decodeOutcome(encodeJson(value)), JSON.stringify(value)).toBeUndefined();
    }
    expect(decodeOutcome(Buffer.from('not json'))).toBeUndefined();
  });
});

describe('the call a holder hands its handler', () => {
  it('carries what the envelope carries for the client, and nothing of the bus', () => {
    const auth = { scheme: 'Bearer', token: 't' };
    const full = {
      id: 'i',
      clientId: 'c',
      timeoutMs: 5,
      method: 'POST',
      path: '/p',
      query: { q: '1' },
      body: { n: 1 },
      headers: { h: 'v' },
      auth,
      route: 'skill',
    } as const;
    expect(remoteCallOf(full)).toEqual({ method: 'POST', path: '/p', query: { q: '1' }, body: { n: 1 }, headers: { h: 'v' }, auth, route: 'skill' });
    const bare = remoteCallOf({ id: 'i', clientId: 'c', timeoutMs: 5, method: 'GET', path: '/p' });
    expect(bare).toEqual({ method: 'GET', path: '/p' });
    expect(Object.keys(bare)).toEqual(['method', 'path']);
    // A body of null is a body.
    expect(remoteCallOf({ id: 'i', clientId: 'c', timeoutMs: 5, method: 'POST', path: '/p', body: null })).toEqual({ method: 'POST', path: '/p', body: null });
  });
});

describe('latency buckets', () => {
  it('count a latency in the first bucket whose bound it does not pass, and past the last in one more', () => {
    expect(latencyBucket(0)).toBe(0);
    expect(latencyBucket(1)).toBe(0);
    expect(latencyBucket(1.01)).toBe(1);
    expect(latencyBucket(10_000)).toBe(LATENCY_BUCKETS_MS.length - 1);
    expect(latencyBucket(10_001)).toBe(LATENCY_BUCKETS_MS.length);
    for (const [i, le] of LATENCY_BUCKETS_MS.entries()) expect(latencyBucket(le)).toBe(i);
  });
});
