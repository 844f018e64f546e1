/**
 * `createMdpServer`: the list of features (feature.ts) on one node HTTP listener. Tests and
 * embedders start one on port 0; the CLI wraps it. Adding a feature is a module in `features/` and
 * a line in the list below; its place in the list is its place in dispatch and, reversed, in
 * shutdown.
 */
import type { Hono } from 'hono';
import type { Logger, Router } from '@mdp/core';
import type { ClusterNode } from '@mdp/cluster';
import { fallbackPorts } from './cluster.js';
import { createServerContext } from './context.js';
import type { ListeningInfo, ServerFeature } from './feature.js';
import { authFeature } from './features/auth.js';
import { clusterFeature } from './features/cluster.js';
import { httpLoopFeature } from './features/http-loop.js';
import { metaFeature } from './features/meta.js';
import { sessionsFeature } from './features/sessions.js';
import { skillsFeature } from './features/skills.js';
import { websocketFeature } from './features/websocket.js';
import { httpLimitsProblem } from './http-limits.js';
import { bindServing, closeListener, createApp, createListener } from './listener.js';
import { SERVER_DEFAULTS, serverLimits, type MdpServerOptions } from './options.js';
import { advertisedAuthority, formatHost, serverUrls } from './urls.js';

export type { ListeningInfo } from './feature.js';
export { clientErrorAnswer } from './listener.js';

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

function warnWhenExposed(host: string, logger: Logger): void {
  if (isLoopback(host)) return;
  logger.warn('server.no_auth_policy', {
    host,
    message: 'Listening beyond loopback with no auth policy: anyone who can reach this port can register clients and read skills. Use --auth-token.',
  });
}

export function createMdpServer(options: MdpServerOptions = {}): MdpServer {
  const host = options.host ?? SERVER_DEFAULTS.host;
  const ctx = createServerContext(options);
  const { router, logger } = ctx;
  const clusterId = options.clusterId ?? SERVER_DEFAULTS.clusterId;
  const cluster = clusterFeature(ctx, { clusterId, cluster: options.cluster, authTokens: options.authTokens });
  const limits = serverLimits(options);
  const httpProblem = httpLimitsProblem(limits.http);
  if (httpProblem) throw new RangeError(httpProblem);
  // Dispatch runs down this list; shutdown runs up it (the cluster resigns first, then sessions end
  // so pending calls fail and waiting reads answer, then the transports close their sockets).
  const features: readonly ServerFeature[] = [
    skillsFeature(ctx),
    httpLoopFeature(ctx, { longPollTimeoutMs: options.longPollTimeoutMs ?? SERVER_DEFAULTS.longPollTimeoutMs, ...limits.httpLoop }),
    metaFeature(ctx, cluster, host),
    authFeature(ctx),
    websocketFeature(ctx, limits.websocket),
    sessionsFeature(ctx),
    cluster,
  ];
  const app = createApp(features, logger);
  const httpServer = createListener(features, app, host, logger, limits.http);

  const start = (port: number): ListeningInfo => {
    const serverId = options.serverId ?? `${formatHost(host)}:${port}`;
    const info: ListeningInfo = { host, port, serverId, urls: serverUrls(advertisedAuthority(host, port, undefined)) };
    ctx.setInfo(info);
    httpServer.on('error', (error) => logger.error('http.server_error', { error }));
    logger.info('server.listening', { url: info.urls.http, ws: info.urls.ws, serverId, authPolicy: ctx.guarded });
    if (!ctx.guarded) warnWhenExposed(host, logger);
    try {
      for (const feature of features) feature.start?.(info);
    } catch (error) {
      // Bad options found at start (e.g. a static member list without this server): do not serve half-configured.
      ctx.setInfo(undefined);
      throw error;
    }
    return info;
  };

  let closing: Promise<void> | undefined;
  return {
    router,
    app,
    logger,
    get info() {
      return ctx.info();
    },
    get cluster() {
      return cluster.node;
    },
    listen() {
      const port = options.port ?? SERVER_DEFAULTS.port;
      // auto mode: a port already held by an MDP hub is not an error; take the next free port of the range.
      const auto = options.cluster !== undefined && (options.cluster.mode ?? 'auto') === 'auto';
      const fallback = options.cluster?.portFallback ?? (auto && options.port === undefined);
      const ports = fallback ? () => fallbackPorts(port, options.cluster?.discovery) : undefined;
      return bindServing(httpServer, { host, port, logger, fallbackPorts: ports }, start);
    },
    close() {
      closing ??= (async () => {
        await closeListener(httpServer, async () => {
          for (const feature of [...features].reverse()) await feature.close?.();
        });
        logger.info('server.closed', { serverId: ctx.info()?.serverId });
      })();
      return closing;
    },
  };
}
