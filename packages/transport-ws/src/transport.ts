/**
 * The MDP websocket endpoint (SPEC §5): one JSON message per text frame, translated into core
 * session calls. The HTTP server is owned by the app, which hands upgrades to `handleUpgrade`.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { parseClientMessage, stringifyServerMessage, type AuthContext, type ServerToClientMessage } from '@mdp/protocol';
import { MdpError, extractTransportAuth, silentLogger, type HeaderMap, type Logger, type Router, type Session } from '@mdp/core';
import { WS_CLOSE, closeReason } from './close-codes.js';

export interface WebSocketTransportOptions {
  /** Largest accepted frame, bytes. Default 1 MiB; larger frames close the socket with 1009. */
  maxMessageBytes?: number;
  /** How long close() waits for closing handshakes before terminating sockets, ms. Default 1000. */
  closeGraceMs?: number;
  /** Reads the transport auth from the upgrade request. Default: extractTransportAuth. */
  extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /** Whether a connection with this transport auth is let in; refused ones close with 4401. Default: all. */
  authorize?: (auth: AuthContext | undefined) => boolean;
  logger?: Logger;
}

export interface WebSocketTransport {
  /** Accept one upgrade request as an MDP websocket session. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  readonly connectionCount: number;
  /** Close every socket (1001) and stop accepting. Idempotent. */
  close(): Promise<void>;
}

export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

export function createWebSocketTransport(router: Router, options: WebSocketTransportOptions = {}): WebSocketTransport {
  const logger = options.logger ?? silentLogger;
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const closeGraceMs = options.closeGraceMs ?? 1000;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
    clientTracking: true,
  });
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
  const corkUntilFlush = (socket: Duplex): void => {
    if (corked.has(socket)) return;
    // The first socket corked in this turn schedules the one flush for all of them.
    if (corked.size === 0) setImmediate(flush);
    socket.cork();
    corked.add(socket);
  };

  // The session (when there is one) ends at once: its client is gone and its calls fail now, not
  // when the peer answers the close frame, which a misbehaving peer may never do (ws then waits 30 s).
  const refuse = (ws: WebSocket, code: number, reason: string, session?: Session): void => {
    logger.debug('ws.refused', { code, reason });
    ws.close(code, closeReason(reason));
    session?.end();
  };

  function onMessage(ws: WebSocket, session: Session, data: RawData, isBinary: boolean): void {
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
    try {
      session.handle(parsed.value);
    } catch (error) {
      if (error instanceof MdpError) return refuse(ws, WS_CLOSE.policyViolation, error.message, session);
      logger.error('ws.handler_failed', { sessionId: session.id, error });
      refuse(ws, WS_CLOSE.internalError, 'Internal error', session);
    }
  }

  function onConnection(ws: WebSocket, request: IncomingMessage, socket: Duplex): void {
    const auth = extractAuth(request.headers);
    if (options.authorize && !options.authorize(auth)) return refuse(ws, WS_CLOSE.unauthorized, 'Unauthorized');
    let session: Session;
    try {
      session = router.openSession(
        {
          kind: 'ws',
          // wss: the upgrade came over a TLS socket (a plain one has no `encrypted`).
          secure: (request.socket as { encrypted?: boolean }).encrypted === true,
          send(message: ServerToClientMessage) {
            if (ws.readyState !== WebSocket.OPEN) return;
            // The router counts this call already: more than one pending means a busy client.
            if (message.type === 'callClient' && session.pendingCount > 1) corkUntilFlush(socket);
            ws.send(stringifyServerMessage(message));
          },
          close(code: number, reason: string) {
            ws.close(code, closeReason(reason));
          },
        },
        auth,
      );
    } catch (error) {
      // The router refuses new sessions while shutting down.
      ws.close(WS_CLOSE.goingAway, error instanceof MdpError ? closeReason(error.message) : 'Unavailable');
      return;
    }
    ws.on('message', (data, isBinary) => onMessage(ws, session, data, isBinary));
    ws.on('close', () => session.end());
    // `ws` closes the socket itself after an error (e.g. 1009 for an oversized frame).
    ws.on('error', (error) => logger.debug('ws.error', { sessionId: session.id, error: error.message }));
  }

  return {
    handleUpgrade(request, socket, head) {
      if (closing) {
        socket.destroy();
        return;
      }
      wss.handleUpgrade(request, socket, head, (ws) => onConnection(ws, request, socket));
    },
    get connectionCount() {
      return wss.clients.size;
    },
    close() {
      closing ??= (async () => {
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
