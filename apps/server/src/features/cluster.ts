/**
 * Cluster membership (SPEC §10): the node is built once the port, hence the default server id, is
 * known; it takes `/mdp/cluster` upgrades and gives `/mdp/meta` its cluster view. Without cluster
 * options the node is standalone (leader of one, term 0).
 *
 * `hostApi` is the host contract (SPEC §12) for the other features (host API, MCP), given to them when
 * they are built: one stable object that answers from the router until the node starts and from the
 * node afterwards (through the leader, on a follower). Its change listeners move along.
 */
import type { TLSSocket } from 'node:tls';
import { createLocalHost, systemClock, type HeaderMap, type HostApi, type Logger, type Viewer } from '@mdp/core';
import { standaloneClusterView, type ClusterView, type FeaturesView } from '@mdp/protocol';
import {
  CLUSTER_DEFAULTS,
  checkPortRelease,
  portReleaseRequest,
  type ClusterNode,
  type MirrorPeer,
  type PeerTls,
  type PortReleaseCheck,
  type PortReleaseClaim,
  type PortReleaseRequest,
} from '@mdp/cluster';
import type { ListeningInfo, ServerContext, ServerFeature } from '../feature.js';
import { clusterSecretsOf, createServerCluster, type MdpClusterOptions } from '../cluster.js';
import { peerTlsOf, type TlsState } from '../tls.js';

const NOT_FOUND = 'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';
const FORBIDDEN = 'HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';
/** Refused peers remembered so as to log each once; past this many, the rest are not logged. */
const MAX_REPORTED = 1000;

export interface ClusterFeature extends ServerFeature {
  /** Set once the server listens. */
  readonly node: ClusterNode | undefined;
  /** The host contract: the router's before the node starts, the node's after. */
  readonly hostApi: HostApi;
  /** The `cluster` object of the metadata document. */
  view(info: ListeningInfo): ClusterView;
  /** The `features` object of the metadata document. */
  features(): FeaturesView;
  /** Whether `id` is a server id of this cluster (false before the node starts, and standalone). */
  isServerId(id: string): boolean;
  /** The member an upgrade proves it is a mirror link of (none before the node starts, and standalone). */
  mirrorPeer(headers: HeaderMap): MirrorPeer | undefined;
  /** The body of a request asking a member to give a port back, proving this server's cluster secret. */
  portReleaseRequest(claim: Omit<PortReleaseClaim, 'timestamp'>): PortReleaseRequest;
  /** Whether a request asking this server to give a port back is proven (`checkPortRelease`); refused before the node starts. */
  checkPortRelease(body: unknown): PortReleaseCheck;
}

export interface ClusterFeatureOptions {
  readonly clusterId: string;
  readonly cluster: MdpClusterOptions | undefined;
  readonly authTokens: readonly string[] | undefined;
  /** The listener's TLS: peers are dialled with it and, with peer certificates, must show one from its CA. */
  readonly tls?: TlsState | undefined;
  /** What a peer of a link, or the hub of a mirror, may leave unread (the server's websocket limits); default the cluster's own. */
  readonly backlog?: { readonly maxBufferedBytes: number; readonly stallTimeoutMs: number };
}

/** Throws when the cluster secret's file cannot be used (before anything listens). */
export function clusterFeature(ctx: ServerContext, options: ClusterFeatureOptions): ClusterFeature {
  const secrets = clusterSecretsOf(options.cluster, options.authTokens);
  let node: ClusterNode | undefined;
  const refusals = new Set<string>();
  const hostApi = switchingHost(createLocalHost(ctx.router, { tenancy: ctx.tenancy }), ctx.logger);
  return {
    name: 'cluster',
    get node() {
      return node;
    },
    hostApi,
    view: (info) =>
      node?.meta() ??
      standaloneClusterView(options.clusterId, info.serverId, info.urls.ws, options.cluster?.leaseDurationMs ?? CLUSTER_DEFAULTS.leaseDurationMs),
    features: () => node?.features() ?? { upstreamProxy: false, clusterControl: false },
    isServerId: (id) => node?.isServerId(id) ?? false,
    mirrorPeer: (headers) => node?.mirrorPeer(headers),
    // Wall-clock time: the other end reads the timestamp (both run on the machine whose port it is).
    portReleaseRequest: (claim) => portReleaseRequest(secrets[0], options.clusterId, { ...claim, timestamp: systemClock.wallNow() }),
    checkPortRelease(body) {
      if (!node || node.mode === 'standalone') return { ok: false, status: 403, reason: 'this server is in no cluster' };
      return checkPortRelease(body, { secrets, clusterId: options.clusterId, self: node.serverId, now: systemClock.wallNow() });
    },
    upgrade(request, socket, head, path) {
      if (path !== '/mdp/cluster') return false;
      const { tls } = options;
      const peer = request.socket as Partial<TLSSocket>;
      if (tls?.verifiesPeers && peer.authorized !== true) {
        // A member shows a client certificate from the cluster's CA; anyone else is no peer.
        const reason = String(peer.authorizationError ?? 'no client certificate');
        const key = `${peer.remoteAddress}|${reason}`;
        // Once per address and reason: a refused node keeps dialing.
        if (refusals.size < MAX_REPORTED && !refusals.has(key)) {
          refusals.add(key);
          ctx.logger.warn('cluster.peer_certificate_refused', { remote: peer.remoteAddress, reason });
        }
        socket.end(FORBIDDEN);
        return true;
      }
      if (node) node.handleUpgrade(request, socket, head);
      else socket.end(NOT_FOUND);
      return true;
    },
    start(info) {
      node = createServerCluster({
        router: ctx.router,
        serverId: info.serverId,
        clusterId: options.clusterId,
        options: options.cluster,
        authTokens: options.authTokens,
        ...(options.tls ? { tls: tlsSource(options.tls) } : {}),
        secrets,
        ...(options.backlog ? { backlog: options.backlog } : {}),
        maxMessageBytes: ctx.maxMessageBytes,
        inflight: ctx.inflight,
        tenancy: ctx.tenancy,
        logger: ctx.logger.child({ serverId: info.serverId }),
      });
      node.start({ wsUrl: info.urls.ws, clusterUrl: info.urls.cluster, metaUrl: info.urls.meta });
      hostApi.use(node.hostApi);
    },
    // A leader resigns while its links are still up.
    close: () => node?.close(),
  };
}

/** The TLS the node dials with, read at every dial: a reload reaches the next dial. */
function tlsSource(tls: TlsState): () => PeerTls {
  return () => peerTlsOf(tls.current);
}

/**
 * A host that answers from `initial` until `use` hands it another. The change listeners of each
 * viewer are subscribed to whichever host answers (once for all of them, as that viewer) and hear
 * one change when it switches.
 */
export function switchingHost(initial: HostApi, logger: Logger): HostApi & { use(next: HostApi): void } {
  let target = initial;
  /** The listeners of each viewer (ALL: the host itself), and their one subscription to the answering host. */
  const groups = new Map<string | symbol, { readonly viewer: Viewer | undefined; readonly listeners: Set<() => void>; off: () => void }>();
  const fire = (listeners: Set<() => void>): void => {
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch (error) {
        logger.error('host.change_listener_failed', { error });
      }
    }
  };
  return {
    listClients: (request, listOptions) => target.listClients(request, listOptions),
    listPaths: (request, listOptions) => target.listPaths(request, listOptions),
    callPath: (request, callOptions) => target.callPath(request, callOptions),
    callPaths: (request, callOptions) => target.callPaths(request, callOptions),
    onChange(listener, viewer) {
      const key = viewer === undefined ? ALL : (viewer.principal ?? NOBODY);
      let group = groups.get(key);
      if (!group) {
        const listeners = new Set<() => void>();
        group = { viewer, listeners, off: target.onChange(() => fire(listeners), viewer) };
        groups.set(key, group);
      }
      // A wrapper per subscription: the same function subscribed twice is unsubscribed one at a time.
      const entry = (): void => listener();
      const mine = group;
      mine.listeners.add(entry);
      return () => {
        if (!mine.listeners.delete(entry) || mine.listeners.size > 0) return;
        mine.off();
        groups.delete(key);
      };
    },
    use(next) {
      if (next === target) return;
      target = next;
      for (const group of groups.values()) {
        group.off();
        group.off = target.onChange(() => fire(group.listeners), group.viewer);
      }
      for (const group of [...groups.values()]) fire(group.listeners);
    },
  };
}

/** Subscription keys: the host itself, and a viewer without a principal. */
const ALL = Symbol('all');
const NOBODY = Symbol('nobody');
