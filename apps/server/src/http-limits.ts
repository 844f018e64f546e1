/**
 * Bounds on HTTP connections whose peers send slowly, read slowly or not at all (issue 18): node's
 * own header, request and keep-alive time-outs; an idle time-out that closes a connection making no
 * progress unless an answer is still being prepared for it; and pipelining done one request at a
 * time, so a reader that never reads holds at most one answer per connection:
 *
 *   request ─▶ another answer on this connection unfinished? ─ no ─▶ served now
 *                        │ yes
 *                        ▼
 *              fewer than maxPipelinedRequests waiting? ─ no ─▶ 503 {error}, connection closes
 *                        │ yes
 *                        ▼
 *              waits; served when node gives its response the socket (the answer before it finished)
 */
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '@mdp/core';

export interface HttpLimits {
  /** Time to receive a request's headers, ms. */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request, ms; at least `headersTimeoutMs`. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this, ms. */
  readonly keepAliveTimeoutMs: number;
  /** A connection making no progress this long is closed unless an answer is being prepared for it, ms. */
  readonly idleTimeoutMs: number;
  /** Most requests waiting behind the one being answered on a connection. */
  readonly maxPipelinedRequests: number;
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

/** The response node is writing on a connection right now (unset between requests). */
const activeResponse = (socket: Socket): unknown => (socket as Socket & { _httpMessage?: unknown })._httpMessage;

/**
 * Close connections that make no progress for `idleTimeoutMs`: with no request at all, or with an
 * answer the reader does not take. One whose answer is still being prepared (a long poll, a call
 * waiting for its client) is kept; node times it out again after its next progress. Websocket
 * connections are not concerned: `ws` turns the time-out off once it takes a socket.
 */
export function closeIdleConnections(server: Server, limits: HttpLimits, logger: Logger): void {
  server.timeout = limits.idleTimeoutMs;
  server.on('timeout', (socket: Socket) => {
    const active = activeResponse(socket);
    const waitingBytes = socket.writableLength;
    if (active !== undefined && active !== null && waitingBytes === 0) return;
    // An answer its reader does not take is worth knowing about; an idle connection is routine.
    if (waitingBytes > 0) logger.info('http.unread_answer_closed', { waitingBytes, idleMs: limits.idleTimeoutMs });
    else logger.debug('http.idle_closed', {});
    socket.destroy();
  });
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
