/**
 * The node HTTP server under every feature (an HTTPS one under TLS, same features): requests go to
 * the features' fast paths, then to the Hono app; upgrades to the first feature that takes them;
 * requests node's parser refuses get an `{error}` answer. Binding (with the port fallback of auto
 * mode), a second port served by the same server (`servePort`), and closing live here too.
 */
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { Hono } from 'hono';
import { INTERNAL_ERROR, type Logger } from '@mdp/core';
import { originForm } from '@mdp/skills-gateway';
import { heldByMdp } from './cluster.js';
import { ConnectionTracker } from './connections.js';
import { mdpCors, type PreflightAnswer } from './cors.js';
import type { ServerFeature } from './feature.js';
import { capConnections, closeStalledConnections, oneAtATime, serverOptions, type HttpLimits } from './http-limits.js';

/** Time given to open HTTP connections to finish during close before they are cut, ms. */
const CLOSE_GRACE_MS = 1000;

const NOT_FOUND = 'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

/** The raw answer to a request node's HTTP parser refused (`clientError`), by node's error code. */
export function clientErrorAnswer(code: string | undefined): string {
  const [status, reason, message] =
    code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'Request line and headers exceed the server limit']
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'Request not received in time']
        : [400, 'Bad Request', 'Malformed HTTP request'];
  const body = JSON.stringify({ error: message });
  return `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

/**
 * The header node's parser was in when a request's headers overflowed its limit, lower-case: the
 * name of the last, unterminated line of the bytes it refused (`rawPacket`), when they show one.
 */
export function overflowingHeader(raw: Buffer): string | undefined {
  const text = raw.toString('latin1');
  const lineStart = text.lastIndexOf('\r\n');
  if (lineStart < 0) return undefined;
  const colon = text.indexOf(':', lineStart + 2);
  if (colon < 0 || colon - lineStart > 256) return undefined;
  return text
    .slice(lineStart + 2, colon)
    .trim()
    .toLowerCase();
}

/** A request line: method, target, version. */
const REQUEST_LINE = /^[A-Za-z]+ (\S+) HTTP\/\d\.\d$/;

/**
 * The path of the request line at the start of `raw`, for the log (no query: it may hold secrets);
 * undefined when `raw` does not start with one. node hands over the chunk it was parsing, which for
 * headers that came in several reads starts in the middle of them (the tail of a Cookie line, say),
 * and a word of that must not be logged as a path.
 */
export function requestPath(raw: Buffer): string | undefined {
  const line = raw.subarray(0, 2048).toString('latin1').split('\r\n', 1)[0] ?? '';
  const target = REQUEST_LINE.exec(line)?.[1];
  return target === undefined ? undefined : target.split('?')[0];
}

/**
 * The raw answer when an `Authorization` header alone overflows the header limit and the server
 * checks credentials: a 401 that says how to sign in (`challenge`, the `WWW-Authenticate` of the
 * server's other 401s), since such a token can never be accepted.
 */
export function oversizedTokenAnswer(challenge: string): string {
  const body = JSON.stringify({ error: 'Access token too large' });
  return `HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nWWW-Authenticate: ${challenge}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => Promise<void>;

/**
 * `app` as a node request listener (@hono/node-server), loaded by the first request that reaches
 * Hono. At its import that package subclasses the global `Request`, which makes node load its fetch
 * implementation (undici), tens of milliseconds of start-up that a server whose requests all take
 * the features' fast paths (and `mdp-server mcp`, before an agent asks anything) never needs.
 */
function honoListener(app: Hono, host: string, logger: Logger): RequestListener {
  let listener: RequestListener | undefined;
  let loading: Promise<RequestListener> | undefined;
  return async (request, response) => {
    if (listener === undefined) {
      loading ??= import('@hono/node-server').then(({ getRequestListener }) => getRequestListener(app.fetch, { hostname: host }));
      try {
        listener = await loading;
      } catch (error) {
        loading = undefined;
        logger.error('http.unhandled_error', { method: request.method, path: request.url?.split('?')[0], error });
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: INTERNAL_ERROR.message }));
        return;
      }
    }
    return listener(request, response);
  };
}

/**
 * The Hono app of every feature's routes: CORS first (`preflight`: how a preflight is answered),
 * a plain 500 for what they throw, an empty 404.
 */
export function createApp(features: readonly ServerFeature[], logger: Logger, preflight?: (request: Request) => PreflightAnswer): Hono {
  const app = new Hono();
  app.onError((error, c) => {
    logger.error('http.unhandled_error', { method: c.req.method, path: c.req.path, error });
    return c.json({ error: INTERNAL_ERROR.message }, 500);
  });
  app.notFound((c) => c.body(null, 404));
  app.use('*', mdpCors(preflight));
  for (const feature of features) feature.routes?.(app);
  return app;
}

/** The server under the features: node's HTTP server, or its HTTPS server under TLS. */
export type Server = HttpServer | HttpsServer;

/** Every open connection of each server (those of its second ports too), for `closeListener`. */
const tracked = new WeakMap<Server, ConnectionTracker<Socket>>();

/**
 * Work to finish before a request or upgrade is dispatched (the auth gate's `prepare`: an access
 * token's signature checked), so that every feature's checks stay synchronous; `undefined` when
 * there is none, which costs the hot path nothing.
 */
export type BeforeDispatch = (request: IncomingMessage) => Promise<void> | undefined;

/** A node HTTP server (HTTPS with `tls`) that dispatches to `features` and then to `app`, within `limits`. */
export function createListener(
  features: readonly ServerFeature[],
  app: Hono,
  host: string,
  logger: Logger,
  limits: HttpLimits,
  tls?: HttpsOptions,
  before?: BeforeDispatch,
  tokenChallenge?: () => string,
): Server {
  const fast = features.filter((f) => f.handle !== undefined);
  const upgraders = features.filter((f) => f.upgrade !== undefined);
  const connectors = features.filter((f) => f.connection !== undefined);
  const serveWithHono = honoListener(app, host, logger);
  const connections = new ConnectionTracker<Socket>();
  const dispatch = (request: IncomingMessage, response: ServerResponse): void => {
    if (request.method !== 'OPTIONS') {
      const url = originForm(request.url ?? '/');
      try {
        for (const feature of fast) if (feature.handle?.(request, response, url)) return;
      } catch (error) {
        // What a feature throws is answered as Hono's routes answer it, never left to end the process.
        logger.error('http.unhandled_error', { method: request.method, path: url.split('?')[0], error });
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: INTERNAL_ERROR.message }));
        return;
      }
    }
    void serveWithHono(request, response);
  };
  const onRequest = (request: IncomingMessage, response: ServerResponse): void => {
    response.once('close', connections.answering(request.socket));
    const pending = request.method === 'OPTIONS' ? undefined : before?.(request);
    if (pending === undefined) return dispatch(request, response);
    pending.then(
      () => dispatch(request, response),
      (error: unknown) => {
        // `prepare` never rejects; if it did, the request goes on and its checks refuse it.
        logger.error('http.prepare_failed', { error });
        dispatch(request, response);
      },
    );
  };
  const serve = oneAtATime(limits, onRequest);
  const server: Server = tls ? createHttpsServer({ ...serverOptions(limits), ...tls }, serve) : createServer(serverOptions(limits), serve);
  // A failed handshake (an untrusted certificate, plain HTTP on the TLS port) costs only that socket.
  if (tls) server.on('tlsClientError', (error: NodeJS.ErrnoException) => logger.debug('tls.client_error', { error: error.message, code: error.code }));
  tracked.set(server, connections);
  capConnections(server, limits.maxConnections, logger);
  // The socket requests arrive on: the TLS socket under TLS (its 'connection' is the raw TCP one).
  // One function for every socket, called with the socket as `this` ('close' comes once): an idle
  // connection carries no closure of its own for it (bench idle-memory).
  function onSocketClosed(this: Socket): void {
    connections.closed(this);
  }
  server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    connections.opened(socket);
    socket.on('close', onSocketClosed);
  });
  const stopSweep = closeStalledConnections(connections, limits, logger);
  server.once('close', stopSweep);
  const onUpgradeSocketError = (error: Error): void => logger.debug('upgrade.socket_error', { error: error.message });
  const upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    try {
      for (const feature of upgraders) if (feature.upgrade?.(request, socket, head, path)) return;
    } catch (error) {
      // As for requests: one refused upgrade, never the end of the process.
      logger.error('http.unhandled_error', { method: 'upgrade', path, error });
      socket.destroy();
      return;
    }
    socket.end(NOT_FOUND);
  };
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    connections.upgraded(socket as Socket);
    socket.on('error', onUpgradeSocketError);
    const pending = before?.(request);
    if (pending === undefined) return upgrade(request, socket, head);
    pending.then(
      () => upgrade(request, socket, head),
      (error: unknown) => {
        logger.error('http.prepare_failed', { error });
        upgrade(request, socket, head);
      },
    );
  });
  if (connectors.length > 0) {
    server.on('connection', (socket: Socket) => {
      for (const feature of connectors) feature.connection?.(socket);
    });
  }
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    logger.debug('http.client_error', { error: error.message, code: error.code });
    if (!socket.writable) return void socket.destroy();
    // node's parser refused the request before any route saw it; answer in the routes' {error} shape.
    const raw = (error as { rawPacket?: unknown }).rawPacket;
    if (tokenChallenge !== undefined && error.code === 'HPE_HEADER_OVERFLOW' && Buffer.isBuffer(raw) && overflowingHeader(raw) === 'authorization') {
      // Such a token can never be accepted: say so as every other refused credential, not 431.
      logger.info('auth.token_refused', { reason: "the Authorization header is over the server's header limit (16 KiB)", path: requestPath(raw) });
      return void socket.end(oversizedTokenAnswer(tokenChallenge()));
    }
    socket.end(clientErrorAnswer(error.code));
  });
  return server;
}

/** Bind `server` to `host:port`; rejects (e.g. EADDRINUSE) with nothing left listening. */
export function bind(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

export interface BindOptions {
  readonly host: string;
  readonly port: number;
  /** When the port is held by an MDP server, try these ports in turn (auto mode's fallback). */
  readonly fallbackPorts: (() => readonly number[]) | undefined;
  readonly logger: Logger;
  /** The server speaks TLS: whoever holds the port is asked over HTTPS. */
  readonly secure?: boolean;
  /**
   * When the port is in use and there is no fallback: get it back from a member of the cluster that
   * holds it as a second port (port-claim.ts). Gets one bind attempt; resolves with the address
   * once bound, or `undefined` to fail with the bind error.
   */
  readonly claim?: ((bindOnce: () => Promise<AddressInfo>) => Promise<AddressInfo | undefined>) | undefined;
}

/**
 * Bind the port, or in auto mode the next free port of the range when an MDP server holds it (this
 * one then follows that server if it is of the same cluster, and leads its own otherwise), or, for
 * a port of its own, get it back from a member holding it as a second port (`claim`). `start` runs
 * once bound; what it throws rejects with nothing left listening.
 */
export async function bindServing<T>(server: Server, options: BindOptions, start: (port: number) => T): Promise<T> {
  const { host, port, logger } = options;
  const started = (address: AddressInfo): T => {
    try {
      return start(address.port);
    } catch (error) {
      server.close();
      throw error;
    }
  };
  try {
    return started(await bind(server, host, port));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    if (!options.fallbackPorts && options.claim) {
      const claimed = await options.claim(() => bind(server, host, port));
      if (claimed) return started(claimed);
      throw error;
    }
    if (!options.fallbackPorts || !(await heldByMdp(host, port, options.secure))) throw error;
    for (const next of options.fallbackPorts()) {
      let address: AddressInfo;
      try {
        address = await bind(server, host, next);
      } catch (retry) {
        if ((retry as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw retry;
        continue;
      }
      // Whether this server follows that one is the cluster's business: only a server that proves
      // the same cluster secret is ever followed (another user's hub is not).
      logger.info('server.port_fallback', {
        heldPort: port,
        port: next,
        message: 'the port is held by an MDP server; serving on the next free port of the range',
      });
      return started(address);
    }
    throw error;
  }
}

/** A further port `server` answers on; `close()` stops accepting there (idempotent). */
export interface ServedPort {
  readonly port: number;
  close(): void;
  /**
   * Stop accepting there and end the connections accepted there (their clients reconnect, to
   * whoever binds the port next); resolves once the port is free. Idempotent.
   */
  drop(): Promise<void>;
}

/** The second ports of a server and the connections they accepted (the server counts only its own). */
interface Served {
  readonly listeners: Set<NetServer>;
  readonly sockets: Set<Socket>;
  /** Called whenever one of `sockets` closes. */
  onSocketClosed: (() => void) | undefined;
}

const served = new WeakMap<Server, Served>();

/**
 * Serve `server` on `host:port` too: a connection accepted there is handed to the server, so its
 * requests and upgrades go where the main port's go. Rejects (e.g. EADDRINUSE) with nothing left
 * listening. `close()` stops accepting at once; the connections already accepted live on, and
 * `closeListener` ends them with the others.
 */
export async function servePort(server: Server, host: string, port: number): Promise<ServedPort> {
  const entry = served.get(server) ?? { listeners: new Set<NetServer>(), sockets: new Set<Socket>(), onSocketClosed: undefined };
  served.set(server, entry);
  /** The connections accepted on this port (`drop` ends them). */
  const own = new Set<Socket>();
  const extra = createNetServer((socket) => {
    entry.sockets.add(socket);
    own.add(socket);
    socket.once('close', () => {
      entry.sockets.delete(socket);
      own.delete(socket);
      entry.onSocketClosed?.();
    });
    server.emit('connection', socket);
  });
  // The same cap as the main port's (each port counts its own connections); its drops are reported
  // where the main port's are (`capConnections`), under the same once-a-second log.
  extra.maxConnections = server.maxConnections;
  extra.on('drop', (data) => server.emit('drop', data));
  await new Promise<void>((resolve, reject) => {
    extra.once('error', reject);
    extra.listen(port, host, () => {
      extra.off('error', reject);
      resolve();
    });
  });
  extra.on('error', () => undefined);
  entry.listeners.add(extra);
  // 'close' comes once the listener is closed and every connection it accepted has ended.
  const closed = new Promise<void>((resolve) => extra.once('close', () => resolve()));
  const close = (): void => {
    entry.listeners.delete(extra);
    if (extra.listening) extra.close();
  };
  return {
    port: (extra.address() as AddressInfo).port,
    close,
    drop() {
      close();
      for (const socket of own) socket.destroy();
      return closed;
    },
  };
}

/** Stop accepting on the second ports of `server`; resolves once their connections have all ended. */
function closeServedPorts(server: Server): Promise<void> {
  const entry = served.get(server);
  if (!entry) return Promise.resolve();
  for (const extra of entry.listeners) extra.close();
  entry.listeners.clear();
  return new Promise<void>((resolve) => {
    const check = (): void => {
      if (entry.sockets.size === 0) resolve();
    };
    entry.onSocketClosed = check;
    check();
  });
}

/**
 * Stop accepting connections (on every port) and resolve once every open one has ended.
 * `afterStop` runs between: it ends what the connections wait for (sessions, long polls), so that
 * they can finish. Then a connection with no answer being written is cut at once (an idle one, or
 * one whose caller went away and left it half open: it would hold shutdown for the whole grace);
 * whatever is still open `CLOSE_GRACE_MS` after that is cut.
 */
export async function closeListener(server: Server, afterStop: () => Promise<void>): Promise<void> {
  const stopped = Promise.all([
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
    }),
    closeServedPorts(server),
  ]);
  await afterStop();
  server.closeIdleConnections();
  for (const socket of tracked.get(server)?.idle() ?? []) socket.destroy();
  const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
  cut.unref();
  await stopped;
  clearTimeout(cut);
}
