/**
 * Join rules (SPEC §10), the admission of members: who may join, as a pure transition
 * `step(state, event, now) → { state, effects, refusal }` in the manner of `election.ts`. The node
 * feeds in every hello a link receives and every metadata document discovery finds, and carries the
 * effects out (logs, a configuration error, a new member for the election, a dial). `now` is
 * wall-clock ms: hello timestamps come from other processes' clocks.
 *
 *   hello ─────▶ cluster secret proven (for us, recently)? ──no──▶ refused
 *   metadata ──▶ our own endpoint or id? ──▶ only a duplicate id is reported
 *            ──▶ no cluster control, or it describes another address ──▶ ignored
 *                      │
 *                      ▼
 *   cluster id, membership mode and fingerprint, static list ──differ──▶ refused
 *                      │
 *                      ▼
 *   endpoint ── invalid URL, or ours ─────────────────────────▶ refused
 *            ── id already held by another endpoint ──────────▶ refused, configuration error
 *            ── new or known ──▶ admitted ─┬─ found by discovery or a static member ─▶ member
 *                                          └─ it only dialled in ─────────────────────▶ observer
 *   admitted metadata ──▶ dial it; a leader holding quorum in it is reported (`leaderSeen`)
 *
 * With a cluster secret, metadata alone (which anyone can serve) makes no member: a peer found by
 * discovery is `awaiting` until a hello of its proves the secret, and `foreign` once either side
 * refused the other's hello for want of it (another user's server on the same port range).
 *
 *   found by discovery ──▶ awaiting ──┬─ its hello proves the secret ─────────────▶ member
 *                                     └─ a hello refused for the secret, either way ─▶ foreign
 *
 * A member stays one until `gone` (departures.ts: it left, or its address shows nobody is there);
 * discovery may find it again later, as a new member.
 *
 * Every refusal and ignored sighting is logged once per address and reason, not on every round.
 */
import type { ClusterHello, MetaDocument } from '@mdp/protocol';
import { normalizeTarget } from './meta-probe.js';
import {
  emptyDirectory,
  endpointKey,
  forget,
  isSelfUrl,
  observe,
  onHost,
  peerRefusal,
  validProof,
  withSelf,
  type Directory,
  type MemberEndpoints,
  type MemberEntry,
  type Membership,
  type PeerClaim,
} from './membership.js';

/** A configuration problem found at run time. */
export interface ClusterConfigError {
  readonly kind: 'duplicate-server-id';
  readonly serverId: string;
  /** Where the id was seen first (or this server, for our own id). */
  readonly firstUrl: string;
  /** The second endpoint claiming it. */
  readonly secondUrl: string;
}

export interface AdmissionConfig {
  readonly selfId: string;
  readonly clusterId: string;
  readonly membership: Membership;
  readonly fingerprint: string;
  /** Accepted cluster secrets; empty for none (then hellos need no proof). */
  readonly secrets: readonly string[];
  /** Base URL of the first port of the discovery range (the port clients know); its holder is watched. */
  readonly defaultUrl?: string;
}

export interface AdmissionState {
  readonly config: AdmissionConfig;
  readonly directory: Directory;
  /** Peers that count as members (static ones from the start). Shrinks only by `gone`. */
  readonly members: ReadonlySet<string>;
  /** With a secret: found by discovery, waiting for a hello that proves it. */
  readonly awaiting: ReadonlySet<string>;
  /** With a secret: peers whose hello proved it. */
  readonly proven: ReadonlySet<string>;
  /** With a secret: peers refused for want of it (either direction). */
  readonly foreign: ReadonlySet<string>;
  /** Members that are gone for good. */
  readonly departed: ReadonlySet<string>;
  /** The server id that last answered at `config.defaultUrl`, if any did. */
  readonly defaultHolder: string | undefined;
  /** Conditions already logged, so that each is logged once. */
  readonly reported: ReadonlySet<string>;
}

export type AdmissionEvent =
  /** The node listens at `clusterUrl`. */
  | { readonly type: 'start'; readonly clusterUrl: string }
  /** A peer's hello arrived on a control link (either direction). */
  | { readonly type: 'hello'; readonly hello: ClusterHello }
  /** Discovery read `meta` from `url`. */
  | { readonly type: 'meta'; readonly meta: MetaDocument; readonly url: string }
  /** A peer refused our hello for `reason`. */
  | { readonly type: 'refusedBy'; readonly url: string; readonly reason: string }
  /** Member `id` is gone for good (departures.ts). */
  | { readonly type: 'gone'; readonly id: string };

export type AdmissionEffect =
  | { readonly type: 'log'; readonly level: 'warn' | 'error'; readonly event: string; readonly fields: Record<string, unknown> }
  | { readonly type: 'configError'; readonly error: ClusterConfigError }
  /** `id` is a member from now on: the election counts it. */
  | { readonly type: 'member'; readonly id: string }
  | { readonly type: 'dial'; readonly url: string; readonly id: string }
  /** Discovery saw a leader that holds a quorum. */
  | { readonly type: 'leaderSeen' };

export interface AdmissionResult {
  readonly state: AdmissionState;
  readonly effects: readonly AdmissionEffect[];
  /** Why a hello is refused (the link closes with it); undefined when admitted or not a hello. */
  readonly refusal: string | undefined;
}

/** The refusal of a hello that does not prove the cluster secret (also what the refused side reads). */
export const SECRET_REFUSAL = 'cluster secret not proven';

export function initialAdmission(config: AdmissionConfig): AdmissionState {
  const members = config.membership.mode === 'static' ? config.membership.members.filter((id) => id !== config.selfId) : [];
  const none = new Set<string>();
  return {
    config,
    directory: emptyDirectory(config.selfId),
    members: new Set(members),
    awaiting: none,
    proven: none,
    foreign: none,
    departed: none,
    defaultHolder: undefined,
    reported: none,
  };
}

export function step(state: AdmissionState, event: AdmissionEvent, now: number): AdmissionResult {
  const fx: AdmissionEffect[] = [];
  const s = { state, fx };
  const refusal = apply(s, event, now);
  return { state: s.state, effects: fx, refusal };
}

/** The state being stepped and the effects so far. */
interface Step {
  state: AdmissionState;
  readonly fx: AdmissionEffect[];
}

function apply(s: Step, event: AdmissionEvent, now: number): string | undefined {
  switch (event.type) {
    case 'start':
      s.state = { ...s.state, directory: withSelf(s.state.directory, event.clusterUrl) };
      return undefined;
    case 'hello':
      return onHello(s, event.hello, now);
    case 'meta':
      onMeta(s, event.meta, event.url);
      return undefined;
    case 'refusedBy':
      once(s, `refused-by|${event.url}|${event.reason}`, 'cluster.refused_by_peer', { url: event.url, reason: event.reason });
      if (event.reason === SECRET_REFUSAL) {
        const key = endpointKey(event.url);
        const entry = [...s.state.directory.entries.values()].find((e) => e.key === key);
        if (entry) markForeign(s, entry.id);
      }
      return undefined;
    case 'gone':
      onGone(s, event.id);
      return undefined;
  }
}

/** A peer that cannot prove our secret, or refused ours, is not one of ours (unless it proved it before). */
function markForeign(s: Step, id: string): void {
  const { state } = s;
  if (state.proven.has(id) || state.members.has(id)) return;
  s.state = { ...state, awaiting: without(state.awaiting, id), foreign: with_(state.foreign, id) };
}

function onGone(s: Step, id: string): void {
  const { state } = s;
  if (!state.members.has(id)) return;
  s.state = {
    ...state,
    directory: forget(state.directory, id),
    members: without(state.members, id),
    awaiting: without(state.awaiting, id),
    proven: without(state.proven, id),
    departed: with_(state.departed, id),
  };
}

function with_(set: ReadonlySet<string>, id: string): ReadonlySet<string> {
  return set.has(id) ? set : new Set([...set, id]);
}

function without(set: ReadonlySet<string>, id: string): ReadonlySet<string> {
  if (!set.has(id)) return set;
  const next = new Set(set);
  next.delete(id);
  return next;
}

function onHello(s: Step, hello: ClusterHello, now: number): string | undefined {
  const { secrets, selfId } = s.state.config;
  if (secrets.length > 0 && !secrets.some((secret) => validProof(secret, hello, selfId, now))) {
    once(s, `secret|${hello.clusterUrl}`, 'cluster.peer_refused', { peer: hello.serverId, url: hello.clusterUrl, reason: 'no valid cluster secret proof' });
    markForeign(s, hello.serverId);
    return SECRET_REFUSAL;
  }
  const refusal = admit(s, hello, { clusterUrl: hello.clusterUrl, wsUrl: hello.wsUrl }, 'hello');
  if (refusal === undefined && secrets.length > 0) {
    const { state } = s;
    s.state = { ...state, proven: with_(state.proven, hello.serverId), foreign: without(state.foreign, hello.serverId) };
    if (state.awaiting.has(hello.serverId)) makeMember(s, hello.serverId);
  }
  return refusal;
}

function onMeta(s: Step, meta: MetaDocument, url: string): void {
  const clusterUrl = meta.endpoints.cluster;
  const { defaultUrl } = s.state.config;
  if (defaultUrl !== undefined && endpointKey(url) === endpointKey(defaultUrl) && s.state.defaultHolder !== meta.serverId) {
    s.state = { ...s.state, defaultHolder: meta.serverId };
  }
  if (meta.serverId === s.state.config.selfId || isSelfUrl(s.state.directory, clusterUrl)) {
    // Our own document (the range holds our port too) tells nothing, unless another server has our id.
    const { sighting } = observe(s.state.directory, meta.serverId, { clusterUrl });
    if (sighting.kind === 'duplicate') duplicate(s, meta.serverId, sighting.firstUrl, clusterUrl);
    return;
  }
  if (!meta.features.clusterControl) return;
  // A document must describe the address it came from. One naming another address's endpoint
  // would let any port of the range speak for that server (and steer mirrors to itself). A member
  // serving a second port (the default one, while it leads) names its own address there: no news.
  if (endpointKey(url) !== endpointKey(clusterUrl)) {
    if (entryOf(s.state, meta.serverId)?.key === endpointKey(clusterUrl)) return;
    once(s, `elsewhere|${url}|${clusterUrl}`, 'cluster.meta_elsewhere', { url, clusterUrl, reason: 'metadata names another address; ignored' });
    return;
  }
  const claim: PeerClaim = {
    serverId: meta.serverId,
    clusterId: meta.cluster.id,
    membershipMode: meta.cluster.membershipMode,
    membershipFingerprint: meta.cluster.membershipFingerprint,
  };
  if (admit(s, claim, { clusterUrl, wsUrl: meta.endpoints.ws, metaUrl: url }, 'discovery')) return;
  if (meta.cluster.role === 'leader' && meta.cluster.hasQuorum) s.fx.push({ type: 'leaderSeen' });
  s.fx.push({ type: 'dial', url: clusterUrl, id: meta.serverId });
}

/** Whether a peer (from a hello or its metadata) may join; records its endpoint. */
function admit(s: Step, claim: PeerClaim, endpoints: MemberEndpoints, source: 'hello' | 'discovery'): string | undefined {
  const { config } = s.state;
  const refusal = peerRefusal(claim, config);
  if (refusal) {
    once(s, `refuse|${endpoints.clusterUrl}|${refusal}`, 'cluster.peer_refused', { peer: claim.serverId, url: endpoints.clusterUrl, reason: refusal, source });
    return refusal;
  }
  const { directory, sighting } = observe(s.state.directory, claim.serverId, endpoints);
  s.state = { ...s.state, directory };
  switch (sighting.kind) {
    case 'invalid':
      return 'invalid cluster URL';
    case 'self':
      return 'that is this server';
    case 'duplicate':
      duplicate(s, claim.serverId, sighting.firstUrl, endpoints.clusterUrl);
      return `duplicate server id ${JSON.stringify(claim.serverId)}`;
    case 'new':
    case 'known':
      // Discovery (or the static list) makes members; a peer that only dialled in is an observer.
      // With a secret, only once it proved the secret too.
      if (source === 'discovery' && !s.state.members.has(claim.serverId)) {
        const { state } = s;
        if (state.config.secrets.length === 0 || state.proven.has(claim.serverId)) makeMember(s, claim.serverId);
        else if (!state.foreign.has(claim.serverId)) s.state = { ...state, awaiting: with_(state.awaiting, claim.serverId) };
      }
      return undefined;
  }
}

function makeMember(s: Step, id: string): void {
  const { state } = s;
  s.state = { ...state, members: with_(state.members, id), awaiting: without(state.awaiting, id) };
  s.fx.push({ type: 'member', id });
}

function duplicate(s: Step, serverId: string, firstUrl: string, secondUrl: string): void {
  const error: ClusterConfigError = { kind: 'duplicate-server-id', serverId, firstUrl, secondUrl };
  if (
    !once(
      s,
      `dup|${serverId}|${secondUrl}`,
      'cluster.duplicate_server_id',
      { ...error, message: 'a server id is used by two endpoints; give each server its own id' },
      'error',
    )
  )
    return;
  s.fx.push({ type: 'configError', error });
}

/** Log `event` unless `key` was logged before; true when it was logged now. */
function once(s: Step, key: string, event: string, fields: Record<string, unknown>, level: 'warn' | 'error' = 'warn'): boolean {
  if (s.state.reported.has(key)) return false;
  s.state = { ...s.state, reported: new Set([...s.state.reported, key]) };
  s.fx.push({ type: 'log', level, event, fields });
  return true;
}

// ---------------------------------------------------------------------------------------------
// Views

/** Whether discovery found peers whose hello has yet to prove (or fail to prove) the cluster secret. */
export function awaitingProof(state: AdmissionState): boolean {
  return state.awaiting.size > 0;
}

/**
 * Whether the default port (`config.defaultUrl`), when free, may be served by this node while it
 * leads: there is one, and nobody was seen holding it, or the last holder was this node or a member
 * (present or departed) of this cluster. A port another user's server held is left alone: its
 * clients would otherwise register here.
 */
export function mayServeDefaultPort(state: AdmissionState): boolean {
  if (state.config.defaultUrl === undefined) return false;
  const holder = state.defaultHolder;
  return holder === undefined || holder === state.config.selfId || state.members.has(holder) || state.departed.has(holder);
}

/** Whether `id` is this server's or a member's (present or departed): the prefixes of mirrored client ids. */
export function isClusterServerId(state: AdmissionState, id: string): boolean {
  return id === state.config.selfId || state.members.has(id) || state.departed.has(id);
}

/**
 * Whether this node has heard from everyone discovery found so far (readiness.ts): every member
 * whose endpoint is known has a link up (`linked`), and no peer is still to show whether it proves
 * the cluster secret.
 */
export function allLinked(state: AdmissionState, linked: (id: string) => boolean): boolean {
  return !awaitingProof(state) && memberEntries(state).every((entry) => linked(entry.id));
}

/**
 * Members whose departure may be probed (departures.ts): no link up, and an address on `host` (the
 * discovery host), where a refused connection means that nothing listens.
 */
export function unlinkedOnHost(state: AdmissionState, linked: (id: string) => boolean, host: string): MemberEntry[] {
  return memberEntries(state).filter((entry) => !linked(entry.id) && entry.metaUrl !== undefined && onHost(entry.metaUrl, host));
}

/** Members whose endpoint is known (static members not yet seen anywhere are not). */
export function memberEntries(state: AdmissionState): MemberEntry[] {
  return [...state.directory.entries.values()].filter((entry) => state.members.has(entry.id));
}

export function entryOf(state: AdmissionState, id: string): MemberEntry | undefined {
  return state.directory.entries.get(id);
}

/** Whether a probed address is this server's or a member's endpoint. */
export function isMemberAddress(state: AdmissionState, url: string): boolean {
  let base: string;
  try {
    base = normalizeTarget(url);
  } catch {
    return false;
  }
  if (isSelfUrl(state.directory, base)) return true;
  const key = endpointKey(base);
  return memberEntries(state).some((entry) => entry.key === key);
}

/**
 * Discovery rounds after which a node that knows peers stands for election even if some non-member
 * address never answered in time (10 rounds: 20 s at the default interval).
 */
export const VIEW_PATIENCE_ROUNDS = 10;

/**
 * Whether a finished discovery round leaves this node's view of the members whole (SPEC §10, the
 * election's `discoveryRound`), and which timed-out addresses are not members. A silent address
 * that is a member (a frozen peer), or our own (a busy event loop), hides nobody new. With a static
 * list the list is the whole truth. After enough rounds a port that never answers (a hung process)
 * no longer keeps a node that knows peers from standing; a node that knows nobody never elects
 * itself alone on patience.
 */
export function roundView(
  state: AdmissionState,
  round: number,
  timedOut: readonly string[],
  knowsPeers: boolean,
): { readonly clean: boolean; readonly unknown: readonly string[] } {
  const unknown = timedOut.filter((url) => !isMemberAddress(state, url));
  const clean = state.config.membership.mode === 'static' || unknown.length === 0 || (knowsPeers && round >= VIEW_PATIENCE_ROUNDS);
  return { clean, unknown };
}
