/**
 * Bounds on HTTP connections whose peers send slowly, read slowly or not at all (issue 18): node's
 * own header, request and keep-alive time-outs (a connection that sends nothing gets 408 and is
 * closed); a sweep that closes a connection whose answer makes no progress; and pipelining done one
 * request at a time, so a reader that never reads holds at most one answer per connection:
 *
 *   request ─▶ another answer on this connection unfinished? ─ no ─▶ served now
 *                        │ yes
 *                        ▼
 *              fewer than maxPipelinedRequests waiting? ─ no ─▶ 503 {error}, connection closes
 *                        │ yes
 *                        ▼
 *              waits; served when node gives its response the socket (the answer before it finished)
 *
 * And a cap on open connections, websockets included: past `maxConnections` node closes a new
 * connection as soon as it accepts it (`capConnections`), so a flood of silent sockets cannot take
 * every file descriptor of the process.
 */
import type { IncomingMessage, ServerOptions, ServerResponse } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import { systemClock, type Clock, type Logger } from '@mdp/core';
import type { ConnectionTracker } from './connections.js';

export interface HttpLimits {
  /** Time to receive a request's headers, ms. */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request, ms; at least `headersTimeoutMs`. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this, ms. */
  readonly keepAliveTimeoutMs: number;
  /** A connection whose answer makes no progress (its reader does not read) this long is closed, ms. */
  readonly writeTimeoutMs: number;
  /** Most requests waiting behind the one being answered on a connection. */
  readonly maxPipelinedRequests: number;
  /** Most TCP connections open at once on each listening port (node's `maxConnections`), websockets included. */
  readonly maxConnections: number;
}

/** How often node checks the header and request time-outs of every connection, ms (its own default is 30 s). */
const CONNECTIONS_CHECK_MS = 1000;

/** Why these limits cannot run, or `undefined`. */
export function httpLimitsProblem(limits: HttpLimits): string | undefined {
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 1) return `${name} must be a positive whole number`;
  }
  if (limits.requestTimeoutMs < limits.headersTimeoutMs) {
    return `the request time-out (${limits.requestTimeoutMs} ms) must not be shorter than the headers time-out (${limits.headersTimeoutMs} ms)`;
  }
  return undefined;
}

/** node `createServer` options for these limits. */
export function serverOptions(limits: HttpLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(CONNECTIONS_CHECK_MS, limits.headersTimeoutMs),
  };
}

/**
 * Cap the connections open at once on `server` (or on a second port's server) at `limit`: node
 * closes one accepted past it before reading from it, and says so with 'drop'. Logged once per
 * stretch of drops (at most once a second), not once per connection: a flood must not flood the log.
 */
export function capConnections(server: NetServer, limit: number, logger: Logger, now: () => number = systemClock.now): void {
  server.maxConnections = limit;
  let dropped = 0;
  let loggedAt = Number.NEGATIVE_INFINITY;
  server.on('drop', () => {
    dropped++;
    const at = now();
    if (at - loggedAt < 1000) return;
    loggedAt = at;
    logger.warn('http.connections_full', { limit, dropped });
    dropped = 0;
  });
}

/**
 * Close connections whose answer their reader does not take: a sweep every {@link sweepMs} looks at
 * each HTTP connection with bytes waiting to be written, and one that has written nothing more for
 * `writeTimeoutMs` is destroyed (connections.ts keeps the progress). Nothing runs per request
 * (node's own per-socket time-out would arm and re-arm a timer on every request and every read and
 * write). Connections that never send a request, or sit idle between requests, are node's: its
 * headers and keep-alive time-outs close them. Websocket connections are not swept; `ws` and the
 * transport watch them. Returns what stops the sweep.
 */
export function closeStalledConnections(connections: ConnectionTracker<Socket>, limits: HttpLimits, logger: Logger, clock: Clock = systemClock): () => void {
  let timer: unknown;
  const sweep = (): void => {
    // Re-armed first: a sweep that throws must not stop the next ones.
    timer = clock.setTimeout(sweep, sweepMs(limits));
    for (const { socket, waitingBytes, stalledMs } of connections.stalled(clock.now(), limits.writeTimeoutMs)) {
      logger.info('http.unread_answer_closed', { waitingBytes, stalledMs });
      socket.destroy();
    }
  };
  // On the system clock the timer is unref'd: the sweep never keeps the process alive.
  timer = clock.setTimeout(sweep, sweepMs(limits));
  return () => clock.clearTimeout(timer);
}

/** How often stalled connections are looked for, ms: a quarter of the write time-out, at most every second. */
export function sweepMs(limits: HttpLimits): number {
  return Math.max(10, Math.min(1000, Math.floor(limits.writeTimeoutMs / 4)));
}

/** The answer to a request over the pipelining limit; the connection closes after it. */
function refusePipelined(response: ServerResponse, limit: number): void {
  const body = JSON.stringify({ error: `More than ${limit} requests pipelined on one connection` });
  response.writeHead(503, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'retry-after': '1',
    connection: 'close',
  });
  response.end(body);
}

/**
 * Wrap a request listener so that a pipelined request is served only once the answers before it on
 * its connection are finished (node gives its response the socket then), and a connection with more
 * than `maxPipelinedRequests` waiting is refused. A request that is not pipelined (every browser and
 * HTTP client request) goes straight through: its response already has the socket.
 */
export function oneAtATime(
  limits: HttpLimits,
  serve: (request: IncomingMessage, response: ServerResponse) => void,
): (request: IncomingMessage, response: ServerResponse) => void {
  const waiting = new WeakMap<Socket, number>();
  return (request, response) => {
    if (response.socket !== null) return serve(request, response);
    const socket = request.socket;
    const count = waiting.get(socket) ?? 0;
    if (count >= limits.maxPipelinedRequests) return refusePipelined(response, limits.maxPipelinedRequests);
    waiting.set(socket, count + 1);
    response.once('socket', () => {
      waiting.set(socket, (waiting.get(socket) ?? 1) - 1);
      // node hands the socket on even when the answer before failed with the connection (it was
      // closed under a pending write): nobody would read this answer.
      if (socket.destroyed) return;
      serve(request, response);
    });
  };
}
