/**
 * One mirrored client: an ordinary MDP websocket to the upstream hub that registers
 * `<serverId>.<clientId>` with `metadata.mdpProxy` and forwards each `callClient` it receives to the
 * local client through the router. A dropped link is re-established with back-off and the client
 * registered again. Nothing thrown in here reaches the event loop.
 */
import type { RawData } from 'ws';
import { WebSocket } from 'ws';
import { redactUrl, serializeError, type ClientInfo, type Logger, type Router } from '@mdp/core';
import {
  CLOSE_CODES,
  UNSENDABLE_DATA_ERROR,
  mirroredId,
  type MdpProxyMetadata,
  parseServerMessage,
  type CallClientMessage,
  type ClientDescriptor,
  type ClientToServerMessage,
  type PathDescriptor,
} from '@mdp/protocol';
import { BACKLOG_DEFAULTS, Backlog, unsentBytes, type BacklogLimits } from './backlog.js';
import type { Clock, TimerSet } from './clock.js';
import { MIRROR_PROOF_HEADER } from './mirror-proof.js';
import { dialTls, type PeerTlsSource } from './tls.js';

export interface MirrorOptions {
  readonly router: Router;
  readonly serverId: string;
  readonly wsUrl: string;
  /** The hub's server id (from its metadata), which a proof names. */
  readonly upstreamServerId: string;
  readonly clock: Clock;
  readonly timers: TimerSet;
  readonly logger: Logger;
  readonly random: () => number;
  /** First and largest wait before reconnecting a dropped mirror link, ms. */
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  /** Time allowed for the upstream websocket to open, ms. */
  readonly connectTimeoutMs: number;
  readonly maxPayloadBytes: number;
  /** What the hub may leave unread on the link (backlog.ts). Default `BACKLOG_DEFAULTS`. */
  readonly backlog?: BacklogLimits;
  /** Sent with the websocket upgrade (credentials for a hub with an auth policy). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The `x-mdp-cluster-mirror` value that proves this link comes from a member (mirror-proof.ts),
   * made at every connect for the hub `to` and the mirrored client's `principal`. Without it (no
   * cluster secret) the link proves nothing, and a hub under an auth policy refuses the mirror.
   */
  readonly proof?: (to: string, principal: string | undefined) => string;
  /** TLS of the `wss` link to the hub. */
  readonly tls?: PeerTlsSource;
}

export function mirroredDescriptor(serverId: string, descriptor: ClientDescriptor, registeredAt?: number): ClientDescriptor {
  const mdpProxy: MdpProxyMetadata = { serverId, clientId: descriptor.id, ...(registeredAt === undefined ? {} : { registeredAt }) };
  return { ...descriptor, id: mirroredId(serverId, descriptor.id), metadata: { ...(descriptor.metadata ?? {}), mdpProxy } };
}

export class Mirror {
  readonly localId: string;
  readonly upstreamId: string;
  private descriptor: ClientDescriptor;
  /** Who the local client belongs to, under this server's auth policy. */
  private principal: string | undefined;
  /** When the local client registered here: the hub gives an id to the earliest of two principals. */
  private readonly registeredAt: number;
  private ws: WebSocket | undefined;
  private failures = 0;
  private cancelReconnect: (() => void) | undefined;
  private stopped = false;
  /** Registered on the current socket. */
  private registered = false;
  /** What the hub has not read on the current socket. */
  private backlog: Backlog | undefined;

  constructor(
    private readonly options: MirrorOptions,
    client: ClientInfo,
  ) {
    this.localId = client.id;
    this.upstreamId = mirroredId(options.serverId, client.id);
    this.descriptor = client.descriptor;
    this.principal = client.principal;
    this.registeredAt = client.registeredAt;
  }

  start(): void {
    this.connect();
  }

  /** The local client's descriptor changed: a catalog-only change is an updateClientCatalog. */
  update(client: ClientInfo): void {
    const before = this.descriptor;
    this.descriptor = client.descriptor;
    this.principal = client.principal;
    if (!this.registered) return; // the next registration carries it
    const { paths: _a, ...restBefore } = before;
    const { paths: _b, ...restAfter } = client.descriptor;
    if (JSON.stringify(restBefore) === JSON.stringify(restAfter)) {
      this.send({ type: 'updateClientCatalog', clientId: this.upstreamId, paths: client.descriptor.paths as PathDescriptor[] });
    } else {
      this.send({ type: 'registerClient', client: mirroredDescriptor(this.options.serverId, this.descriptor, this.registeredAt) });
    }
  }

  /** The local client is gone, or the upstream changes: unregister and close for good. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelReconnect?.();
    const ws = this.ws;
    this.ws = undefined;
    if (!ws) return;
    if (this.registered) this.sendOn(ws, { type: 'unregisterClient', clientId: this.upstreamId });
    this.registered = false;
    try {
      ws.close(CLOSE_CODES.normal, 'Mirror stopped');
    } catch {
      ws.terminate();
    }
  }

  private connect(): void {
    if (this.stopped) return;
    const { wsUrl, logger, proof } = this.options;
    let ws: WebSocket;
    try {
      const headers = { ...this.options.headers, ...(proof ? { [MIRROR_PROOF_HEADER]: proof(this.options.upstreamServerId, this.principal) } : {}) };
      ws = new WebSocket(wsUrl, {
        handshakeTimeout: this.options.connectTimeoutMs,
        maxPayload: this.options.maxPayloadBytes,
        ...(Object.keys(headers).length > 0 ? { headers } : {}),
        ...dialTls(this.options.tls),
      });
    } catch (error) {
      logger.warn('proxy.mirror_connect_failed', { clientId: this.localId, wsUrl: redactUrl(wsUrl), error });
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    this.registered = false;
    this.backlog = new Backlog(this.options.backlog ?? BACKLOG_DEFAULTS, () => this.options.clock.now());
    ws.on('open', () =>
      this.guard(() => {
        if (this.ws !== ws) return;
        this.registered = this.sendOn(ws, { type: 'registerClient', client: mirroredDescriptor(this.options.serverId, this.descriptor, this.registeredAt) });
        logger.info('proxy.mirror_registered', { clientId: this.localId, upstreamId: this.upstreamId, wsUrl: redactUrl(wsUrl) });
      }),
    );
    ws.on('message', (data, isBinary) =>
      this.guard(() => {
        // The hub spoke on this link, so it took it: the next loss waits the shortest time again.
        // An open alone says nothing: a hub that refuses (4401, 4403) opens and closes at once,
        // and must not be dialled every `reconnectMinMs` for ever.
        if (this.ws === ws) this.failures = 0;
        this.receive(ws, data, isBinary);
      }),
    );
    ws.on('error', (error) => logger.debug('proxy.mirror_error', { clientId: this.localId, error: error.message }));
    ws.on('close', (code, reason) =>
      this.guard(() => {
        // Only the current socket matters; an older one closing must not start a second link.
        if (this.ws !== ws) return;
        this.ws = undefined;
        this.registered = false;
        if (this.stopped) return;
        // A replacement or a refusal is a configuration to fix (two mirrors of one id, a hub that
        // does not take this member's credential or proof), not a restart of the hub.
        const level = code === CLOSE_CODES.replaced || code === CLOSE_CODES.unauthorized || code === CLOSE_CODES.clientIdTaken ? 'warn' : 'info';
        logger[level]('proxy.mirror_dropped', { clientId: this.localId, code, reason: reason.toString() });
        this.scheduleReconnect();
      }),
    );
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.failures += 1;
    const { reconnectMinMs, reconnectMaxMs, random } = this.options;
    const base = Math.min(reconnectMaxMs, reconnectMinMs * 2 ** (this.failures - 1));
    // ±20 % so that many mirrors of one follower do not reconnect in lock-step.
    const wait = base * (0.8 + 0.4 * random());
    this.cancelReconnect?.();
    this.cancelReconnect = this.options.timers.after(wait, () => {
      this.cancelReconnect = undefined;
      this.connect();
    });
  }

  private receive(ws: WebSocket, data: RawData, isBinary: boolean): void {
    if (isBinary) return;
    let json: unknown;
    try {
      json = JSON.parse(Array.isArray(data) ? Buffer.concat(data).toString('utf8') : data.toString());
    } catch {
      this.options.logger.warn('proxy.mirror_bad_frame', { clientId: this.localId });
      return;
    }
    const parsed = parseServerMessage(json);
    if (!parsed.ok) {
      this.options.logger.warn('proxy.mirror_bad_message', { clientId: this.localId, error: parsed.error });
      return;
    }
    const message = parsed.value;
    switch (message.type) {
      case 'ping':
        this.sendOn(ws, { type: 'pong', timestamp: message.timestamp ?? this.options.clock.wallNow() });
        return;
      case 'pong':
        return;
      case 'callClient':
        this.forward(ws, message).catch((error: unknown) => this.options.logger.error('proxy.forward_failed', { clientId: this.localId, error }));
        return;
    }
  }

  /** Run the call on the local client and answer upstream. `router.invoke` never rejects. */
  private async forward(ws: WebSocket, call: CallClientMessage): Promise<void> {
    const { router, logger } = this.options;
    let reply: ClientToServerMessage;
    try {
      const outcome = await router.invoke(this.localId, call.method, call.path, {
        query: call.query,
        body: call.body,
        headers: call.headers,
        auth: call.auth,
        route: 'cluster',
      });
      reply = outcome.ok
        ? { type: 'callClientResult', requestId: call.requestId, ok: true, data: outcome.data }
        : { type: 'callClientResult', requestId: call.requestId, ok: false, error: outcome.error };
    } catch (error) {
      logger.error('proxy.forward_failed', { clientId: this.localId, error });
      reply = { type: 'callClientResult', requestId: call.requestId, ok: false, error: serializeError(error) };
    }
    // Answer on the socket the call came on; if it has closed, the upstream already failed the call.
    // A result that cannot be serialised (data nested too deeply) is answered with an error instead.
    if (!this.sendOn(ws, reply) && ws.readyState === ws.OPEN) {
      this.sendOn(ws, { type: 'callClientResult', requestId: call.requestId, ok: false, error: UNSENDABLE_DATA_ERROR });
    }
  }

  private send(message: ClientToServerMessage): boolean {
    return this.ws ? this.sendOn(this.ws, message) : false;
  }

  private sendOn(ws: WebSocket, message: ClientToServerMessage): boolean {
    if (ws.readyState !== ws.OPEN) return false;
    try {
      let text = JSON.stringify(message);
      const backlog = ws === this.ws ? this.backlog : undefined;
      const waiting = ws.bufferedAmount;
      const verdict = backlog?.verdict(waiting, text.length, message.type === 'callClientResult', unsentBytes(ws)) ?? 'send';
      if (verdict === 'drop') {
        // The hub has not read for its stall time: drop the socket (its close handler reconnects).
        this.options.logger.warn('proxy.mirror_not_reading', { clientId: this.localId, waiting, reason: backlog?.reason(waiting + text.length) });
        ws.terminate();
        return false;
      }
      // An answer the hub asked for faster than it reads: a short refusal goes instead.
      if (verdict === 'refuse' && backlog !== undefined && message.type === 'callClientResult') {
        this.options.logger.debug('proxy.mirror_behind', { clientId: this.localId, waiting });
        text = JSON.stringify({ type: 'callClientResult', requestId: message.requestId, ok: false, error: backlog.behindError(waiting) });
      }
      ws.send(text);
      return true;
    } catch (error) {
      this.options.logger.debug('proxy.mirror_send_failed', { clientId: this.localId, error });
      return false;
    }
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.options.logger.error('proxy.mirror_handler_failed', { clientId: this.localId, error });
    }
  }
}
