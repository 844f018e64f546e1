/** A mirror link's proof that it comes from a member (mirror-proof.ts): made and checked without sockets. */
import { describe, expect, it } from 'vitest';
import { helloProof } from '../src/membership.js';
import { MIRROR_PROOF_HEADER, mirrorProofHeader, spendMirrorProof, verifyMirrorProof } from '../src/mirror-proof.js';
import { ProofMemory } from '../src/proof-memory.js';

const NOW = 1_800_000_000_000;
const F = '127.0.0.1:4001';
const HUB = '127.0.0.1:4000';
const claim = { serverId: F, to: HUB, timestamp: NOW, principal: 'token:abc' };
const headers = (value: string) => ({ [MIRROR_PROOF_HEADER]: value });
const decode = (value: string) => JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as Record<string, unknown>;
const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('mirror proofs', () => {
  it('prove the member and the principal of the client mirrored, to the hub they name', () => {
    const value = mirrorProofHeader('s3cret', 'c1', claim);
    expect(verifyMirrorProof(headers(value), ['other', 's3cret'], 'c1', HUB, NOW + 1000)).toEqual({ serverId: F, principal: 'token:abc' });
    const { principal: _p, ...bare } = claim;
    expect(verifyMirrorProof(headers(mirrorProofHeader('s3cret', 'c1', bare)), ['s3cret'], 'c1', HUB, NOW)).toEqual({ serverId: F });
  });

  it('prove nothing under another secret or cluster, at another hub, or out of the time window', () => {
    const value = mirrorProofHeader('s3cret', 'c1', claim);
    expect(verifyMirrorProof(headers(value), ['wrong'], 'c1', HUB, NOW)).toBeUndefined();
    expect(verifyMirrorProof(headers(value), [], 'c1', HUB, NOW)).toBeUndefined();
    expect(verifyMirrorProof(headers(value), ['s3cret'], 'c2', HUB, NOW)).toBeUndefined();
    expect(verifyMirrorProof(headers(value), ['s3cret'], 'c1', '127.0.0.1:4002', NOW)).toBeUndefined();
    expect(verifyMirrorProof(headers(value), ['s3cret'], 'c1', HUB, NOW + 5 * 60_000 + 1)).toBeUndefined();
    expect(verifyMirrorProof(headers(value), ['s3cret'], 'c1', HUB, NOW - 5 * 60_000 - 1)).toBeUndefined();
  });

  it('cannot be changed: another principal, member or hub breaks the proof', () => {
    const value = decode(mirrorProofHeader('s3cret', 'c1', claim));
    for (const change of [{ principal: 'token:evil' }, { principal: undefined }, { serverId: '127.0.0.1:4002' }, { timestamp: NOW + 1 }]) {
      expect(verifyMirrorProof(headers(encode({ ...value, ...change })), ['s3cret'], 'c1', HUB, NOW), JSON.stringify(change)).toBeUndefined();
    }
  });

  it('a hello proof is no mirror proof', () => {
    const proof = helloProof('s3cret', 'c1', F, NOW, HUB);
    expect(verifyMirrorProof(headers(encode({ serverId: F, to: HUB, timestamp: NOW, proof })), ['s3cret'], 'c1', HUB, NOW)).toBeUndefined();
  });

  it('refuses malformed and oversized headers without throwing', () => {
    for (const value of ['', 'not base64 at all', encode('a string'), encode({ serverId: 1 }), encode({ ...claim, proof: 7 }), 'x'.repeat(5000)]) {
      expect(verifyMirrorProof(headers(value), ['s3cret'], 'c1', HUB, NOW)).toBeUndefined();
    }
    expect(verifyMirrorProof({}, ['s3cret'], 'c1', HUB, NOW)).toBeUndefined();
    expect(verifyMirrorProof({ [MIRROR_PROOF_HEADER]: ['a', 'b'] }, ['s3cret'], 'c1', HUB, NOW)).toBeUndefined();
  });

  it('are accepted once: the same header proves nothing again within its window, a fresh one does', () => {
    const memory = new ProofMemory();
    const value = mirrorProofHeader('s3cret', 'c1', claim);
    expect(spendMirrorProof(headers(value), ['s3cret'], 'c1', HUB, NOW, memory)).toEqual({ peer: { serverId: F, principal: 'token:abc' } });
    expect(spendMirrorProof(headers(value), ['s3cret'], 'c1', HUB, NOW + 60_000, memory)).toEqual({ refused: 'replayed', serverId: F });
    // The next connection of the same mirror carries a later timestamp, hence another proof.
    const next = mirrorProofHeader('s3cret', 'c1', { ...claim, timestamp: NOW + 1 });
    expect(spendMirrorProof(headers(next), ['s3cret'], 'c1', HUB, NOW + 60_000, memory)).toEqual({ peer: { serverId: F, principal: 'token:abc' } });
    // Remembered until the window of each ends, then out of the window anyway.
    expect(memory.size).toBe(2);
    expect(spendMirrorProof(headers(value), ['s3cret'], 'c1', HUB, NOW + 5 * 60_000 + 1, memory)).toBeUndefined();
  });

  it('remember nothing that proves nothing, and refuse a valid proof while the memory is full', () => {
    const memory = new ProofMemory(1);
    const forged = encode({ ...decode(mirrorProofHeader('wrong', 'c1', claim)) });
    expect(spendMirrorProof(headers(forged), ['s3cret'], 'c1', HUB, NOW, memory)).toBeUndefined();
    expect(memory.size).toBe(0);
    expect(spendMirrorProof(headers(mirrorProofHeader('s3cret', 'c1', claim)), ['s3cret'], 'c1', HUB, NOW, memory)).toHaveProperty('peer');
    const other = mirrorProofHeader('s3cret', 'c1', { ...claim, timestamp: NOW + 1 });
    expect(spendMirrorProof(headers(other), ['s3cret'], 'c1', HUB, NOW, memory)).toEqual({ refused: 'full', serverId: F });
  });
});
