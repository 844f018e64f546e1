/**
 * Membership rules (SPEC §10): the fingerprint, who may join, and the directory of members and
 * their endpoints, which catches a server id seen at a second endpoint.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { urlHost } from '@mdp/core';
import type { MembershipMode } from '@mdp/protocol';
import { normalizeTarget } from './meta-probe.js';

export type Membership = { readonly mode: 'dynamic' } | { readonly mode: 'static'; readonly members: readonly string[] };

/** `dynamic`, or the JSON array of the sorted distinct static ids. */
export function membershipFingerprint(membership: Membership): string {
  if (membership.mode === 'dynamic') return 'dynamic';
  return JSON.stringify([...new Set(membership.members)].sort());
}

/** What a peer says about itself, from its hello or its metadata document. */
export interface PeerClaim {
  readonly serverId: string;
  readonly clusterId: string;
  readonly membershipMode: MembershipMode;
  readonly membershipFingerprint: string;
}

export interface MembershipRules {
  readonly selfId: string;
  readonly clusterId: string;
  readonly membership: Membership;
  readonly fingerprint: string;
}

/** Why a peer may not join us, or undefined when it may. */
export function peerRefusal(claim: PeerClaim, rules: MembershipRules): string | undefined {
  if (claim.clusterId !== rules.clusterId) return `cluster id ${JSON.stringify(claim.clusterId)} is not ${JSON.stringify(rules.clusterId)}`;
  if (claim.membershipMode !== rules.membership.mode) {
    return `membership mode ${claim.membershipMode} is not ${rules.membership.mode}`;
  }
  if (claim.membershipFingerprint !== rules.fingerprint) return 'membership fingerprint differs';
  if (rules.membership.mode === 'static' && !rules.membership.members.includes(claim.serverId)) {
    return `server id ${JSON.stringify(claim.serverId)} is not a static member`;
  }
  return undefined;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]', '0.0.0.0', '::', '[::]']);

/**
 * `host:port` of an endpoint URL, with every loopback spelling folded into one, so that the same
 * server reached as `localhost` and as `127.0.0.1` is one endpoint. Undefined for a bad URL.
 */
export function endpointKey(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    const port = parsed.port || (parsed.protocol === 'https:' || parsed.protocol === 'wss:' ? '443' : '80');
    return `${hostKey(parsed.hostname)}:${port}`;
  } catch {
    return undefined;
  }
}

/** A host name with every loopback spelling folded into `loopback`. */
export function hostKey(hostname: string): string {
  const host = hostname.toLowerCase();
  return LOOPBACK.has(host) || host.startsWith('127.') ? 'loopback' : host;
}

/** Whether `url` names an address on `host` (loopback spellings are one host). */
export function onHost(url: string, host: string): boolean {
  try {
    return hostKey(new URL(url).hostname) === hostKey(urlHost(host));
  } catch {
    return false;
  }
}

export interface MemberEndpoints {
  readonly clusterUrl: string;
  readonly wsUrl?: string;
  readonly metaUrl?: string;
}

export interface MemberEntry extends MemberEndpoints {
  readonly id: string;
  readonly key: string;
}

export type Sighting =
  | { readonly kind: 'self' }
  | { readonly kind: 'new'; readonly entry: MemberEntry }
  | { readonly kind: 'known'; readonly entry: MemberEntry }
  /** The id is already held by another endpoint (or is our own id at another endpoint). */
  | { readonly kind: 'duplicate'; readonly firstUrl: string }
  | { readonly kind: 'invalid' };

/** Peers and where they live. The first endpoint seen for an id keeps it until the member is gone. */
export interface Directory {
  readonly selfId: string;
  readonly selfUrl: string | undefined;
  readonly selfKey: string | undefined;
  readonly entries: ReadonlyMap<string, MemberEntry>;
}

export function emptyDirectory(selfId: string): Directory {
  return { selfId, selfUrl: undefined, selfKey: undefined, entries: new Map() };
}

/** The directory once this server knows its own control URL. */
export function withSelf(directory: Directory, clusterUrl: string): Directory {
  return { ...directory, selfUrl: clusterUrl, selfKey: endpointKey(clusterUrl) };
}

/** Record a sighting of `id` at `endpoints`; the directory is unchanged unless the sighting is new or known. */
export function observe(directory: Directory, id: string, endpoints: MemberEndpoints): { directory: Directory; sighting: Sighting } {
  const key = endpointKey(endpoints.clusterUrl);
  if (key === undefined) return { directory, sighting: { kind: 'invalid' } };
  if (id === directory.selfId) {
    const sighting: Sighting = key === directory.selfKey ? { kind: 'self' } : { kind: 'duplicate', firstUrl: directory.selfUrl ?? '(this server)' };
    return { directory, sighting };
  }
  const known = directory.entries.get(id);
  if (known && known.key !== key) return { directory, sighting: { kind: 'duplicate', firstUrl: known.clusterUrl } };
  // Fill in what an earlier, thinner sighting (a hello has no meta URL) did not carry.
  const entry: MemberEntry = known
    ? { ...known, wsUrl: endpoints.wsUrl ?? known.wsUrl, metaUrl: endpoints.metaUrl ?? known.metaUrl }
    : { id, key, ...endpoints };
  const entries = new Map(directory.entries);
  entries.set(id, entry);
  return { directory: { ...directory, entries }, sighting: known ? { kind: 'known', entry } : { kind: 'new', entry } };
}

/** The directory without `id`: a member gone for good may come back anywhere. */
export function forget(directory: Directory, id: string): Directory {
  if (!directory.entries.has(id)) return directory;
  const entries = new Map(directory.entries);
  entries.delete(id);
  return { ...directory, entries };
}

/** Whether this endpoint is ours. */
export function isSelfUrl(directory: Directory, url: string): boolean {
  const key = endpointKey(url);
  return key !== undefined && key === directory.selfKey;
}

/** Whether a static member id names an address that can be probed (`host:port`). */
export function isProbeable(id: string): boolean {
  try {
    normalizeTarget(id);
    return /:\d+$/.test(id);
  } catch {
    return false;
  }
}

/**
 * HMAC-SHA256 (base64url) under the shared cluster secret of cluster id, server id, timestamp and the
 * id of the server the hello is for. Naming the addressee means a hello cannot be replayed to
 * another member: an address that is dialled (any port of the discovery range may answer) learns
 * only a proof meant for itself.
 */
export function helloProof(secret: string, clusterId: string, serverId: string, timestamp: number, to: string): string {
  return createHmac('sha256', secret).update(`${clusterId}\n${serverId}\n${timestamp}\n${to}`).digest('base64url');
}

/** Largest distance between a hello's timestamp and this clock, ms: an old hello is not replayed. */
export const HELLO_MAX_AGE_MS = 5 * 60_000;

/** Whether a hello proves the secret, was meant for `self`, and is recent; `now` is wall-clock ms. */
export function validProof(
  secret: string,
  hello: { clusterId: string; serverId: string; timestamp: number; auth?: string },
  self: string,
  now: number,
): boolean {
  if (typeof hello.auth !== 'string' || !(Math.abs(now - hello.timestamp) <= HELLO_MAX_AGE_MS)) return false;
  const expected = Buffer.from(helloProof(secret, hello.clusterId, hello.serverId, hello.timestamp, self));
  const actual = Buffer.from(hello.auth);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
