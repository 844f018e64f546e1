/**
 * `createClusterNode`: one server's membership in a cluster. It wires the election driver to the
 * control links, discovery to the member directory, the leader to the upstream proxy, and host
 * requests to the leader. apps/server owns the HTTP listener: it hands `/mdp/cluster` upgrades to
 * `handleUpgrade`, reads `meta()`/`features()` for GET /mdp/meta, calls `start(self)` once
 * listening and `close()` on shutdown.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { MdpError, type InvokeOutcome } from '@mdp/core';
import { ERROR_CODES, UNSENDABLE_DATA_ERROR, type ClusterHello, type ClusterMessage, type ErrorCode, type MetaDocument } from '@mdp/protocol';
import { TimerSet } from './clock.js';
import { fromWire, helloMessage, toWire, type WireHeader } from './codec.js';
import { Discovery } from './discovery.js';
import { loadDurableVote, saveDurableVote } from './durable.js';
import { quorumSize, type ElectionConfig } from './election.js';
import { ElectionDriver, type ElectionSnapshot, type LeaderView } from './election-driver.js';
import { LinkManager } from './links.js';
import { MemberDirectory, endpointKey, helloProof, membershipFingerprint, peerRefusal, validProof, type PeerClaim } from './membership.js';
import { normalizeTarget } from './meta-probe.js';
import { resolveOptions, type ClusterMode, type ClusterNodeOptions, type ResolvedOptions } from './options.js';
import { UpstreamProxy, type ProxyStatus } from './proxy.js';
import { seedFrom } from './rng.js';
import { probeWith } from './tls.js';
import { RpcClient, localHost, serveRpc, type CallPathRequest, type HostApi, type HostClient, type HostPath, type RpcMethod } from './rpc.js';

/** Where this server can be reached; known once it listens. */
export interface ClusterSelf {
  /** MDP websocket URL (what followers mirror into when this node leads). */
  readonly wsUrl: string;
  /** Control websocket URL, `ws://host:port/mdp/cluster`. */
  readonly clusterUrl: string;
  readonly metaUrl: string;
}

export type ClusterView = MetaDocument['cluster'];
export type ClusterFeatures = MetaDocument['features'];

export interface LeaderChange {
  readonly role: LeaderView['role'];
  readonly term: number;
  /** Undefined while no leader is known. */
  readonly leaderId: string | undefined;
  readonly leaderUrl: string | undefined;
  readonly previousLeaderId: string | undefined;
}

/** A configuration problem found at run time. */
export interface ClusterConfigError {
  readonly kind: 'duplicate-server-id';
  readonly serverId: string;
  /** Where the id was seen first (or this server, for our own id). */
  readonly firstUrl: string;
  /** The second endpoint claiming it. */
  readonly secondUrl: string;
}

export interface ClusterNode {
  readonly serverId: string;
  readonly clusterId: string;
  readonly mode: ClusterMode;
  /** Join the cluster: discovery, links and timers start. Call once the server listens. */
  start(self: ClusterSelf): void;
  /** Take an HTTP upgrade for `/mdp/cluster`. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** The `cluster` object of GET /mdp/meta, live. */
  meta(): ClusterView;
  /** The `features` object of GET /mdp/meta. */
  features(): ClusterFeatures;
  /** Role, term or leader changed. Returns the unsubscribe. */
  onLeaderChange(listener: (change: LeaderChange) => void): () => void;
  onConfigError(listener: (error: ClusterConfigError) => void): () => void;
  proxyStatus(): ProxyStatus;
  onProxyStatus(listener: (status: ProxyStatus) => void): () => void;
  /** Host-level requests; on a follower they are answered by the leader. */
  readonly host: HostApi;
  /** Timers this node holds (0 after close). */
  readonly activeTimers: number;
  /** Resign when leading, close every link, clear every timer. Idempotent. */
  close(): Promise<void>;
}

export function createClusterNode(input: ClusterNodeOptions): ClusterNode {
  const o = resolveOptions(input);
  return o.mode === 'standalone' ? createStandalone(o) : createMember(o);
}

// ---------------------------------------------------------------------------------------------
// Standalone: leader of one, term 0, no timers of its own (a mirror into an explicit upstream aside).

function createStandalone(o: ResolvedOptions): ClusterNode {
  const timers = new TimerSet(o.clock, (error) => o.logger.error('cluster.timer_failed', { error }));
  let self: ClusterSelf | undefined;
  let closing: Promise<void> | undefined;
  const proxy = o.upstreamUrl ? newProxy(o, timers) : undefined;
  return {
    serverId: o.serverId,
    clusterId: o.clusterId,
    mode: o.mode,
    start(s) {
      if (self || closing) return;
      self = s;
      proxy?.setUpstream(o.upstreamUrl);
    },
    handleUpgrade(_request, socket) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    },
    meta: () => ({
      id: o.clusterId,
      membershipMode: 'dynamic',
      membershipFingerprint: 'dynamic',
      role: 'leader',
      term: 0,
      leaderId: o.serverId,
      leaderUrl: self?.wsUrl ?? '',
      leaseDurationMs: o.leaseDurationMs,
      knownMemberCount: 1,
      reachableMemberCount: 1,
      quorumSize: 1,
      hasQuorum: true,
    }),
    features: () => ({ upstreamProxy: proxy !== undefined, clusterControl: false }),
    onLeaderChange: () => () => undefined,
    onConfigError: () => () => undefined,
    proxyStatus: () => proxy?.status() ?? { state: 'idle' },
    onProxyStatus: (listener) => proxy?.onStatus(listener) ?? (() => undefined),
    host: localHost(o.router),
    get activeTimers() {
      return timers.size;
    },
    close() {
      closing ??= (async () => {
        await proxy?.close();
        timers.close();
      })();
      return closing;
    },
  };
}

function newProxy(o: ResolvedOptions, timers: TimerSet): UpstreamProxy {
  return new UpstreamProxy({
    router: o.router,
    serverId: o.serverId,
    timers,
    logger: o.logger.child({ component: 'proxy' }),
    random: o.random,
    reconnectMinMs: o.proxyReconnectMinMs,
    reconnectMaxMs: o.proxyReconnectMaxMs,
    connectTimeoutMs: Math.max(1000, o.discovery.probeTimeoutMs * 2),
    maxPayloadBytes: o.maxPayloadBytes,
    ...(o.upstreamHeaders ? { headers: o.upstreamHeaders } : {}),
    ...(o.tls ? { tls: o.tls } : {}),
    probe: probeWith(o.tls),
    probeTimeoutMs: Math.max(1000, o.discovery.probeTimeoutMs),
    recheckMs: Math.max(o.discovery.intervalMs, 1000),
  });
}

// ---------------------------------------------------------------------------------------------
// auto / proxy-required

function createMember(o: ResolvedOptions): ClusterNode {
  const logger = o.logger.child({ component: 'cluster', serverId: o.serverId });
  const timers = new TimerSet(o.clock, (error) => logger.error('cluster.timer_failed', { error }));
  const fingerprint = membershipFingerprint(o.membership);
  const rules = { selfId: o.serverId, clusterId: o.clusterId, membership: o.membership, fingerprint };
  const directory = new MemberDirectory(o.serverId);
  const staticMembers = o.membership.mode === 'static' ? o.membership.members : [];
  const rpc = new RpcClient(timers, o.rpcTimeoutMs, logger);
  const local = localHost(o.router);
  const proxy = newProxy(o, timers);
  const leaderListeners = new Set<(change: LeaderChange) => void>();
  const configListeners = new Set<(error: ClusterConfigError) => void>();
  /** Log a repeated condition once per key. */
  const reported = new Set<string>();

  let self: ClusterSelf | undefined;
  let header: WireHeader | undefined;
  let driver: ElectionDriver | undefined;
  let links: LinkManager | undefined;
  let discovery: Discovery | undefined;
  let cancelMaintenance: (() => void) | undefined;
  let leaderSeenInDiscovery = false;
  /** Elections wait for the first discovery round and for links to what it found (or a deadline). */
  let readiness: 'first-round' | 'settling' | 'ready' = 'first-round';
  let cancelSettle: (() => void) | undefined;
  let closing: Promise<void> | undefined;

  const configError = (error: ClusterConfigError): void => {
    const key = `dup|${error.serverId}|${error.secondUrl}`;
    if (reported.has(key)) return;
    reported.add(key);
    logger.error('cluster.duplicate_server_id', { ...error, message: 'a server id is used by two endpoints; give each server its own id' });
    for (const listener of configListeners) {
      try {
        listener(error);
      } catch (e) {
        logger.error('cluster.config_listener_failed', { error: e });
      }
    }
  };

  const reportOnce = (key: string, event: string, fields: Record<string, unknown>): void => {
    if (reported.has(key)) return;
    reported.add(key);
    logger.warn(event, fields);
  };

  /** Whether a peer (from a hello or its metadata) may join; records its endpoint. */
  const admit = (claim: PeerClaim, endpoints: { clusterUrl: string; wsUrl?: string; metaUrl?: string }, source: string): string | undefined => {
    const refusal = peerRefusal(claim, rules);
    if (refusal) {
      reportOnce(`refuse|${endpoints.clusterUrl}|${refusal}`, 'cluster.peer_refused', { peer: claim.serverId, url: endpoints.clusterUrl, reason: refusal, source });
      return refusal;
    }
    const sighting = directory.observe(claim.serverId, endpoints);
    // Discovery (or the static list) makes members; a peer that only dialed in is an observer.
    const makesMember = source === 'discovery' || staticMembers.includes(claim.serverId);
    switch (sighting.kind) {
      case 'invalid':
        return 'invalid cluster URL';
      case 'self':
        return 'that is this server';
      case 'duplicate':
        configError({ kind: 'duplicate-server-id', serverId: claim.serverId, firstUrl: sighting.firstUrl, secondUrl: endpoints.clusterUrl });
        return `duplicate server id ${JSON.stringify(claim.serverId)}`;
      case 'new':
      case 'known':
        if (makesMember && driver && !driver.knows(claim.serverId)) {
          // Sticky membership: once admitted, a member counts toward quorum for the process' life.
          driver.dispatch({ type: 'memberKnown', id: claim.serverId });
          if (links?.isUp(claim.serverId)) driver.dispatch({ type: 'linkUp', id: claim.serverId });
        }
        return undefined;
    }
  };

  const send = (to: string, message: ClusterMessage): boolean => links?.send(to, message) ?? false;

  const updateUpstream = (): void => {
    if (!driver) return;
    if (o.upstreamUrl) return proxy.setUpstream(o.upstreamUrl);
    const view = driver.view();
    if (view.role === 'leader') return proxy.setUpstream(undefined);
    if (view.leaderId === undefined || view.leaderId === o.serverId) return; // keep mirrors until a leader is known
    const entry = directory.get(view.leaderId);
    const target = entry?.metaUrl ?? view.leaderUrl ?? entry?.clusterUrl;
    if (target) proxy.setUpstream(target);
  };

  const onMessage = (peerId: string, message: ClusterMessage): void => {
    if (message.type === 'clusterRpcRequest') {
      serveRpc(local, message).then((answer) => {
        if (!header) return;
        const { clusterId, serverId } = header;
        const respond = (body: typeof answer): boolean =>
          send(peerId, { type: 'clusterRpcResponse', clusterId, serverId, term: driver?.view().term ?? 0, timestamp: Date.now(), requestId: message.requestId, ...body });
        // A result that cannot be sent (a client's data nested too deeply to serialise) is answered
        // with an error, so the caller does not wait for its time-out.
        if (!respond(answer)) respond({ ok: false, error: UNSENDABLE_DATA_ERROR });
      }).catch((error: unknown) => logger.error('cluster.rpc_failed', { error }));
      return;
    }
    if (message.type === 'clusterRpcResponse') return rpc.settle(peerId, message);
    const election = fromWire(message);
    if (election) driver?.dispatch({ type: 'message', from: peerId, message: election });
  };

  const checkHello = (hello: ClusterHello): string | undefined => {
    if (o.clusterSecrets.length > 0 && !o.clusterSecrets.some((secret) => validProof(secret, hello, o.serverId))) {
      reportOnce(`secret|${hello.clusterUrl}`, 'cluster.peer_refused', { peer: hello.serverId, url: hello.clusterUrl, reason: 'no valid cluster secret proof' });
      return 'cluster secret not proven';
    }
    return admit(hello, { clusterUrl: hello.clusterUrl, wsUrl: hello.wsUrl }, 'hello');
  };

  const onDiscovered = (meta: MetaDocument, url: string): void => {
    if (!self) return;
    const clusterUrl = meta.endpoints.cluster;
    if (meta.serverId === o.serverId || directory.isSelf(clusterUrl)) {
      const sighting = directory.observe(meta.serverId, { clusterUrl });
      if (sighting.kind === 'duplicate') {
        configError({ kind: 'duplicate-server-id', serverId: meta.serverId, firstUrl: sighting.firstUrl, secondUrl: clusterUrl });
      }
      return;
    }
    if (!meta.features.clusterControl) return;
    // A document must describe the address it came from. One naming another address's endpoint
    // would let any port of the range speak for that server (and steer mirrors to itself).
    if (endpointKey(url) !== endpointKey(clusterUrl)) {
      reportOnce(`elsewhere|${url}|${clusterUrl}`, 'cluster.meta_elsewhere', { url, clusterUrl, reason: 'metadata names another address; ignored' });
      return;
    }
    const claim: PeerClaim = {
      serverId: meta.serverId,
      clusterId: meta.cluster.id,
      membershipMode: meta.cluster.membershipMode,
      membershipFingerprint: meta.cluster.membershipFingerprint,
    };
    if (admit(claim, { clusterUrl, wsUrl: meta.endpoints.ws, metaUrl: url }, 'discovery')) return;
    if (meta.cluster.role === 'leader' && meta.cluster.hasQuorum) leaderSeenInDiscovery = true;
    links?.connect(clusterUrl, meta.serverId);
  };

  const becomeReady = (): void => {
    if (readiness === 'ready' || !driver) return;
    readiness = 'ready';
    cancelSettle?.();
    driver.dispatch({ type: 'ready', leaderSeen: leaderSeenInDiscovery });
  };

  /** Ready once every member found so far has a link up (their hellos told us their terms). */
  const maybeReady = (): void => {
    if (readiness !== 'settling' || !links || !driver) return;
    const d = driver;
    const l = links;
    if (directory.list().every((entry) => !d.knows(entry.id) || l.isUp(entry.id))) becomeReady();
  };

  /** Whether a probed address is this server's or a known member's endpoint. */
  const isMemberAddress = (url: string): boolean => {
    let base: string;
    try {
      base = normalizeTarget(url);
    } catch {
      return false;
    }
    if (directory.isSelf(base)) return true;
    const key = endpointKey(base);
    return directory.list().some((entry) => entry.key === key && (driver?.knows(entry.id) ?? false));
  };

  /** Dial every known member without a link (back-off lives in the link manager). */
  const maintain = (): void => {
    cancelMaintenance = timers.after(o.heartbeatIntervalMs, maintain);
    if (!links || !driver) return;
    for (const entry of directory.list()) {
      if (!links.isUp(entry.id) && (driver.knows(entry.id) || staticMembers.includes(entry.id))) links.connect(entry.clusterUrl, entry.id);
    }
  };

  /** Forward a host request to the leader when another node leads and is linked; else answer here. */
  const viaLeader = async <T>(method: RpcMethod, params: unknown, answerLocally: () => Promise<T>): Promise<T | MdpErrorShape> => {
    const view = driver?.view();
    const leaderId = view?.leaderId;
    if (!view || view.role === 'leader' || leaderId === undefined || leaderId === o.serverId || !links?.isUp(leaderId) || !header) {
      return answerLocally();
    }
    const h = header;
    const response = await rpc.request(leaderId, method, params, (requestId) =>
      send(leaderId, {
        type: 'clusterRpcRequest',
        clusterId: h.clusterId,
        serverId: h.serverId,
        term: view.term,
        timestamp: Date.now(),
        requestId,
        method,
        ...(params === undefined ? {} : { params }),
      }),
    );
    if (!('type' in response)) return { mdpError: response };
    if (!response.ok) return { mdpError: response.error ?? { code: 'handler_error', message: 'Leader reported a failure without details' } };
    return response.result as T;
  };

  const host: HostApi = {
    async listClients() {
      const result = await viaLeader<HostClient[]>('listClients', undefined, () => local.listClients());
      if (isMdpError(result)) throw new MdpError(knownCode(result.mdpError.code), result.mdpError.message);
      if (!Array.isArray(result)) throw new MdpError('handler_error', 'Leader answered listClients with a non-list');
      return result;
    },
    async listPaths() {
      const result = await viaLeader<HostPath[]>('listPaths', undefined, () => local.listPaths());
      if (isMdpError(result)) throw new MdpError(knownCode(result.mdpError.code), result.mdpError.message);
      if (!Array.isArray(result)) throw new MdpError('handler_error', 'Leader answered listPaths with a non-list');
      return result;
    },
    async callPath(request: CallPathRequest): Promise<InvokeOutcome> {
      const result = await viaLeader<InvokeOutcome>('callPath', request, () => local.callPath(request));
      if (isMdpError(result)) return { ok: false, source: 'server', error: result.mdpError };
      if (typeof result !== 'object' || result === null || typeof (result as { ok?: unknown }).ok !== 'boolean') {
        return { ok: false, source: 'server', error: { code: 'handler_error', message: 'Leader answered callPath with a malformed outcome' } };
      }
      return result;
    },
  };

  /** Before start: a follower of nobody, knowing only the configured members. */
  const snapshot = (): ElectionSnapshot => {
    if (driver) return driver.snapshot();
    const known = Math.max(1, new Set(staticMembers).size);
    return {
      role: 'follower',
      term: 0,
      leaderId: undefined,
      leaderUrl: undefined,
      knownMemberCount: known,
      reachableMemberCount: 1,
      quorumSize: quorumSize(known),
      hasQuorum: 1 >= quorumSize(known),
    };
  };

  return {
    serverId: o.serverId,
    clusterId: o.clusterId,
    mode: o.mode,
    host,
    get activeTimers() {
      return timers.size;
    },

    start(s) {
      if (self || closing) return;
      self = s;
      header = { clusterId: o.clusterId, serverId: o.serverId, clusterUrl: s.clusterUrl };
      const h = header;
      directory.setSelf(s.clusterUrl);
      const durable = o.stateFile ? loadDurableVote(o.stateFile, logger) : undefined;
      const config: ElectionConfig = {
        selfId: o.serverId,
        selfUrl: s.wsUrl,
        heartbeatIntervalMs: o.heartbeatIntervalMs,
        leaseDurationMs: o.leaseDurationMs,
        electionTimeoutMinMs: o.electionTimeoutMinMs,
        electionTimeoutMaxMs: o.electionTimeoutMaxMs,
        voteGraceMs: o.voteGraceMs,
        failoverStepMs: o.failoverStepMs,
        canLead: o.mode === 'auto',
      };
      const stateFile = o.stateFile;
      driver = new ElectionDriver(
        config,
        o.clock,
        timers,
        {
          send: (to, message) => void send(to, toWire(message, h, Date.now())),
          broadcast: (message) => links?.broadcast(toWire(message, h, Date.now())),
          ...(stateFile ? { persist: (vote) => void saveDurableVote(stateFile, vote, logger) } : {}),
        },
        logger,
        seedFrom(o.random),
        staticMembers,
        durable,
      );
      const d = driver;
      d.onChange((view, previous) => {
        if (view.leaderId !== previous.leaderId || view.role !== previous.role) {
          logger.info('cluster.leader_changed', { role: view.role, term: view.term, leaderId: view.leaderId, previousLeaderId: previous.leaderId });
        }
        updateUpstream();
        const change: LeaderChange = { ...view, previousLeaderId: previous.leaderId };
        for (const listener of leaderListeners) {
          try {
            listener(change);
          } catch (error) {
            logger.error('cluster.leader_listener_failed', { error });
          }
        }
      });
      links = new LinkManager(
        {
          selfId: o.serverId,
          clock: o.clock,
          timers,
          logger,
          pingIntervalMs: o.heartbeatIntervalMs,
          silenceTimeoutMs: 3 * o.leaseDurationMs,
          handshakeTimeoutMs: Math.max(1000, o.leaseDurationMs),
          redialMinMs: Math.max(50, o.heartbeatIntervalMs / 2),
          redialMaxMs: Math.max(o.leaseDurationMs, o.discovery.intervalMs),
          maxPayloadBytes: o.maxPayloadBytes,
          faults: o.faults,
          ...(o.tls ? { tls: o.tls } : {}),
          hello: (to) => {
            const view = d.view();
            const timestamp = Date.now();
            const message = helloMessage(
              h,
              {
                term: view.term,
                role: view.role,
                leaderId: view.leaderId,
                leaderUrl: view.leaderUrl,
                membershipMode: o.membership.mode,
                membershipFingerprint: fingerprint,
                wsUrl: s.wsUrl,
                clusterUrl: s.clusterUrl,
              },
              timestamp,
            );
            const [secret] = o.clusterSecrets;
            return secret === undefined ? message : { ...message, auth: helloProof(secret, o.clusterId, o.serverId, timestamp, to ?? '') };
          },
          check: (hello) => checkHello(hello),
        },
        {
          up: (peerId, hello) => {
            d.dispatch({ type: 'linkUp', id: peerId });
            onMessage(peerId, hello);
            maybeReady();
          },
          down: (peerId) => {
            rpc.failPeer(peerId);
            d.dispatch({ type: 'linkDown', id: peerId });
          },
          message: onMessage,
          alive: (peerId) => d.dispatch({ type: 'alive', id: peerId }),
          refused: (url, reason) => reportOnce(`refused-by|${url}|${reason}`, 'cluster.refused_by_peer', { url, reason }),
        },
      );
      links.start();
      discovery = new Discovery(
        o.discovery,
        {
          found: onDiscovered,
          roundDone: (round, timedOut) => {
            // A silent address that is already a member (a frozen peer), or our own (a busy event
            // loop), hides nobody new. With a static list the list is the whole truth. After enough
            // rounds a port that never answers (a hung process) no longer keeps a node that knows
            // peers from standing; a node that knows nobody never elects itself alone on patience.
            const unknown = timedOut.filter((url) => !isMemberAddress(url));
            const knowsPeers = d.snapshot().knownMemberCount > 1;
            const clean = o.membership.mode === 'static' || unknown.length === 0 || (knowsPeers && round >= VIEW_PATIENCE_ROUNDS);
            if (unknown.length > 0) logger.debug('cluster.discovery_timeouts', { round, addresses: unknown.slice(0, 5), count: unknown.length });
            d.dispatch({ type: 'discoveryRound', clean });
            if (round !== 1) return;
            readiness = 'settling';
            // A member that found but never links (frozen, refusing) must not hold elections off.
            cancelSettle = timers.after(o.discovery.probeTimeoutMs + o.heartbeatIntervalMs, becomeReady);
            maybeReady();
          },
          // Static members named host:port are probed directly, wherever they listen.
          extraTargets: () => staticMembers.filter((id) => id !== o.serverId && isProbeable(id)),
        },
        o.clock,
        timers,
        logger,
        probeWith(o.tls),
      );
      d.start();
      // A static member list is the whole truth: a list of one may elect itself without asking around.
      if (o.membership.mode === 'static') d.dispatch({ type: 'discoveryRound', clean: true });
      discovery.start();
      maintain();
      if (o.upstreamUrl) proxy.setUpstream(o.upstreamUrl);
      logger.debug('cluster.started', { mode: o.mode, membership: o.membership.mode, clusterUrl: s.clusterUrl });
    },

    handleUpgrade(request, socket, head) {
      if (!links) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      links.handleUpgrade(request, socket, head);
    },

    meta() {
      const view = snapshot();
      return {
        id: o.clusterId,
        membershipMode: o.membership.mode,
        membershipFingerprint: fingerprint,
        role: view.role,
        term: view.term,
        leaderId: view.leaderId ?? '',
        leaderUrl: view.leaderUrl ?? '',
        leaseDurationMs: o.leaseDurationMs,
        knownMemberCount: view.knownMemberCount,
        reachableMemberCount: view.reachableMemberCount,
        quorumSize: view.quorumSize,
        hasQuorum: view.hasQuorum,
      };
    },

    features: () => ({ upstreamProxy: true, clusterControl: true }),

    onLeaderChange(listener) {
      leaderListeners.add(listener);
      return () => leaderListeners.delete(listener);
    },

    onConfigError(listener) {
      configListeners.add(listener);
      return () => configListeners.delete(listener);
    },

    proxyStatus: () => proxy.status(),
    onProxyStatus: (listener) => proxy.onStatus(listener),

    close() {
      closing ??= (async () => {
        // Resign first: the frames go out before the links close, so the others elect at once.
        driver?.stop();
        discovery?.close();
        cancelMaintenance?.();
        await proxy.close();
        rpc.close();
        await links?.close();
        timers.close();
        leaderListeners.clear();
        configListeners.clear();
        logger.debug('cluster.closed');
      })();
      return closing;
    },
  };
}

/**
 * Discovery rounds after which a node that knows peers stands for election even if some non-member
 * address never answered in time (10 rounds: 20 s at the default interval).
 */
const VIEW_PATIENCE_ROUNDS = 10;

interface MdpErrorShape {
  readonly mdpError: { readonly code: string; readonly message: string };
}

function isMdpError(value: unknown): value is MdpErrorShape {
  return typeof value === 'object' && value !== null && 'mdpError' in value;
}

function knownCode(code: string): ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : 'handler_error';
}

function isProbeable(id: string): boolean {
  try {
    normalizeTarget(id);
    return /:\d+$/.test(id);
  } catch {
    return false;
  }
}
