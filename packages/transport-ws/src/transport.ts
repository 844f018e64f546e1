/**
 * The MDP websocket endpoint (SPEC §5): one JSON message per text frame, translated into core
 * session calls. The HTTP server is owned by the app, which hands upgrades to `handleUpgrade`.
 *
 *   upgrade ─▶ admitted (total, per address)? ─ no ─▶ 503 {error}, no handshake
 *                 │ yes
 *                 ▼
 *              handshake ─▶ credential accepted? ─ no ─▶ close 4401
 *                 │ yes
 *                 ▼
 *              session ─▶ registerClient within registerTimeoutMs? ─ no ─▶ close 4408
 *                 │ yes
 *                 ▼
 *              messages ⇄ core; a call that would leave more than maxBufferedBytes waiting ─▶
 *                 peer read within stallTimeoutMs? ─ yes ─▶ the call is refused (503 not_ready)
 *                 │ no
 *                 ▼
 *              close 1013, and the socket is reset if the peer has not read up to it a second later
 *
 * From the handshake on, what a peer has sent of a message it has not finished counts against the
 * node's in-flight budget (core's inflight.ts); past it, the connection whose unfinished message
 * began first is closed 1013 and its socket destroyed, whoever it is.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { parseClientMessage, type AuthContext } from '@mdp/protocol';
import {
  Admission,
  DEFAULT_MAX_INFLIGHT_BYTES,
  DEFAULT_MAX_MESSAGE_BYTES,
  Deadlines,
  InflightBudget,
  MdpError,
  closeReason,
  countInboundFrames,
  extractTransportAuth,
  originPrincipal,
  silentLogger,
  systemClock,
  type Clock,
  type HeaderMap,
  type Scopes,
  type Logger,
  type Router,
  type Session,
} from '@mdp/core';
import { WS_CLOSE, closeFor } from './close-codes.js';
import { WS_LIMIT_DEFAULTS } from './defaults.js';
import { WsConnection, type ConnectionContext } from './connection.js';

export interface WebSocketTransportOptions {
  /** Largest accepted frame, bytes. Default 1 MiB; larger frames close the socket with 1009. */
  maxMessageBytes?: number;
  /** How long close() waits for closing handshakes before terminating sockets, ms. Default 1000. */
  closeGraceMs?: number;
  /** Reads the transport auth from the upgrade request. Default: extractTransportAuth. */
  extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /** Whether a connection with this transport auth is let in; refused ones close with 4401. Default: all. */
  authorize?: (auth: AuthContext | undefined) => boolean;
  /**
   * The principal of a credential `authorize` accepted (`AuthGate.principalOf`): a client id belongs
   * to the principal that registered it, another principal's `registerClient` closes 4403.
   */
  principalOf?: (auth: AuthContext | undefined) => string | undefined;
  /**
   * The scopes of a credential `authorize` accepted (`AuthGate.scopesOf`; `undefined`: every scope):
   * a `registerClient` its register scope does not grant closes 4403 (core's `missing_scope`).
   */
  scopesOf?: (auth: AuthContext | undefined) => Scopes;
  /**
   * The cluster member an upgrade proves it is a mirror link of, with the principal of the client
   * it mirrors (a cluster node's `mirrorPeer`). Its session is opened as that member's `peer`, under
   * that principal (under `authorize`, else `principalOf`'s): only such a session registers the
   * member's mirrored ids, and they stay their owner's, with or without a policy. Default: none.
   */
  peerOf?: (headers: HeaderMap) => { readonly serverId: string; readonly principal?: string } | undefined;
  /**
   * Most bytes one peer may leave unread, bytes: waiting in its socket and held back, or calls sent
   * since its last answer while it let others die unanswered. A call that would take a peer past it
   * is refused (`not_ready`, retry in 1 s) while the peer still reads; a peer that has not read for
   * `stallTimeoutMs` is closed with 1013 instead, and its pending calls fail at once. Default 8 MiB.
   */
  maxBufferedBytes?: number;
  /**
   * How long a peer over `maxBufferedBytes` may go without reading (no answer to one of its pending
   * calls, no held-up write drained) before it is closed rather than refused new calls, ms.
   * Default 5000.
   */
  stallTimeoutMs?: number;
  /** The clock of the stall time and of the reset after a slow peer's close; default the system's. */
  clock?: Clock;
  /** Time from the handshake to the first `registerClient`, ms; past it the connection closes 4408. Default 10000. */
  registerTimeoutMs?: number;
  /** Most connections at once; more are answered 503 before the handshake. Default 10000. */
  maxConnections?: number;
  /** Most connections at once from one remote address; more are answered 503. Default 8000. */
  maxConnectionsPerAddress?: number;
  /**
   * The node's budget on bytes received but not yet a whole message (core's `InflightBudget`),
   * shared with the other edges that read messages. Past it, the connection whose unfinished
   * message began first is closed 1013 (`Server is receiving too much at once (maxInflightBytes
   * N); try again later`). Default: a budget of this transport's own, 64 MiB.
   */
  inflight?: InflightBudget;
  logger?: Logger;
}

export interface WebSocketTransport {
  /** Accept one upgrade request as an MDP websocket session. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  readonly connectionCount: number;
  /** Close every socket (1001) and stop accepting. Idempotent. */
  close(): Promise<void>;
}

/**
 * How long a peer closed for not reading has to read up to the close frame before its socket is
 * reset, ms. The reset drops what the kernel still holds for it (megabytes of calls whose callers
 * left long ago), so a peer that resumes later never gets them; it sees the connection reset.
 */
const SLOW_CLOSE_GRACE_MS = 1000;

/**
 * Close `socket` at once with a TCP reset (what it has not sent is dropped), or plainly where it
 * has no TCP connection of its own to reset. Under TLS the TCP socket is the TLS socket's parent
 * (node's `_parent`): that one is reset, so a TLS peer's stale calls are dropped as well.
 */
function reset(socket: Duplex): void {
  const tcp = ((socket as { _parent?: unknown })._parent ?? socket) as Duplex & { resetAndDestroy?: () => unknown };
  try {
    if (typeof tcp.resetAndDestroy === 'function') {
      tcp.resetAndDestroy();
      if (tcp !== socket) socket.destroy();
      return;
    }
  } catch {
    // Not a TCP handle: destroyed below.
  }
  socket.destroy();
}

/** Reset `socket` unless it closes within the grace period (its own function: the timer keeps only the socket). */
function resetUnlessClosed(socket: Duplex, clock: Clock, onReset: () => void): void {
  if (socket.destroyed) return;
  const timer = clock.setTimeout(() => {
    reset(socket);
    onReset();
  }, SLOW_CLOSE_GRACE_MS);
  socket.once('close', () => clock.clearTimeout(timer));
}

/** The answer to an upgrade refused before the handshake; the peer may try again later. */
function unavailable(message: string): string {
  const body = JSON.stringify({ error: message });
  return `HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

export function createWebSocketTransport(router: Router, options: WebSocketTransportOptions = {}): WebSocketTransport {
  const logger = options.logger ?? silentLogger;
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const closeGraceMs = options.closeGraceMs ?? 1000;
  const maxBufferedBytes = options.maxBufferedBytes ?? WS_LIMIT_DEFAULTS.maxBufferedBytes;
  const registerTimeoutMs = options.registerTimeoutMs ?? WS_LIMIT_DEFAULTS.registerTimeoutMs;
  const stallTimeoutMs = options.stallTimeoutMs ?? WS_LIMIT_DEFAULTS.stallTimeoutMs;
  const clock = options.clock ?? systemClock;
  for (const [name, value] of Object.entries({ maxBufferedBytes, registerTimeoutMs, stallTimeoutMs })) {
    if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive whole number`);
  }
  const admission = new Admission(
    {
      total: options.maxConnections ?? WS_LIMIT_DEFAULTS.maxConnections,
      perAddress: options.maxConnectionsPerAddress ?? WS_LIMIT_DEFAULTS.maxConnectionsPerAddress,
    },
    'websocket connections',
  );
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
    clientTracking: true,
  });
  const inflight = options.inflight ?? new InflightBudget(DEFAULT_MAX_INFLIGHT_BYTES, { logger });
  let closing: Promise<void> | undefined;

  // Calls to a client that is already answering others are batched: they leave in one write per
  // socket per turn of the event loop (the socket is corked until the check phase, after every
  // ready socket's callbacks). Under load this turns N frame writes into one syscall. A lone call
  // is written at once, so one-at-a-time traffic pays for no deferred flush.
  const corked = new Set<Duplex>();
  const flush = (): void => {
    for (const socket of corked) socket.uncork();
    corked.clear();
  };

  // The session (when there is one) ends at once: its client is gone and its calls fail now, not
  // when the peer answers the close frame, which a misbehaving peer may never do (ws then waits 30 s).
  const refuse = (ws: WebSocket, code: number, reason: string, session?: Session): void => {
    logger.debug('ws.refused', { code, reason });
    ws.close(code, closeReason(reason));
    session?.end(reason);
  };

  const context: ConnectionContext = {
    corkUntilFlush(socket) {
      if (corked.has(socket)) return;
      // The first socket corked in this turn schedules the one flush for all of them.
      if (corked.size === 0) setImmediate(flush);
      socket.cork();
      corked.add(socket);
    },
    maxBufferedBytes,
    stallTimeoutMs,
    clock,
    isPending: (requestId) => router.isPending(requestId),
    onSlow(connection, waiting) {
      const reason = `Client is not reading: ${waiting} bytes unread, limit ${maxBufferedBytes}`;
      logger.warn('ws.slow_client', { sessionId: connection.session?.id, clientId: connection.session?.clientId, waiting });
      const sessionId = connection.session?.id;
      refuse(connection.ws, WS_CLOSE.tryAgainLater, reason, connection.session);
      resetUnlessClosed(connection.socket, clock, () => logger.info('ws.slow_client_reset', { sessionId }));
    },
    onBusy(connection, requestId, waiting) {
      const session = connection.session;
      logger.debug('ws.busy_client', { sessionId: session?.id, clientId: session?.clientId, waiting });
      session?.refuseCall(
        requestId,
        `Client ${JSON.stringify(session.clientId)} is behind: ${waiting} bytes would wait for it, limit ${maxBufferedBytes}; try again later`,
      );
    },
  };

  // A connection that has not registered in time is closed; many at once expire in batches.
  const registrations = new Deadlines<WsConnection>((connection) => {
    if (!connection.awaitingRegistration) return;
    connection.awaitingRegistration = false;
    refuse(connection.ws, WS_CLOSE.registerTimeout, `No registerClient within ${registerTimeoutMs} ms of connecting`, connection.session);
  });

  function onMessage(connection: WsConnection, session: Session, data: RawData, isBinary: boolean): void {
    const ws = connection.ws;
    // After we decided to close, late frames are not acted upon.
    if (ws.readyState !== WebSocket.OPEN) return;
    if (isBinary) return refuse(ws, WS_CLOSE.unsupportedData, 'Binary frames are not supported; send JSON text', session);
    let json: unknown;
    try {
      json = JSON.parse(data.toString());
    } catch {
      return refuse(ws, WS_CLOSE.policyViolation, 'Frame is not valid JSON', session);
    }
    const parsed = parseClientMessage(json);
    if (!parsed.ok) return refuse(ws, WS_CLOSE.policyViolation, `Invalid message: ${parsed.error}`, session);
    const answers = session.answers;
    try {
      session.handle(parsed.value);
    } catch (error) {
      if (!(error instanceof MdpError)) logger.error('ws.handler_failed', { sessionId: session.id, error });
      const close = closeFor(error);
      return refuse(ws, close.code, close.reason, session);
    }
    // An answer to a call it was sent, in time or late: the peer reads.
    if (session.answers !== answers) connection.answered();
    if (connection.awaitingRegistration && session.clientId !== undefined) {
      connection.awaitingRegistration = false;
      registrations.remove(connection);
    }
  }

  // Its own function, not a closure inside handleUpgrade: that one would share handleUpgrade's
  // closure context with the handshake callback, and keep the upgrade request (with its headers)
  // alive as long as the socket, 1.3 KB per idle connection (bench idle-memory).
  function releaseOnClose(socket: Duplex, address: string | undefined): void {
    // 'close' comes once: `on` spares the wrapper `once` would add.
    socket.on('close', () => admission.release(address));
  }

  function onConnection(ws: WebSocket, request: IncomingMessage, socket: Duplex): void {
    // Before anything else: a refused peer is read until it closes, and `ws` reports a bad frame
    // from it as an 'error' event, which with no listener would end the process.
    ws.on('error', onWsError);
    const inbound = countInboundFrames(socket, inflight, ws, evictInflight);
    const auth = extractAuth(request.headers);
    // A mirror link proves its member with or without a policy: the hub keeps the ids it mirrors
    // for their owner either way (without one, so that no page of another site shadows them). Under
    // a policy the proof (the cluster secret's, accepted once) is the link's credential: a cluster
    // signed in by access tokens alone has no token of its own to present.
    const peer = options.peerOf?.(request.headers);
    if (options.authorize && peer === undefined && !options.authorize(auth)) return refuse(ws, WS_CLOSE.unauthorized, 'Unauthorized');
    const origin = request.headers.origin;
    // Without a policy a page's ids are its origin's, and a program's (no Origin) the machine's; a
    // mirror link's are those of the client it mirrors (a page's origin, or the machine).
    const principal = options.authorize ? (peer?.principal ?? options.principalOf?.(auth)) : peer ? peer.principal : originPrincipal(origin);
    // wss: the upgrade came over a TLS socket (a plain one has no `encrypted`).
    const connection = new WsConnection(
      ws,
      socket,
      context,
      (request.socket as { encrypted?: boolean }).encrypted === true,
      origin,
      request.socket.remoteAddress,
    );
    connection.inbound = inbound;
    let session: Session;
    try {
      session = router.openSession(connection, auth, principal, peer?.serverId);
    } catch (error) {
      // The router refuses new sessions while shutting down.
      ws.close(WS_CLOSE.goingAway, error instanceof MdpError ? closeReason(error.message) : 'Unavailable');
      return;
    }
    // A mirror link is the cluster's, not a caller held to scopes.
    if (options.authorize && peer === undefined && options.scopesOf) session.scopes = options.scopesOf(auth);
    connection.session = session;
    connection.awaitingRegistration = true;
    registrations.add(registerTimeoutMs, connection);
    live.set(ws, connection);
    ws.on('message', onWsMessage);
    ws.on('close', onWsClose);
  }

  /**
   * The in-flight budget needs the room `ws` holds: its peer is told why (1013) and its socket
   * destroyed at once, which frees what it held (a close handshake would keep it up to 30 s).
   */
  function evictInflight(ws: WebSocket, reason: string): void {
    const session = live.get(ws)?.session;
    logger.debug('ws.inflight_evicted', { sessionId: session?.id, clientId: session?.clientId });
    if (ws.readyState === WebSocket.OPEN) ws.close(WS_CLOSE.tryAgainLater, closeReason(reason));
    session?.end(reason);
    ws.terminate();
  }

  // The listeners of every connection: one function each, called with the websocket as `this`, so
  // that an idle connection carries no closures of its own (bench idle-memory).
  const live = new WeakMap<WebSocket, WsConnection>();
  function onWsMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
    const connection = live.get(this);
    if (connection?.session) onMessage(connection, connection.session, data, isBinary);
  }
  function onWsClose(this: WebSocket): void {
    const connection = live.get(this);
    if (!connection) return;
    if (connection.awaitingRegistration) registrations.remove(connection);
    connection.awaitingRegistration = false;
    connection.session?.end();
  }
  // `ws` closes the socket itself after an error (e.g. 1009 for an oversized frame), and discards
  // what still arrives: nothing more of it is held.
  function onWsError(this: WebSocket, error: Error): void {
    const connection = live.get(this);
    connection?.inbound?.stop();
    logger.debug('ws.error', { sessionId: connection?.session?.id, error: error.message });
  }

  return {
    handleUpgrade(request, socket, head) {
      if (closing || socket.destroyed) {
        socket.destroy();
        return;
      }
      const address = request.socket.remoteAddress;
      const refusal = admission.admit(address);
      if (refusal !== undefined) {
        logger.info('ws.connection_refused', { address, reason: refusal });
        socket.end(unavailable(refusal));
        return;
      }
      // Counted until the socket closes, whether or not the handshake succeeds.
      releaseOnClose(socket, address);
      wss.handleUpgrade(request, socket, head, (ws) => onConnection(ws, request, socket));
    },
    get connectionCount() {
      return wss.clients.size;
    },
    close() {
      closing ??= (async () => {
        registrations.clear();
        const sockets = [...wss.clients];
        for (const ws of sockets) ws.close(WS_CLOSE.goingAway, 'Server shutting down');
        // Wait for the closing handshakes, but never longer than the grace period.
        let grace: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.all(sockets.map((ws) => (ws.readyState === WebSocket.CLOSED ? undefined : new Promise((r) => ws.once('close', r))))),
          new Promise((r) => (grace = setTimeout(r, closeGraceMs).unref())),
        ]);
        clearTimeout(grace);
        for (const ws of wss.clients) ws.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      })();
      return closing;
    },
  };
}
