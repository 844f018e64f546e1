/**
 * What a node takes from another: call envelopes and outcomes nest no deeper than the MDP protocol
 * lets a client's own messages nest (MAX_JSON_DEPTH), so a body or answer that came over the bus
 * is no harder on the holder (or the caller's edges) than one that came from a client.
 */
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '@mdp/protocol';
import { CallEnvelopeSchema, OutcomeSchema, decodeJson, encodeJson } from '../src/protocol.js';

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
