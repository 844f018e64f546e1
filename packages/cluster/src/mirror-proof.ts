/**
 * A mirror link's proof that it comes from a member of the cluster (SPEC §10 *beyond*). A follower
 * mirrors each local client into the hub over an ordinary MDP websocket; under an auth policy the
 * hub must tell such a link from any client that puts a proxy marker in its metadata, or anyone
 * could register a member's mirrored ids (and receive the calls meant for its clients). So the
 * upgrade carries one header, `x-mdp-cluster-mirror`: base64url of
 *
 *   {serverId, to, timestamp, principal?, proof}
 *
 * where `proof` is an HMAC under the cluster secret of a label, the cluster id and the other
 * fields. `to` names the hub (a proof is good only there), `timestamp` bounds it to the hello's
 * window, and `principal` is who the mirrored client belongs to on its member, so that the id stays
 * that principal's on the hub. The label keeps a mirror proof from passing for a hello proof, and
 * the other way round. The hub accepts each proof once (`spendMirrorProof`, proof-memory.ts): one
 * seen on the wire cannot open a second link.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import type { HeaderMap } from '@mdp/core';
import { HELLO_MAX_AGE_MS } from './membership.js';
import type { ProofMemory, ProofVerdict } from './proof-memory.js';

export const MIRROR_PROOF_HEADER = 'x-mdp-cluster-mirror';

/** Longest header value read, characters: a claim is a few hundred. */
const MAX_HEADER_CHARS = 4096;

/** Who a verified mirror link is. */
export interface MirrorPeer {
  /** The member it proved it comes from. */
  readonly serverId: string;
  /** Who the client it mirrors belongs to on that member (under its auth policy), if anyone. */
  readonly principal?: string;
}

interface Claim extends MirrorPeer {
  readonly to: string;
  readonly timestamp: number;
}

const ClaimSchema = v.object({
  serverId: v.string(),
  to: v.string(),
  timestamp: v.number(),
  principal: v.optional(v.string()),
  proof: v.string(),
});

function proofOf(secret: string, clusterId: string, claim: Claim): string {
  return createHmac('sha256', secret)
    .update(`mdp mirror link v1\n${clusterId}\n${claim.serverId}\n${claim.to}\n${claim.timestamp}\n${claim.principal ?? ''}`)
    .digest('base64url');
}

/** The header value a mirror of `claim.serverId` sends to the hub `claim.to`. */
export function mirrorProofHeader(secret: string, clusterId: string, claim: Claim): string {
  const body = { serverId: claim.serverId, to: claim.to, timestamp: claim.timestamp, ...(claim.principal !== undefined ? { principal: claim.principal } : {}) };
  return Buffer.from(JSON.stringify({ ...body, proof: proofOf(secret, clusterId, claim) }), 'utf8').toString('base64url');
}

/**
 * The mirror link an upgrade's headers prove, or `undefined`: no header, a malformed one, a proof
 * under none of `secrets`, meant for another hub than `self`, or older (or newer) than the hello
 * window at `now` (wall-clock ms). Pure: the same headers prove the same thing every time; the hub
 * itself accepts a proof once (`spendMirrorProof`).
 */
export function verifyMirrorProof(headers: HeaderMap, secrets: readonly string[], clusterId: string, self: string, now: number): MirrorPeer | undefined {
  return checkClaim(headers, secrets, clusterId, self, now)?.peer;
}

/** What a valid header proves, with its proof and the end of its window. */
function checkClaim(
  headers: HeaderMap,
  secrets: readonly string[],
  clusterId: string,
  self: string,
  now: number,
): { peer: MirrorPeer; proof: string; expiresAt: number } | undefined {
  const raw = headers[MIRROR_PROOF_HEADER];
  if (typeof raw !== 'string' || raw.length > MAX_HEADER_CHARS || secrets.length === 0) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = v.safeParse(ClaimSchema, json);
  if (!parsed.success) return undefined;
  const { proof, ...claim } = parsed.output;
  if (claim.to !== self || !(Math.abs(now - claim.timestamp) <= HELLO_MAX_AGE_MS)) return undefined;
  const actual = Buffer.from(proof);
  const proven = secrets.some((secret) => {
    const expected = Buffer.from(proofOf(secret, clusterId, claim));
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  });
  if (!proven) return undefined;
  const peer = claim.principal === undefined ? { serverId: claim.serverId } : { serverId: claim.serverId, principal: claim.principal };
  return { peer, proof, expiresAt: claim.timestamp + HELLO_MAX_AGE_MS };
}

/**
 * `verifyMirrorProof`, once per proof: a valid proof is remembered in `memory` until its window
 * ends, and proves nothing when presented again (`replayed`) or while the memory is full (`full`).
 * `refused` says why a valid proof proved nothing; a header that proves nothing at all gives neither.
 */
export function spendMirrorProof(
  headers: HeaderMap,
  secrets: readonly string[],
  clusterId: string,
  self: string,
  now: number,
  memory: ProofMemory,
): { readonly peer: MirrorPeer } | { readonly refused: Exclude<ProofVerdict, 'fresh'>; readonly serverId: string } | undefined {
  const checked = checkClaim(headers, secrets, clusterId, self, now);
  if (checked === undefined) return undefined;
  const verdict = memory.spend(checked.proof, checked.expiresAt, now);
  return verdict === 'fresh' ? { peer: checked.peer } : { refused: verdict, serverId: checked.peer.serverId };
}
