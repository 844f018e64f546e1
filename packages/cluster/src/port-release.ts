/**
 * The request with which a server asks a member of its cluster to give back the port it holds as a
 * second port (SPEC §10 *beyond*; the default port, served by a leader after its owner went away).
 * It is a POST to the holder's own port, at `PORT_RELEASE_PATH`, with the JSON body
 *
 *   {clusterId, serverId, to, port, timestamp, proof?}
 *
 * where `proof` is an HMAC under the cluster secret of a label and the other fields, as a hello
 * proves it: `to` names the holder (a proof is good only there), `port` the one port it asks for,
 * and `timestamp` (wall-clock ms) bounds its replay to `RELEASE_MAX_AGE_MS`; the holder also keeps
 * the proofs it acted on that long, so a copied request never makes it let go a second time. The
 * label keeps a release proof from passing for a hello or mirror proof, and the other way round.
 * In an open cluster (no secret), which anyone may join, no proof is asked for, only the cluster id.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import { parserFor } from '@mdp/protocol';

/** Where the holder takes the request (POST, JSON body; a request with an `Origin` is refused). */
export const PORT_RELEASE_PATH = '/mdp/cluster/release-port';

/**
 * Largest distance between a request's timestamp and the holder's clock, ms (30 s). Both ends run
 * on the one machine whose port it is, so their clocks agree; the window only has to cover the
 * request's trip.
 */
export const RELEASE_MAX_AGE_MS = 30_000;

/** Largest request body read, bytes: a request is a few hundred. */
export const RELEASE_MAX_BODY_BYTES = 4096;

const MAX_ID_CHARS = 512;

const ReleaseSchema = v.object({
  clusterId: v.pipe(v.string(), v.maxLength(MAX_ID_CHARS)),
  serverId: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_ID_CHARS)),
  to: v.pipe(v.string(), v.maxLength(MAX_ID_CHARS)),
  port: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)),
  timestamp: v.pipe(v.number(), v.finite()),
  proof: v.optional(v.pipe(v.string(), v.maxLength(128))),
});

/** The body of a release request. */
export type PortReleaseRequest = v.InferOutput<typeof ReleaseSchema>;

const parseRelease = parserFor(ReleaseSchema);

/** What a release asks, before it is proven. */
export interface PortReleaseClaim {
  /** The server that wants the port (the id it will have once it listens there). */
  readonly serverId: string;
  /** The holder it asks. */
  readonly to: string;
  readonly port: number;
  /** Wall-clock ms. */
  readonly timestamp: number;
}

function proofOf(secret: string, clusterId: string, claim: PortReleaseClaim): string {
  return createHmac('sha256', secret)
    .update(`mdp port release v1\n${clusterId}\n${claim.serverId}\n${claim.to}\n${claim.port}\n${claim.timestamp}`)
    .digest('base64url');
}

/** The request body of `claim` in cluster `clusterId`, proving `secret` (none in an open cluster). */
export function portReleaseRequest(secret: string | undefined, clusterId: string, claim: PortReleaseClaim): PortReleaseRequest {
  const body = { clusterId, serverId: claim.serverId, to: claim.to, port: claim.port, timestamp: claim.timestamp };
  return secret === undefined ? body : { ...body, proof: proofOf(secret, clusterId, claim) };
}

/** What the holder makes of a request. */
export type PortReleaseCheck =
  /** `key` names this request among those acted on (its proof): a replay carries the same key. */
  | { readonly ok: true; readonly claim: PortReleaseClaim; readonly key: string }
  /** 400: not a release request; 403: not proven, or not for this server or this time. */
  | { readonly ok: false; readonly status: 400 | 403; readonly reason: string };

/** What the holder checks a request against. */
export interface PortReleaseRules {
  /** Accepted cluster secrets; empty for an open cluster (no proof asked). */
  readonly secrets: readonly string[];
  readonly clusterId: string;
  /** The holder's server id. */
  readonly self: string;
  /** Wall-clock ms. */
  readonly now: number;
}

/**
 * Whether `body` is a release request proven for this server: its shape, the cluster id, the
 * addressee, the time window and (with secrets) the proof under one of them. Which port it names is
 * the holder's business: it lets go only of a port it holds as a second port.
 */
export function checkPortRelease(body: unknown, rules: PortReleaseRules): PortReleaseCheck {
  const parsed = parseRelease(body);
  if (!parsed.ok) return { ok: false, status: 400, reason: `not a port release request: ${parsed.error}` };
  const { proof, clusterId, ...claim } = parsed.value;
  const refuse = (reason: string): PortReleaseCheck => ({ ok: false, status: 403, reason });
  if (clusterId !== rules.clusterId) return refuse(`cluster id ${JSON.stringify(clusterId)} is not ${JSON.stringify(rules.clusterId)}`);
  if (claim.to !== rules.self) return refuse('the request is meant for another server');
  if (!(Math.abs(rules.now - claim.timestamp) <= RELEASE_MAX_AGE_MS)) return refuse('the request is too old (or from the future)');
  if (rules.secrets.length === 0) return { ok: true, claim, key: `${claim.serverId}\n${claim.timestamp}\n${claim.port}` };
  if (proof === undefined) return refuse('cluster secret not proven');
  const actual = Buffer.from(proof);
  const proven = rules.secrets.some((secret) => {
    const expected = Buffer.from(proofOf(secret, clusterId, claim));
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  });
  return proven ? { ok: true, claim, key: proof } : refuse('cluster secret not proven');
}
