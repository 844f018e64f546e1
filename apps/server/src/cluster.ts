/**
 * The server's side of @mdp/cluster (SPEC §10): cluster options, the node built once the server
 * listens, the default-port fallback of `auto` mode and the startup line that says who leads.
 */
import { join } from 'node:path';
import { DISCOVERY_DEFAULTS, createClusterNode, probeMeta, type ClusterMode, type ClusterNode, type DiscoveryOptions, type PeerTlsSource } from '@mdp/cluster';
import { urlHost, type InflightBudget, type Logger, type Router, type Tenancy } from '@mdp/core';
import { loadOrCreateClusterSecret } from './cluster-secret.js';
import { isLoopback } from './urls.js';

export { defaultStateDir } from './state-dir.js';

export interface MdpClusterOptions {
  /** `standalone`, `auto` or `proxy-required`. Default `auto` (without a `cluster` option a server runs standalone). */
  mode?: ClusterMode;
  /** Static membership: every member's server id, this server's included. Default: dynamic (discovery). */
  members?: readonly string[];
  /** Mirror local clients into this hub instead of the elected leader. */
  upstreamUrl?: string;
  /** Port range, seeds, interval and probe time-out of discovery (defaults 127.0.0.1, 47372, 100 ports, 2000 ms). */
  discovery?: Partial<DiscoveryOptions>;
  /** Leader heartbeat period, ms. Default 1000. */
  heartbeatIntervalMs?: number;
  /** Follower lease per heartbeat, ms. Default 4000. */
  leaseDurationMs?: number;
  /** Random election time-out bounds, ms. Default 4500–7000. */
  electionTimeoutMinMs?: number;
  electionTimeoutMaxMs?: number;
  /** Directory where term and vote survive restarts (one small file per cluster and server id). Default none. */
  stateDir?: string;
  /**
   * *beyond*: secret every member proves in its hello; links whose peer does not prove it are refused
   * in both directions, and a peer counts as a member only once it proved it. Default with
   * `authTokens`: the tokens themselves (this server proves its first and accepts a proof of any),
   * so a token policy keeps out peers without a token; else the secret in `secretFile`.
   */
  secret?: string;
  /**
   * File holding the cluster secret when neither `secret` nor `authTokens` is given: read, or made
   * on first use (32 random bytes, mode 0600, its directory 0700), so that only this user's servers
   * can prove it. The CLI uses `<state dir>/cluster-secret`. Default none (an open cluster).
   */
  secretFile?: string;
  /**
   * Headers the mirrors send to the hub's websocket. Default with `authTokens`:
   * `authorization: Bearer <first token>`; set it when an `authPolicy` of your own guards the hub.
   */
  upstreamHeaders?: Readonly<Record<string, string>>;
  /**
   * When the port to bind is held by an MDP server, bind the next free port of the discovery range
   * instead and follow it. Default: in `auto` mode, when no port was given explicitly.
   */
  portFallback?: boolean;
  /**
   * While this server leads, also serve the first port of the discovery range (the port clients
   * know) once the member that held it is gone. Default true in `auto` mode when the range is on the
   * bound host.
   */
  serveDefaultPort?: boolean;
}

/**
 * The cluster secrets a server proves (the first) and accepts: `secret`; else its auth tokens (they
 * prove membership in hellos, never sent as such, so a dialled address learns nothing from them);
 * else the one in `secretFile`, made if missing. None for a standalone server. Throws (with what to
 * do) when the secret file cannot be used.
 */
export function clusterSecretsOf(options: MdpClusterOptions | undefined, authTokens: readonly string[] | undefined): string[] {
  if (options === undefined || (options.mode ?? 'auto') === 'standalone') return [];
  if (options.secret) return [options.secret];
  const tokens = usableTokens(authTokens);
  if (tokens.length > 0) return tokens.map(tokenSecret);
  return options.secretFile ? [loadOrCreateClusterSecret(options.secretFile)] : [];
}

/** Build the node for a listening server; without cluster options, a standalone one. */
export function createServerCluster(params: {
  readonly router: Router;
  readonly serverId: string;
  readonly clusterId: string;
  readonly options: MdpClusterOptions | undefined;
  readonly authTokens: readonly string[] | undefined;
  /** The server's TLS, for what the node dials (probes, links, mirrors). */
  readonly tls?: PeerTlsSource | undefined;
  /** From `clusterSecretsOf`. */
  readonly secrets: readonly string[];
  /** What a cluster peer may leave unread (the websocket limits). Default the cluster's own. */
  readonly backlog?: { readonly maxBufferedBytes: number; readonly stallTimeoutMs: number };
  /**
   * The server's largest message (`--max-message-bytes`): also the largest frame of its control
   * links and mirrors, which carry its clients' messages. Default the cluster's own (1 MiB).
   */
  readonly maxMessageBytes?: number;
  /** The node's budget on unfinished messages: what accepted control links send of one counts against it. */
  readonly inflight?: InflightBudget;
  /** Who sees which clients: the host requests this node answers (its own, and the members' it leads) follow it. */
  readonly tenancy?: Tenancy;
  readonly logger: Logger;
}): ClusterNode {
  const o = params.options;
  const mode = o === undefined ? 'standalone' : (o.mode ?? 'auto');
  const token = usableTokens(params.authTokens)[0];
  const { secrets } = params;
  const upstreamHeaders = o?.upstreamHeaders ?? (token ? { authorization: `Bearer ${token}` } : undefined);
  return createClusterNode({
    router: params.router,
    ...(params.tenancy ? { tenancy: params.tenancy } : {}),
    serverId: params.serverId,
    clusterId: params.clusterId,
    mode,
    logger: params.logger,
    ...(o?.members?.length ? { membership: { mode: 'static', members: o.members } } : {}),
    ...(o?.upstreamUrl ? { upstreamUrl: o.upstreamUrl } : {}),
    ...(o?.discovery ? { discovery: o.discovery } : {}),
    ...(o?.heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: o.heartbeatIntervalMs } : {}),
    ...(o?.leaseDurationMs !== undefined ? { leaseDurationMs: o.leaseDurationMs } : {}),
    ...(o?.electionTimeoutMinMs !== undefined ? { electionTimeoutMinMs: o.electionTimeoutMinMs } : {}),
    ...(o?.electionTimeoutMaxMs !== undefined ? { electionTimeoutMaxMs: o.electionTimeoutMaxMs } : {}),
    ...(o?.stateDir ? { stateFile: stateFileOf(o.stateDir, params.clusterId, params.serverId) } : {}),
    ...(secrets.length > 0 ? { clusterSecret: secrets } : {}),
    // A hub with a token policy wants a credential on the mirrors' websockets too.
    ...(upstreamHeaders ? { upstreamHeaders } : {}),
    ...(params.tls ? { tls: params.tls } : {}),
    ...(params.backlog ?? {}),
    ...(params.maxMessageBytes !== undefined ? { maxPayloadBytes: params.maxMessageBytes } : {}),
    ...(params.inflight ? { inflight: params.inflight } : {}),
  });
}

/** The auth tokens that can prove anything (an empty one never can). */
function usableTokens(tokens: readonly string[] | undefined): string[] {
  return (tokens ?? []).filter((t) => t !== '');
}

/** The cluster secret an auth token stands for (kept apart from the token's other use). */
export function tokenSecret(token: string): string {
  return `mdp-auth-token\n${token}`;
}

/**
 * Why these options cannot run a cluster safely, or `undefined`. An auth policy of the caller's own
 * has no token to prove membership with: without a cluster secret, anyone who can reach the
 * control websocket could join and list or call clients through it.
 */
export function clusterAuthProblem(options: {
  readonly authPolicy?: unknown;
  readonly authTokens?: readonly string[] | undefined;
  /** Access tokens of an issuer (SPEC §17): a policy too, whose tokens no peer can prove. */
  readonly accessTokens?: unknown;
  readonly cluster?: MdpClusterOptions | undefined;
}): string | undefined {
  const cluster = options.cluster;
  if (!(options.authPolicy || options.accessTokens) || !cluster || (cluster.mode ?? 'auto') === 'standalone') return undefined;
  if (cluster.secret || cluster.secretFile || usableTokens(options.authTokens).length > 0) return undefined;
  return 'an authPolicy (or accessTokens) without authTokens needs cluster.secret (or cluster.secretFile): cluster peers prove membership with it';
}

export function stateFileOf(dir: string, clusterId: string, serverId: string): string {
  const safe = (text: string): string => text.replace(/[^A-Za-z0-9._-]/g, '_');
  return join(dir, safe(clusterId), `${safe(serverId)}.json`);
}

/**
 * Whether `host:port` answers GET /mdp/meta as an MDP server; over HTTPS when `secure` (any
 * certificate will do: the question is only who holds the port).
 */
export async function heldByMdp(host: string, port: number, secure = false): Promise<boolean> {
  const target = ['0.0.0.0', '::', '[::]', ''].includes(host) ? '127.0.0.1' : urlHost(host);
  const result = await probeMeta(`${secure ? 'https' : 'http'}://${target}:${port}`, {
    timeoutMs: 1000,
    ...(secure ? { tls: { rejectUnauthorized: false } } : {}),
  });
  return result.ok;
}

/**
 * The default port a leader serves too (the first of the discovery range), or undefined when it
 * does not: not an auto cluster, turned off, no range, or a range on another host than the bound one.
 */
export function defaultPortOf(options: MdpClusterOptions | undefined, bindHost: string): number | undefined {
  if (!options || (options.mode ?? 'auto') !== 'auto' || options.serveDefaultPort === false) return undefined;
  const attempts = options.discovery?.attempts ?? DISCOVERY_DEFAULTS.attempts;
  const rangeHost = options.discovery?.host ?? DISCOVERY_DEFAULTS.host;
  if (attempts === 0) return undefined;
  const wildcard = ['0.0.0.0', '::', '[::]', ''].includes(bindHost);
  const sameHost = wildcard || bindHost === rangeHost || (isLoopback(bindHost) && isLoopback(rangeHost));
  return sameHost ? (options.discovery?.startPort ?? DISCOVERY_DEFAULTS.startPort) : undefined;
}

/**
 * The ports to try when `port` is held by an MDP server, or undefined to fail: auto mode, a port that
 * was not given (`explicitPort`), takes the next free port of the range unless `portFallback` says.
 */
export function portFallbackOf(options: MdpClusterOptions | undefined, port: number, explicitPort: boolean): (() => readonly number[]) | undefined {
  const auto = options !== undefined && (options.mode ?? 'auto') === 'auto';
  const fallback = options?.portFallback ?? (auto && !explicitPort);
  return fallback ? () => fallbackPorts(port, options?.discovery) : undefined;
}

/** The ports tried, in order, after `port`: the rest of the discovery range. */
export function fallbackPorts(port: number, discovery: Partial<DiscoveryOptions> | undefined): number[] {
  const start = discovery?.startPort ?? DISCOVERY_DEFAULTS.startPort;
  const attempts = discovery?.attempts ?? DISCOVERY_DEFAULTS.attempts;
  const ports: number[] = [];
  for (let p = start; p < start + attempts && p <= 65535; p += 1) if (p !== port) ports.push(p);
  return ports.filter((p) => p > port).concat(ports.filter((p) => p < port));
}

/**
 * Print a line whenever it changes who leads, as far as this node knows: this node, or the leader it
 * follows, and that this node stepped down when it stops leading (so the last line never claims a
 * leadership that ended). A standalone node leads at once and for good. Returns the unsubscribe.
 */
export function announceLeadership(node: ClusterNode, print: (line: string) => void): () => void {
  const prefix = `cluster ${node.clusterId}:`;
  if (node.mode === 'standalone') {
    print(`${prefix} standalone, this node is the hub (leader, term 0)`);
    return () => undefined;
  }
  let last: string | undefined;
  let leading = false;
  const show = (role: string, term: number, leaderId: string | undefined, leaderUrl: string | undefined): void => {
    let text: string | undefined;
    if (role === 'leader') text = `${prefix} this node is the leader (term ${term})`;
    else if (leaderId) text = `${prefix} following ${leaderId}${leaderUrl ? ` at ${leaderUrl}` : ''} (term ${term})`;
    else if (leading) text = `${prefix} this node stepped down (term ${term}); electing a leader`;
    leading = role === 'leader';
    if (text === undefined || text === last) return;
    last = text;
    print(text);
  };
  const meta = node.meta();
  show(meta.role, meta.term, meta.leaderId || undefined, meta.leaderUrl || undefined);
  return node.onLeaderChange((change) => show(change.role, change.term, change.leaderId, change.leaderUrl));
}
