/**
 * The fleet on NATS (SPEC §16) as a feature: the node joins the bus of `@mdp/bus-nats` once it
 * listens, hands the router the other nodes' clients (core's `RemoteDirectory`, remote.ts), and
 * announces its own as they come, change and go. Every way in then reaches every client of the
 * fleet; no node relays for the others.
 *
 *   start ──▶ bus made (node id = server id), directory attached to the router, router events followed
 *   started ─▶ bus.start(): connect, JetStream buckets, watch (a refusal stops the server: exit 1)
 *   router: registered / updated ──▶ bus.announce      unregistered ──▶ bus.withdraw
 *   bus: replaced(id) ──▶ close this node's session of id with 4000 (SPEC §4.3, fleet-wide)
 *   bus: call / catalog for one of our clients ──▶ router.invokeHere / its descriptor
 *   close ──▶ detach, bus.close() (our keys deleted: other nodes drop our clients at once)
 *
 * Listed before the sessions feature, so it closes after it: the calls drained there may still go
 * out over the bus, and our clients leave the directory as their sessions end.
 *
 * The NATS client (about a fifth of the binary's code) is imported by `prepare`, before the server
 * binds, and only in bus mode: a server without `--bus` (and `mdp-server mcp`'s start) never loads it.
 */
import {
  decodeHttpRelay,
  decodeHttpRelayAnswer,
  encodeHttpRelay,
  encodeHttpRelayAnswer,
  prefixFor,
  type BusAuth,
  type BusMetrics,
  type BusTls,
  type NatsBus,
  type RemoteClient as BusClient,
} from '@mdp/bus-nats/lite';
import type { ClientEvent, RemoteClient, RemoteDirectory } from '@mdp/core';
import type { ClusterView } from '@mdp/protocol';
import type { LoopRelay, RelayedAnswer, RelayedRequest } from '@mdp/transport-http-loop';
import type { ListeningInfo, ServerContext, ServerFeature } from '../feature.js';

/** How a server joins a fleet on NATS (`--bus` and its settings). */
export interface MdpBusOptions {
  /** NATS server URLs, `nats://HOST:PORT` or `tls://HOST:PORT`: one, or several of a NATS cluster. */
  readonly servers: readonly string[];
  /** Subject and bucket prefix of the fleet. Default: made from the cluster id (`prefixFor`). */
  readonly prefix?: string;
  /** One of a creds file, a token, a user and password. Default: none. */
  readonly auth?: BusAuth;
  /** TLS to NATS (`true`: the system's CAs). `tls://` URLs need it too. Default: off. */
  readonly tls?: BusTls | boolean;
  /** A dead node's clients are gone from every other node within this long, ms (1000–60000). Default 5000. */
  readonly ttlMs?: number;
  /** JetStream replicas of the directory's buckets: 1, 3 or 5. Default 1. */
  readonly replicas?: number;
  /** Wait between reconnect attempts, ms (plus up to 1 s of jitter). Default 1000. */
  readonly reconnectWaitMs?: number;
  /** How long the first connect may take before the server gives up, ms. Default 10000. */
  readonly connectTimeoutMs?: number;
}

/** What /mdp/meta says of the fleet, beside the seed's fields. */
export interface FleetSummary {
  readonly bus: 'nats';
  readonly prefix: string;
  readonly nodeId: string;
  readonly connected: boolean;
  /** Other live nodes. */
  readonly nodes: number;
}

export interface BusFeature extends ServerFeature {
  /** The bus, once the server listens. */
  readonly bus: NatsBus | undefined;
  /** Why the node is not ready for the fleet's sake (the bus is down), or undefined. */
  notReady(): string | undefined;
  /** The bus's figures for /metrics, once it exists. */
  metrics(): BusMetrics | undefined;
  /** The cluster object of /mdp/meta in bus mode: every node answers for every client. */
  view(standalone: ClusterView): ClusterView;
  summary(): FleetSummary | undefined;
  /**
   * The relay of HTTP loop requests between nodes (SPEC §16.7), given what answers the requests
   * other nodes pass on (the transport's `answerRelayed`): sessions opened here are held on the bus,
   * requests for others' sessions go to their holder.
   */
  loopRelay(answer: (request: RelayedRequest, signal: AbortSignal) => Promise<RelayedAnswer>): LoopRelay;
}

/** Why `bus` cannot run with these cluster options, or undefined: a fleet has no discovery, election or hub. */
export function busClusterProblem(options: {
  readonly bus?: MdpBusOptions | undefined;
  readonly cluster?: { readonly mode?: string } | undefined;
}): string | undefined {
  if (!options.bus || options.cluster === undefined || options.cluster.mode === 'standalone') return undefined;
  return `bus mode excludes the cluster's discovery and election: cluster mode ${options.cluster.mode ?? 'auto'} cannot run with bus (leave cluster out, or make it standalone)`;
}

export interface BusFeatureOptions {
  readonly bus: MdpBusOptions;
  /** The cluster id: the default prefix. */
  readonly clusterId: string;
}

export function busFeature(ctx: ServerContext, options: BusFeatureOptions): BusFeature {
  const { router, logger } = ctx;
  const prefix = options.bus.prefix ?? prefixFor(options.clusterId);
  let nats: typeof import('@mdp/bus-nats') | undefined;
  let bus: NatsBus | undefined;
  let starting: Promise<void> | undefined;
  const undo: Array<() => void> = [];

  const announce = (event: ClientEvent): void => {
    const node = bus;
    if (!node) return;
    if (event.type === 'unregistered') {
      const { clientId } = event;
      // A newer session of this node may register the id in the same turn (a replacement here):
      // then it stays announced, and the bus is not told it left.
      queueMicrotask(() => {
        if (!router.hasClient(clientId)) node.withdraw(clientId);
      });
      return;
    }
    const { client } = event;
    try {
      node.announce({
        descriptor: client.descriptor,
        principal: client.principal,
        registeredAt: client.registeredAt,
        transport: client.transportKind,
        secure: client.secure,
        authSource: client.authSource,
        origin: client.origin,
      });
    } catch (error) {
      // Refused before it registered (registrationProblem); anything else is a bug worth a line.
      logger.error('bus.announce_failed', { clientId: client.id, error });
    }
  };

  return {
    name: 'bus',
    get bus() {
      return bus;
    },
    async prepare() {
      nats ??= await import('@mdp/bus-nats');
    },
    start(info: ListeningInfo) {
      if (!nats) throw new Error('the fleet bus started before its module was loaded (prepare)');
      const made = nats.createNatsBus(
        {
          servers: options.bus.servers,
          nodeId: info.serverId,
          prefix,
          ...(options.bus.auth ? { auth: options.bus.auth } : {}),
          ...(options.bus.tls !== undefined ? { tls: options.bus.tls } : {}),
          ...(options.bus.ttlMs !== undefined ? { ttlMs: options.bus.ttlMs } : {}),
          ...(options.bus.replicas !== undefined ? { replicas: options.bus.replicas } : {}),
          ...(options.bus.reconnectWaitMs !== undefined ? { reconnectWaitMs: options.bus.reconnectWaitMs } : {}),
          ...(options.bus.connectTimeoutMs !== undefined ? { connectTimeoutMs: options.bus.connectTimeoutMs } : {}),
          maxMessageBytes: ctx.maxMessageBytes,
          callTimeoutMs: router.options.invocationTimeoutMs,
          logger,
        },
        {
          // Another node's caller: this node's client only (never back out to the bus).
          call: (clientId, call, { timeoutMs, signal }) =>
            router.invokeHere(clientId, call.method, call.path, {
              query: call.query,
              body: call.body,
              headers: call.headers,
              auth: call.auth,
              timeoutMs,
              signal,
              route: 'bus',
            }),
          descriptor: (clientId) => router.getClient(clientId)?.descriptor,
          replaced: (clientId, byNode) => {
            if (router.closeClient(clientId, 'replaced')) logger.info('bus.client_replaced', { clientId, byNode });
          },
        },
      );
      bus = made;
      undo.push(router.fleet.attach(directoryOf(made, nats.announcementProblem)));
      undo.push(router.onClientEvent(announce));
      for (const client of router.listClients()) announce({ type: 'registered', client });
    },
    started() {
      const node = bus;
      if (!node) return Promise.resolve();
      starting ??= node.start().then(() => {
        logger.info('bus.joined', { prefix, nodeId: node.nodeId, servers: options.bus.servers.map(redactUserInfo) });
      });
      return starting;
    },
    notReady() {
      if (!bus) return 'fleet bus not started';
      if (!bus.ready) return 'fleet bus (NATS) not connected';
      return undefined;
    },
    metrics: () => bus?.metrics(),
    view(standalone) {
      const figures = bus?.metrics();
      const members = 1 + (figures?.nodes ?? 0);
      const reachable = figures?.connected ? members : 1;
      // The seed's fields keep their meaning: a majority of the nodes known, and whether those this
      // node reaches make one (a node cut off from NATS reaches only itself).
      const quorumSize = Math.floor(members / 2) + 1;
      return {
        ...standalone,
        // Each node answers for every client of the fleet: each is its own leader, and none is a hub.
        membershipFingerprint: `nats-bus:${prefix}`,
        knownMemberCount: members,
        reachableMemberCount: reachable,
        quorumSize,
        hasQuorum: reachable >= quorumSize,
      };
    },
    loopRelay(answer) {
      /** Sessions held on the bus (their release), and those being held right now. */
      const held = new Map<string, () => void>();
      const holding = new Set<string>();
      const handler = async (payload: Uint8Array, signal: AbortSignal): Promise<Uint8Array> => {
        const request = decodeHttpRelay(payload);
        if (!request) return encodeHttpRelayAnswer({ status: 400, headers: {}, body: JSON.stringify({ error: 'Malformed relayed request' }) });
        return encodeHttpRelayAnswer(await answer(request, signal));
      };
      return {
        async hold(sessionId) {
          holding.add(sessionId);
          try {
            await starting;
            const node = bus;
            if (!node) throw new Error('the fleet bus is not started');
            const release = await node.holdSession(sessionId, handler);
            // Ended while it was being held: let go at once.
            if (holding.has(sessionId)) held.set(sessionId, release);
            else release();
          } finally {
            holding.delete(sessionId);
          }
        },
        release(sessionId) {
          holding.delete(sessionId);
          held.get(sessionId)?.();
          held.delete(sessionId);
        },
        async forward(sessionId, request, { timeoutMs, signal }) {
          const node = bus;
          if (!node) return { ok: false, reason: 'not_ready', message: 'The fleet bus is not started', retryAfterMs: 1000 };
          const result = await node.relayToSession(sessionId, encodeHttpRelay(request), { timeoutMs, ...(signal ? { signal } : {}) });
          if (!result.ok) return result;
          const decoded = decodeHttpRelayAnswer(result.payload);
          return decoded
            ? { ok: true, answer: decoded }
            : { ok: false, reason: 'failed', message: 'The node holding the session sent an answer that is not one' };
        },
      };
    },
    summary() {
      if (!bus) return undefined;
      const figures = bus.metrics();
      return { bus: 'nats', prefix, nodeId: bus.nodeId, connected: figures.connected, nodes: figures.nodes };
    },
    async close() {
      for (const off of undo.splice(0)) off();
      await bus?.close();
    },
  };
}

/** The bus as core's fleet directory (remote.ts). */
function directoryOf(bus: NatsBus, announcementProblem: typeof import('@mdp/bus-nats').announcementProblem): RemoteDirectory {
  return {
    resolve: (clientId) => remoteOf(bus.resolve(clientId)),
    *list() {
      for (const client of bus.remoteClients()) yield remoteOf(client) as RemoteClient;
    },
    descriptor: (clientId) => bus.descriptor(clientId),
    cachedDescriptor: (clientId) => bus.cachedDescriptor(clientId),
    call: (clientId, call, options) => bus.call(clientId, call, options),
    onChange: (listener) => bus.onChange(listener),
    registrationProblem: (clientId, principal) => announcementProblem({ descriptor: { id: clientId, name: '', paths: [] }, principal }),
  };
}

function remoteOf(client: BusClient | undefined): RemoteClient | undefined {
  if (!client) return undefined;
  return {
    id: client.clientId,
    node: client.node,
    principal: client.principal,
    registeredAt: client.registeredAt,
    digest: client.digest,
    transport: client.transport,
    secure: client.secure,
    authSource: client.authSource,
    origin: client.origin,
  };
}

/** A NATS URL without its user info (a password may be in it), for logs. */
export function redactUserInfo(url: string): string {
  return url.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1…@');
}
