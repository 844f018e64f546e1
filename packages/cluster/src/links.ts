/**
 * Every control link of one node: accepting (`handleUpgrade` on /mdp/cluster), dialing peers with
 * back-off, pinging, and telling the node when a peer becomes reachable or unreachable. A peer is
 * "up" while at least one open link to it exists (both sides may dial, so there can be two).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { closeReason, countInboundFrames, type InflightBudget, type Logger } from '@mdp/core';
import type { ClusterHello, ClusterMessage, SerializedError } from '@mdp/protocol';
import type { Clock, TimerSet } from './clock.js';
import type { BacklogLimits } from './backlog.js';
import { ControlLink, LINK_CLOSE } from './control-link.js';
import { dialTls, type PeerTlsSource } from './tls.js';
import type { ResolvedOptions } from './options.js';

/** Test seam: links a test has cut. A blocked pair's links are dropped and not re-established. */
export interface LinkFaults {
  isBlocked(from: string, to: string): boolean;
  /** Called when the set of blocked pairs changes; returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
}

/** Raw answers to an upgrade this node does not take: no cluster control here, or not (yet, still) running. */
export const UPGRADE_NOT_FOUND = 'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';
export const UPGRADE_UNAVAILABLE = 'HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';
/** The answer to an upgrade that carries an `Origin`: a browser's (peers never send one). */
export const UPGRADE_FROM_BROWSER = 'HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

/** Time the accepted links get to finish their closing handshakes at shutdown, ms. */
const CLOSE_GRACE_MS = 1000;

/**
 * The in-flight budget needs the room an accepted link holds: its peer is told why (1013) and its
 * socket destroyed at once, which frees what it held; the link's own close handling does the rest.
 */
function evictLink(ws: WebSocket, reason: string): void {
  if (ws.readyState === WebSocket.OPEN) ws.close(LINK_CLOSE.tryAgainLater, closeReason(reason));
  ws.terminate();
}

export interface LinkManagerOptions {
  readonly selfId: string;
  readonly clock: Clock;
  readonly timers: TimerSet;
  readonly logger: Logger;
  /** Ping period for every link, ms (the heartbeat interval). */
  readonly pingIntervalMs: number;
  /** A link silent this long (no frame, no pong) is dropped, ms. */
  readonly silenceTimeoutMs: number;
  /** A link must finish its hello exchange within this, ms. */
  readonly handshakeTimeoutMs: number;
  /** First and largest wait before re-dialing an address that failed, ms. */
  readonly redialMinMs: number;
  readonly redialMaxMs: number;
  /** Largest control frame, bytes. */
  readonly maxPayloadBytes: number;
  /** What a peer may leave unread (backlog.ts). Default `BACKLOG_DEFAULTS`. */
  readonly backlog?: BacklogLimits;
  /** The node's budget on unfinished messages: what accepted links send of one counts against it. Default: not counted. */
  readonly inflight?: InflightBudget;
  readonly faults?: LinkFaults;
  /** TLS of the links this node dials. */
  readonly tls?: PeerTlsSource;
  /** Peers to keep a link to: every ping round dials those without one (back-off applies). */
  wanted(): Iterable<{ readonly id: string; readonly clusterUrl: string }>;
  /** Our hello, addressed to `to` (the peer's server id, when known). */
  hello(to: string | undefined): ClusterMessage;
  check(hello: ClusterHello, direction: 'in' | 'out'): string | undefined;
}

export interface LinkEvents {
  up(peerId: string, hello: ClusterHello): void;
  down(peerId: string): void;
  message(peerId: string, message: ClusterMessage): void;
  alive(peerId: string): void;
  /** A hello we sent was refused with this reason (close 1008 from the peer). */
  refused(url: string, reason: string): void;
}

interface DialState {
  failures: number;
  nextAt: number;
  link: ControlLink | undefined;
}

/**
 * The links of a member node, timed from its options: pings every heartbeat, a link silent for three
 * leases dropped, re-dials backing off from half a heartbeat to a lease (or a discovery interval).
 */
export function linksFor(
  o: ResolvedOptions,
  timers: TimerSet,
  logger: Logger,
  faults: LinkFaults | undefined,
  node: Pick<LinkManagerOptions, 'wanted' | 'hello' | 'check'>,
  events: LinkEvents,
): LinkManager {
  const options: LinkManagerOptions = {
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
    backlog: o.backlog,
    ...(o.inflight ? { inflight: o.inflight } : {}),
    ...(faults ? { faults } : {}),
    ...(o.tls ? { tls: o.tls } : {}),
    ...node,
  };
  return new LinkManager(options, events);
}

export class LinkManager {
  private readonly wss: WebSocketServer;
  private readonly links = new Set<ControlLink>();
  private readonly byPeer = new Map<string, Set<ControlLink>>();
  private readonly dials = new Map<string, DialState>();
  private cancelPing: (() => void) | undefined;
  private unsubscribeFaults: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly options: LinkManagerOptions,
    private readonly events: LinkEvents,
  ) {
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayloadBytes });
    this.wss.on('error', (error) => options.logger.warn('cluster.ws_server_error', { error }));
  }

  start(): void {
    this.schedulePing();
    this.unsubscribeFaults = this.options.faults?.subscribe(() => this.applyFaults());
  }

  /**
   * Take over an HTTP upgrade for /mdp/cluster. One with an `Origin` header comes from a web page
   * (browsers always send it, peers never do) and is refused: a page must not reach cluster RPC.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (request.headers.origin !== undefined) {
      this.options.logger.debug('cluster.upgrade_from_browser', { origin: request.headers.origin });
      socket.end(UPGRADE_FROM_BROWSER);
      return;
    }
    if (this.closed) {
      socket.end(UPGRADE_UNAVAILABLE);
      return;
    }
    try {
      this.wss.handleUpgrade(request, socket, head, (ws) => {
        const inflight = this.options.inflight;
        if (inflight) {
          // Anyone who reaches the port may open a link: what it sends of a frame counts until complete.
          const counted = countInboundFrames(socket, inflight, ws, evictLink);
          // `ws` discards what still arrives after an error it closed the link for.
          ws.once('error', () => counted.stop());
        }
        this.adopt(ws, 'in', undefined);
      });
    } catch (error) {
      this.options.logger.warn('cluster.upgrade_failed', { error });
      socket.destroy();
    }
  }

  /** Dial `url` unless a link to `peerId` is up, a dial to it is in flight, or it failed too recently. */
  connect(url: string, peerId: string | undefined): void {
    if (this.closed) return;
    if (peerId !== undefined && (this.isUp(peerId) || this.isBlocked(peerId))) return;
    const dial = this.dials.get(url) ?? { failures: 0, nextAt: 0, link: undefined };
    this.dials.set(url, dial);
    if (dial.link || this.options.clock.now() < dial.nextAt) return;
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, { maxPayload: this.options.maxPayloadBytes, handshakeTimeout: this.options.handshakeTimeoutMs, ...dialTls(this.options.tls) });
    } catch (error) {
      this.options.logger.warn('cluster.dial_failed', { url, error });
      this.failedDial(dial);
      return;
    }
    dial.link = this.adopt(ws, 'out', url, peerId);
  }

  isUp(peerId: string): boolean {
    return (this.byPeer.get(peerId)?.size ?? 0) > 0;
  }

  send(peerId: string, message: ClusterMessage): boolean {
    if (this.isBlocked(peerId)) {
      this.dropPeer(peerId);
      return false;
    }
    for (const link of this.byPeer.get(peerId) ?? []) if (link.send(message)) return true;
    return false;
  }

  /** Why an answer to `peerId` would be refused now (its link is behind, backlog.ts), or undefined. */
  refusal(peerId: string): SerializedError | undefined {
    for (const link of this.byPeer.get(peerId) ?? []) return link.refusal();
    return undefined;
  }

  broadcast(message: ClusterMessage): void {
    for (const peerId of [...this.byPeer.keys()]) this.send(peerId, message);
  }

  /** Close every link and refuse new ones. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelPing?.();
    this.unsubscribeFaults?.();
    for (const link of [...this.links]) link.close(LINK_CLOSE.goingAway.code, LINK_CLOSE.goingAway.reason);
    this.links.clear();
    this.byPeer.clear();
    this.dials.clear();
    // `ws` waits 30 s for a closing handshake; a peer that never answers (or one refused a moment
    // ago, already gone from `links`) must not hold up shutdown that long.
    const grace = setTimeout(() => {
      for (const ws of this.wss.clients) ws.terminate();
    }, CLOSE_GRACE_MS);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    clearTimeout(grace);
  }

  private adopt(ws: WebSocket, direction: 'in' | 'out', url: string | undefined, peerId?: string): ControlLink {
    const { logger, clock, timers } = this.options;
    const link: ControlLink = new ControlLink(
      ws,
      direction,
      url,
      peerId,
      {
        hello: (to) => this.options.hello(to),
        check: (hello) => {
          if (this.isBlocked(hello.serverId)) return 'link blocked';
          return this.options.check(hello, direction);
        },
        onOpen: (l) => this.opened(l),
        onMessage: (l, message) => {
          if (l.peerId === undefined) return;
          if (this.isBlocked(l.peerId)) return this.dropPeer(l.peerId);
          this.events.message(l.peerId, message);
        },
        onAlive: (l) => {
          if (l.peerId !== undefined && this.isUp(l.peerId)) this.events.alive(l.peerId);
        },
        onClose: (l, code, reason) => {
          cancelHandshake();
          this.lost(l, code, reason);
        },
      },
      () => clock.now(),
      logger,
      this.options.backlog,
      this.options.maxPayloadBytes,
    );
    this.links.add(link);
    // A peer that never completes its hello does not get to hold a socket.
    const cancelHandshake = timers.after(this.options.handshakeTimeoutMs, () => {
      if (link.state === 'handshake') link.close(LINK_CLOSE.policy, 'No clusterHello in time');
    });
    return link;
  }

  private opened(link: ControlLink): void {
    const peerId = link.peerId as string;
    if (link.url) {
      const dial = this.dials.get(link.url);
      if (dial) dial.failures = 0;
    }
    const set = this.byPeer.get(peerId) ?? new Set<ControlLink>();
    const first = set.size === 0;
    set.add(link);
    this.byPeer.set(peerId, set);
    this.options.logger.debug('cluster.link_open', { peerId, direction: link.direction, links: set.size });
    if (first) this.events.up(peerId, link.peerHello as ClusterHello);
    else this.events.message(peerId, link.peerHello as ClusterHello);
  }

  private lost(link: ControlLink, code: number, reason: string): void {
    this.links.delete(link);
    if (link.url) {
      const dial = this.dials.get(link.url);
      if (dial && dial.link === link) {
        dial.link = undefined;
        // Refused or never opened: wait before trying that address again.
        if (link.peerId === undefined || link.closedBecause !== undefined || code === LINK_CLOSE.policy) this.failedDial(dial);
      }
      if (code === LINK_CLOSE.policy && link.closedBecause === undefined && !this.closed) {
        this.events.refused(link.url, reason);
      }
    }
    const peerId = link.peerId;
    if (peerId === undefined) return;
    const set = this.byPeer.get(peerId);
    if (!set?.delete(link)) return;
    this.options.logger.debug('cluster.link_closed', { peerId, code, reason, links: set.size });
    if (set.size === 0) {
      this.byPeer.delete(peerId);
      if (!this.closed) this.events.down(peerId);
    }
  }

  private failedDial(dial: DialState): void {
    dial.failures += 1;
    const wait = Math.min(this.options.redialMaxMs, this.options.redialMinMs * 2 ** (dial.failures - 1));
    dial.nextAt = this.options.clock.now() + wait;
  }

  private schedulePing(): void {
    this.cancelPing = this.options.timers.after(this.options.pingIntervalMs, () => {
      this.schedulePing();
      this.pingAll();
      for (const peer of this.options.wanted()) if (!this.isUp(peer.id)) this.connect(peer.clusterUrl, peer.id);
    });
  }

  /** Ping every link (pongs keep reachability fresh) and drop the ones silent for too long. */
  private pingAll(): void {
    const now = this.options.clock.now();
    for (const link of [...this.links]) {
      if (link.state !== 'open') continue;
      if (now - link.lastHeardAt > this.options.silenceTimeoutMs) {
        this.options.logger.info('cluster.link_silent', { peerId: link.peerId, silentMs: Math.round(now - link.lastHeardAt) });
        link.terminate();
      } else {
        link.ping();
      }
    }
  }

  private isBlocked(peerId: string): boolean {
    return this.options.faults?.isBlocked(this.options.selfId, peerId) ?? false;
  }

  private dropPeer(peerId: string): void {
    for (const link of [...(this.byPeer.get(peerId) ?? [])]) link.terminate();
  }

  private applyFaults(): void {
    for (const link of [...this.links]) if (link.peerId !== undefined && this.isBlocked(link.peerId)) link.terminate();
  }
}
