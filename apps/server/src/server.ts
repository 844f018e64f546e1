/**
 * `createMdpServer`: assembles core, both transports, the skill routes, /mdp/meta and /mdp/auth on one
 * @hono/node-server listener. Tests and embedders start one on port 0; the CLI wraps it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { Router, createAuthGate, createLogger, createTokenPolicy, type Logger } from '@mdp/core';
import { createWebSocketTransport, type WebSocketTransport } from '@mdp/transport-ws';
import { createHttpLoopTransport } from '@mdp/transport-http-loop';
import { createNodeSkillsHandler, createSkillsRoutes, originForm } from '@mdp/skills-gateway';
import { createAuthRoutes } from './auth-routes.js';
import { corsHeadersFor, mdpCors } from './cors.js';
import type { ClusterNode } from '@mdp/cluster';
import { clusterAuthProblem, createServerCluster, fallbackPorts, heldByMdp } from './cluster.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';
import { advertisedAuthority, formatHost, serverUrls, type ServerUrls } from './urls.js';
import { buildMetaDocument, metaEndpoints, standaloneClusterView, type ClusterView, type FeaturesView } from '@mdp/protocol';

export interface ListeningInfo {
  readonly host: string;
  readonly port: number;
  readonly serverId: string;
  readonly urls: ServerUrls;
}

export interface MdpServer {
  readonly router: Router;
  readonly app: Hono;
  readonly logger: Logger;
  /** Bind and start serving. Rejects (e.g. EADDRINUSE) without leaving anything open. */
  listen(): Promise<ListeningInfo>;
  /** Set once listening. */
  readonly info: ListeningInfo | undefined;
  /** This server's cluster node (standalone without `cluster` options); set once listening. */
  readonly cluster: ClusterNode | undefined;
  /** Graceful shutdown: pending calls fail, sockets close, the port is released. Idempotent. */
  close(): Promise<void>;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || host.startsWith('127.');
}

const HTTP_LOOP_PREFIX = '/mdp/http-loop/';

/** Time given to open HTTP connections to finish during close before they are cut, ms. */
const CLOSE_GRACE_MS = 1000;

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

export function createMdpServer(options: MdpServerOptions = {}): MdpServer {
  const host = options.host ?? SERVER_DEFAULTS.host;
  const port = options.port ?? SERVER_DEFAULTS.port;
  const maxMessageBytes = options.maxMessageBytes ?? SERVER_DEFAULTS.maxMessageBytes;
  const clusterId = options.clusterId ?? SERVER_DEFAULTS.clusterId;
  const logger = options.logger ?? createLogger({ level: options.logLevel ?? SERVER_DEFAULTS.logLevel });

  const policy = options.authPolicy ?? (options.authTokens?.length ? createTokenPolicy(options.authTokens) : undefined);
  const clusterProblem = clusterAuthProblem(options);
  if (clusterProblem) throw new RangeError(clusterProblem);
  const gate = createAuthGate(policy);
  const authorize = policy ? gate.allows : undefined;

  const router = new Router({
    invocationTimeoutMs: options.invocationTimeoutMs ?? SERVER_DEFAULTS.invocationTimeoutMs,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? SERVER_DEFAULTS.heartbeatIntervalMs,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? SERVER_DEFAULTS.heartbeatTimeoutMs,
    logger,
  });
  const wsTransport: WebSocketTransport = createWebSocketTransport(router, { maxMessageBytes, extractAuth: gate.extract, authorize, logger });
  const corsFor = (request: IncomingMessage): Readonly<Record<string, string>> => corsHeadersFor(request.headers.origin);
  const httpLoop = createHttpLoopTransport(router, {
    longPollTimeoutMs: options.longPollTimeoutMs ?? SERVER_DEFAULTS.longPollTimeoutMs,
    maxBodyBytes: maxMessageBytes,
    extractAuth: gate.extract,
    authorize,
    extraHeaders: corsFor,
    logger,
  });

  let info: ListeningInfo | undefined;
  // CLUSTER-HOOK: a cluster node replaces these two views and handles /mdp/cluster upgrades.
  let clusterView = (serverId: string, urls: ServerUrls): ClusterView => standaloneClusterView(clusterId, serverId, urls.ws);
  let featuresView = (): FeaturesView => ({ upstreamProxy: false, clusterControl: false });
  let handleClusterUpgrade: ((request: IncomingMessage, socket: Duplex, head: Buffer) => void) | undefined;
  let cluster: ClusterNode | undefined;
  /** Built once the port (hence the default server id) is known. */
  const startCluster = (listening: ListeningInfo): void => {
    const node = createServerCluster({
      router,
      serverId: listening.serverId,
      clusterId,
      options: options.cluster,
      authTokens: options.authTokens,
      logger: logger.child({ serverId: listening.serverId }),
    });
    cluster = node;
    clusterView = () => node.meta();
    featuresView = () => node.features();
    handleClusterUpgrade = (request, socket, head) => node.handleUpgrade(request, socket, head);
    node.start({ wsUrl: listening.urls.ws, clusterUrl: listening.urls.cluster, metaUrl: listening.urls.meta });
  };
  // auto mode: a port already held by an MDP hub is not an error; take the next free port of the range.
  const clusterMode = options.cluster ? (options.cluster.mode ?? 'auto') : 'standalone';
  const portFallback = options.cluster?.portFallback ?? (clusterMode === 'auto' && options.port === undefined);

  const app = new Hono();
  app.onError((error, c) => {
    logger.error('http.unhandled_error', { method: c.req.method, path: c.req.path, error });
    return c.json({ error: 'Internal error' }, 500);
  });
  app.notFound((c) => c.body(null, 404));
  app.use('*', mdpCors());

  app.get('/mdp/meta', (c) => {
    if (!info) return c.json({ error: 'Server is not listening' }, 503);
    const endpoints = metaEndpoints(advertisedAuthority(host, info.port, c.req.header('host')));
    return c.json(buildMetaDocument(info.serverId, endpoints, clusterView(info.serverId, info.urls), featuresView()));
  });
  app.all('/mdp/meta', (c) => c.body(null, 405, { allow: 'GET, OPTIONS' }));

  const limit = bodyLimit({
    maxSize: maxMessageBytes,
    onError: (c) => c.json({ error: `Request body exceeds ${maxMessageBytes} bytes` }, 413),
  });
  app.use('/mdp/auth', limit);
  app.route('/mdp/auth', createAuthRoutes(gate));
  app.route('/mdp/http-loop', httpLoop.app);
  app.route('/', createSkillsRoutes(router, { extractAuth: gate.extract, authorize }));

  // The hot paths (skill reads and the HTTP loop) are answered straight from node's request/response, without the
  // Fetch Request, URL and Headers objects the Hono adapter builds; everything else, and every
  // preflight, goes through Hono. Both produce the same answers (the Hono routes stay mounted).
  const serveSkill = createNodeSkillsHandler(router, {
    extractAuth: gate.extract,
    authorize,
    extraHeaders: corsFor,
    logger,
  });
  const serveWithHono = getRequestListener(app.fetch, { hostname: host });
  const httpServer = createServer((request: IncomingMessage, response: ServerResponse) => {
    if (request.method !== 'OPTIONS') {
      const url = originForm(request.url ?? '/');
      if (url.startsWith(HTTP_LOOP_PREFIX)) {
        const end = url.indexOf('?');
        return httpLoop.handleNode(request, response, (end < 0 ? url : url.slice(0, end)).slice(HTTP_LOOP_PREFIX.length - 1));
      }
      if (serveSkill(request, response)) return;
    }
    void serveWithHono(request, response);
  });
  httpServer.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', (error) => logger.debug('upgrade.socket_error', { error: error.message }));
    const path = (request.url ?? '/').split('?')[0];
    if (path === '/mdp/cluster') {
      if (handleClusterUpgrade) return handleClusterUpgrade(request, socket, head);
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wsTransport.handleUpgrade(request, socket, head);
  });
  httpServer.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    logger.debug('http.client_error', { error: error.message, code: error.code });
    if (!socket.writable) return void socket.destroy();
    // node's parser refused the request before any route saw it; answer in the routes' {error} shape.
    socket.end(clientErrorAnswer(error.code));
  });

  let closing: Promise<void> | undefined;

  return {
    router,
    app,
    logger,
    get info() {
      return info;
    },
    get cluster() {
      return cluster;
    },
    async listen() {
      const bind = (bindPort: number): Promise<ListeningInfo> => new Promise<ListeningInfo>((resolve, reject) => {
        const onError = (error: Error): void => {
          httpServer.off('listening', onListening);
          reject(error);
        };
        const onListening = (): void => {
          httpServer.off('error', onError);
          const address = httpServer.address() as AddressInfo;
          const authority = advertisedAuthority(host, address.port, undefined);
          const serverId = options.serverId ?? `${formatHost(host)}:${address.port}`;
          info = { host, port: address.port, serverId, urls: serverUrls(authority) };
          httpServer.on('error', (error) => logger.error('http.server_error', { error }));
          logger.info('server.listening', { url: info.urls.http, ws: info.urls.ws, serverId, authPolicy: policy !== undefined });
          if (!policy && !isLoopback(host)) {
            logger.warn('server.no_auth_policy', {
              host,
              message: 'Listening beyond loopback with no auth policy: anyone who can reach this port can register clients and read skills. Use --auth-token.',
            });
          }
          try {
            startCluster(info);
          } catch (error) {
            // Bad cluster options (e.g. a static member list without this server): do not serve half-configured.
            info = undefined;
            httpServer.close();
            reject(error);
            return;
          }
          resolve(info);
        };
        httpServer.once('error', onError);
        httpServer.once('listening', onListening);
        httpServer.listen(bindPort, host);
      });
      try {
        return await bind(port);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || !portFallback || !(await heldByMdp(host, port))) throw error;
        for (const next of fallbackPorts(port, options.cluster?.discovery)) {
          try {
            const listening = await bind(next);
            logger.info('server.port_fallback', { heldPort: port, port: next, message: 'the port is held by an MDP server; this one follows it' });
            return listening;
          } catch (retry) {
            if ((retry as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw retry;
          }
        }
        throw error;
      }
    },
    close() {
      closing ??= (async () => {
        // The cluster node first: a leader resigns while its links are still up.
        await cluster?.close();
        const stopped = new Promise<void>((resolve) => {
          if (!httpServer.listening) return resolve();
          httpServer.close(() => resolve());
        });
        // Order matters: sessions end first so pending calls fail and waiting reads answer.
        await router.close();
        await Promise.all([wsTransport.close(), httpLoop.close()]);
        httpServer.closeIdleConnections();
        const cut = setTimeout(() => httpServer.closeAllConnections(), CLOSE_GRACE_MS);
        cut.unref();
        await stopped;
        clearTimeout(cut);
        logger.info('server.closed', { serverId: info?.serverId });
      })();
      return closing;
    },
  };
}
