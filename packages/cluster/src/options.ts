/** Options of `createClusterNode`, their defaults (SPEC §10) and validation. */
import type { InflightBudget, Logger, Router, Tenancy } from '@mdp/core';
import { DEFAULT_MAX_MESSAGE_BYTES, silentLogger, urlHost } from '@mdp/core';
import type { AdmissionConfig } from './join-rules.js';
import { systemClock, type Clock } from './clock.js';
import { DISCOVERY_DEFAULTS, type DiscoveryOptions } from './discovery.js';
import type { ElectionConfig } from './election.js';
import { membershipFingerprint, type Membership } from './membership.js';
import { BACKLOG_DEFAULTS, type BacklogLimits } from './backlog.js';
import { DEFAULT_MAX_REMEMBERED_PROOFS } from './proof-memory.js';
import type { PeerTlsSource } from './tls.js';

/**
 * - `standalone`: no discovery, no election; always leader of a cluster of one, term 0. With an
 *   `upstreamUrl` it still mirrors its clients into that hub.
 * - `auto`: discovers peers, takes part in elections; while another node leads, mirrors its
 *   clients into the leader (or into `upstreamUrl` when given).
 * - `proxy-required`: like `auto`, but never stands for election: it always mirrors into an
 *   upstream (the leader, or `upstreamUrl`). It still votes.
 */
export type ClusterMode = 'standalone' | 'auto' | 'proxy-required';
export const CLUSTER_MODES: readonly ClusterMode[] = ['standalone', 'auto', 'proxy-required'];

export interface ClusterNodeOptions {
  readonly router: Router;
  /**
   * Which clients a caller of the host contract sees (`createTenancy` of `@mdp/core`): the leader
   * applies it to the requests members forward, which carry their caller (`viewer`). Default every
   * client to everyone (`SHARED_TENANCY`). Every member should be given the same.
   */
  readonly tenancy?: Tenancy;
  /** This server's id, `<host>:<port>` by default in apps/server. Unique within the cluster. */
  readonly serverId: string;
  /** Logical cluster; peers with another id are refused. */
  readonly clusterId: string;
  /** Default dynamic. */
  readonly membership?: Membership;
  /** Default auto. */
  readonly mode?: ClusterMode;
  /** Explicit hub to mirror into (URL, HOST:PORT or PORT), instead of the elected leader. */
  readonly upstreamUrl?: string;
  readonly discovery?: Partial<DiscoveryOptions>;
  /** Leader heartbeat period, ms. Default 1000. */
  readonly heartbeatIntervalMs?: number;
  /** Follower lease on a leader per heartbeat, ms. Default 4000. */
  readonly leaseDurationMs?: number;
  /** Random election time-out bounds, ms. Default 4500 and 7000. */
  readonly electionTimeoutMinMs?: number;
  readonly electionTimeoutMaxMs?: number;
  /** After start, refuse votes this long (and until discovery settled), ms. Default 2 × heartbeat, or 0 with a `stateFile`. */
  readonly voteGraceMs?: number;
  /** Gap between survivors' pre-votes after a leader's link closes, ms. Default heartbeat / 4. */
  readonly failoverStepMs?: number;
  /** File that keeps term and vote across restarts. Default none (then only the grace protects). */
  readonly stateFile?: string;
  /**
   * Time a follower's host request waits for a leader (during an election) and for its answer, ms;
   * a call waits at least its own time-out plus a second. Default 20000.
   */
  readonly rpcTimeoutMs?: number;
  /** Reconnect back-off of mirror links, ms. Default 100 to 5000. */
  readonly proxyReconnectMinMs?: number;
  readonly proxyReconnectMaxMs?: number;
  /** Largest control or mirror frame, bytes. Default 1 MiB. */
  readonly maxPayloadBytes?: number;
  /**
   * Most bytes a peer of a control link, or the hub of a mirror, may leave unread (backlog.ts): an
   * answer to its call that would go past it is refused (`not_ready`, retry in 1 s); a peer over it
   * that has not read for `stallTimeoutMs` has its socket dropped, and so has one owing twice it.
   * Default 8 MiB (the websocket transport's `maxBufferedBytes`).
   */
  readonly maxBufferedBytes?: number;
  /** How long a peer over `maxBufferedBytes` may go without reading, ms. Default 5000. */
  readonly stallTimeoutMs?: number;
  /**
   * The node's budget on bytes received but not yet a whole message (`@mdp/core`'s
   * `InflightBudget`): what a link this node accepted has sent of an unfinished frame counts against
   * it (anyone who reaches the port may open one). Past it, the connection whose unfinished message
   * began first is closed 1013 and its socket destroyed. Default: none, frames are not counted.
   */
  readonly inflight?: InflightBudget;
  /**
   * *beyond*: a secret every member shares; each hello carries an HMAC proof of it and a hello
   * without a valid proof is refused (close 1008) before any other cluster message is read, on
   * links in both directions. Several secrets: this node proves the first, and accepts a proof of
   * any of them. Default none.
   */
  readonly clusterSecret?: string | readonly string[];
  /**
   * Most cluster proofs (hello and mirror proofs this node accepted) remembered at once, so that
   * each is accepted only once (proof-memory.ts). A proof is forgotten when its five-minute window
   * ends; while the memory is full, new links are refused and dialled again later. Default 100,000
   * (about 12 MB at most).
   */
  readonly maxRememberedProofs?: number;
  /** Headers sent when a mirror opens its websocket to the hub (e.g. `authorization` for an auth policy). */
  readonly upstreamHeaders?: Readonly<Record<string, string>>;
  /**
   * *beyond*: the cluster speaks TLS. Discovery and upstream probes go over HTTPS (a target without
   * a scheme included), links and mirrors dial `wss`, each verifying the peer against `tls.ca`. A
   * function is read at every dial, so that re-read certificates take effect. Default: plain.
   */
  readonly tls?: PeerTlsSource;
  readonly logger?: Logger;
  /** Randomness in [0, 1) for time-outs and jitter. Default Math.random. */
  readonly random?: () => number;
  readonly clock?: Clock;
}

export interface ResolvedOptions {
  readonly router: Router;
  readonly tenancy: Tenancy | undefined;
  readonly serverId: string;
  readonly clusterId: string;
  readonly membership: Membership;
  readonly mode: ClusterMode;
  readonly upstreamUrl: string | undefined;
  readonly discovery: DiscoveryOptions;
  readonly heartbeatIntervalMs: number;
  readonly leaseDurationMs: number;
  readonly electionTimeoutMinMs: number;
  readonly electionTimeoutMaxMs: number;
  readonly voteGraceMs: number;
  readonly failoverStepMs: number;
  readonly stateFile: string | undefined;
  readonly rpcTimeoutMs: number;
  readonly proxyReconnectMinMs: number;
  readonly proxyReconnectMaxMs: number;
  readonly maxPayloadBytes: number;
  readonly backlog: BacklogLimits;
  readonly inflight: InflightBudget | undefined;
  /** Accepted secrets, the one this node proves first; empty for none. */
  readonly clusterSecrets: readonly string[];
  readonly maxRememberedProofs: number;
  readonly upstreamHeaders: Readonly<Record<string, string>> | undefined;
  readonly tls: PeerTlsSource | undefined;
  readonly logger: Logger;
  readonly random: () => number;
  readonly clock: Clock;
}

export const CLUSTER_DEFAULTS = Object.freeze({
  mode: 'auto' as ClusterMode,
  heartbeatIntervalMs: 1000,
  leaseDurationMs: 4000,
  electionTimeoutMinMs: 4500,
  electionTimeoutMaxMs: 7000,
  rpcTimeoutMs: 20_000,
  proxyReconnectMinMs: 100,
  proxyReconnectMaxMs: 5000,
  // A mirror's frames are its clients' MDP messages: the hub takes as much as a client's socket.
  maxPayloadBytes: DEFAULT_MAX_MESSAGE_BYTES,
});

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number, got ${value}`);
  return value;
}

export function resolveOptions(options: ClusterNodeOptions): ResolvedOptions {
  if (!options.serverId) throw new RangeError('serverId must not be empty');
  const mode = options.mode ?? CLUSTER_DEFAULTS.mode;
  if (!CLUSTER_MODES.includes(mode)) throw new RangeError(`mode must be one of ${CLUSTER_MODES.join(', ')}`);
  const membership = options.membership ?? { mode: 'dynamic' };
  if (membership.mode === 'static') {
    if (membership.members.length === 0) throw new RangeError('static membership needs at least one member');
    if (!membership.members.includes(options.serverId)) {
      throw new RangeError(`static membership must list this server's id ${JSON.stringify(options.serverId)}`);
    }
  }
  const heartbeatIntervalMs = positive('heartbeatIntervalMs', options.heartbeatIntervalMs ?? CLUSTER_DEFAULTS.heartbeatIntervalMs);
  const leaseDurationMs = positive('leaseDurationMs', options.leaseDurationMs ?? CLUSTER_DEFAULTS.leaseDurationMs);
  const electionTimeoutMinMs = positive('electionTimeoutMinMs', options.electionTimeoutMinMs ?? CLUSTER_DEFAULTS.electionTimeoutMinMs);
  const electionTimeoutMaxMs = positive('electionTimeoutMaxMs', options.electionTimeoutMaxMs ?? CLUSTER_DEFAULTS.electionTimeoutMaxMs);
  if (electionTimeoutMaxMs < electionTimeoutMinMs) throw new RangeError('electionTimeoutMaxMs must not be below electionTimeoutMinMs');
  if (leaseDurationMs <= heartbeatIntervalMs) throw new RangeError('leaseDurationMs must be longer than heartbeatIntervalMs');
  const discovery: DiscoveryOptions = { ...DISCOVERY_DEFAULTS, ...stripUndefined(options.discovery ?? {}) };
  positive('discovery.intervalMs', discovery.intervalMs);
  positive('discovery.probeTimeoutMs', discovery.probeTimeoutMs);
  if (!Number.isInteger(discovery.attempts) || discovery.attempts < 0) throw new RangeError('discovery.attempts must be a whole number ≥ 0');
  if (!Number.isInteger(discovery.startPort) || discovery.startPort < 1 || discovery.startPort > 65535) {
    throw new RangeError('discovery.startPort must be a port number');
  }
  return {
    router: options.router,
    tenancy: options.tenancy,
    serverId: options.serverId,
    clusterId: options.clusterId,
    membership,
    mode,
    upstreamUrl: options.upstreamUrl || undefined,
    discovery,
    heartbeatIntervalMs,
    leaseDurationMs,
    electionTimeoutMinMs,
    electionTimeoutMaxMs,
    // With durable votes a restarted process cannot vote twice; without, it waits a little longer.
    voteGraceMs: options.voteGraceMs ?? (options.stateFile ? 0 : 2 * heartbeatIntervalMs),
    failoverStepMs: options.failoverStepMs ?? heartbeatIntervalMs / 4,
    stateFile: options.stateFile,
    rpcTimeoutMs: positive('rpcTimeoutMs', options.rpcTimeoutMs ?? CLUSTER_DEFAULTS.rpcTimeoutMs),
    proxyReconnectMinMs: positive('proxyReconnectMinMs', options.proxyReconnectMinMs ?? CLUSTER_DEFAULTS.proxyReconnectMinMs),
    proxyReconnectMaxMs: positive('proxyReconnectMaxMs', options.proxyReconnectMaxMs ?? CLUSTER_DEFAULTS.proxyReconnectMaxMs),
    maxPayloadBytes: positive('maxPayloadBytes', options.maxPayloadBytes ?? CLUSTER_DEFAULTS.maxPayloadBytes),
    backlog: {
      maxBufferedBytes: positive('maxBufferedBytes', options.maxBufferedBytes ?? BACKLOG_DEFAULTS.maxBufferedBytes),
      stallTimeoutMs: positive('stallTimeoutMs', options.stallTimeoutMs ?? BACKLOG_DEFAULTS.stallTimeoutMs),
    },
    inflight: options.inflight,
    clusterSecrets: (typeof options.clusterSecret === 'string' ? [options.clusterSecret] : (options.clusterSecret ?? [])).filter((s) => s !== ''),
    maxRememberedProofs: wholePositive('maxRememberedProofs', options.maxRememberedProofs ?? DEFAULT_MAX_REMEMBERED_PROOFS),
    upstreamHeaders: options.upstreamHeaders,
    tls: options.tls,
    logger: options.logger ?? silentLogger,
    random: options.random ?? Math.random,
    clock: options.clock ?? systemClock,
  };
}

function wholePositive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive whole number, got ${value}`);
  return value;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The election's configuration for a node whose MDP websocket is `selfUrl`. */
export function electionConfigOf(o: ResolvedOptions, selfUrl: string): ElectionConfig {
  return {
    selfId: o.serverId,
    selfUrl,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    leaseDurationMs: o.leaseDurationMs,
    electionTimeoutMinMs: o.electionTimeoutMinMs,
    electionTimeoutMaxMs: o.electionTimeoutMaxMs,
    voteGraceMs: o.voteGraceMs,
    failoverStepMs: o.failoverStepMs,
    canLead: o.mode === 'auto',
  };
}

/**
 * How long a starting node waits, after its first discovery round, for links to the members it
 * found before it stops waiting for them (readiness.ts): a probe's time plus a heartbeat, ms.
 */
export function settleMsOf(o: ResolvedOptions): number {
  return o.discovery.probeTimeoutMs + o.heartbeatIntervalMs;
}

/**
 * Timings of the host API on a member (host-routing.ts): a request waits for a leader and for its answer
 * up to the RPC time-out; while someone listens for catalog changes the leader is polled every
 * heartbeat. After a change of leader, the other members' mirrors register into the new one: their
 * servers hear of it within a heartbeat, read its metadata (a probe) and connect (another
 * heartbeat, generously); until then `not_found` is asked again (2.5 s with the defaults).
 */
export function hostTimingsOf(o: ResolvedOptions): { readonly waitMs: number; readonly pollMs: number; readonly settleMs: number } {
  return { waitMs: o.rpcTimeoutMs, pollMs: o.heartbeatIntervalMs, settleMs: 2 * o.heartbeatIntervalMs + o.discovery.probeTimeoutMs };
}

/**
 * Base URL of the first port of the discovery range: the port clients know (47372 by default),
 * which the leader serves too once its holder is gone. Undefined when no range is probed.
 */
export function defaultPortUrlOf(o: ResolvedOptions): string | undefined {
  const { host, startPort, attempts } = o.discovery;
  if (attempts === 0) return undefined;
  return `http://${urlHost(host)}:${startPort}`;
}

/** Admission's configuration (join-rules.ts) for node `o`. */
export function admissionConfigOf(o: ResolvedOptions): AdmissionConfig {
  const defaultUrl = defaultPortUrlOf(o);
  return {
    selfId: o.serverId,
    clusterId: o.clusterId,
    membership: o.membership,
    fingerprint: membershipFingerprint(o.membership),
    secrets: o.clusterSecrets,
    ...(defaultUrl !== undefined ? { defaultUrl } : {}),
  };
}
