/**
 * `createMdpServer`: the list of features (feature.ts) on one node HTTP listener. Tests and
 * embedders start one on port 0; the CLI wraps it. Adding a feature is a module in `features/` and
 * a line in the list below; its place in the list is its place in dispatch and, reversed, in
 * shutdown.
 */
import type { Hono } from 'hono';
import type { Logger, Router } from '@mdp/core';
import type { McpBridge } from '@mdp/mcp-bridge';
import { CLUSTER_DEFAULTS, type ClusterNode } from '@mdp/cluster';
import { defaultPortOf, fallbackPorts } from './cluster.js';
import { createServerContext } from './context.js';
import type { ListeningInfo, ServerFeature } from './feature.js';
import { authFeature } from './features/auth.js';
import { callLogsFeature } from './features/call-logs.js';
import { clientLogFeature } from './features/client-log.js';
import { healthFeature } from './features/health.js';
import { inspectorFeature } from './features/inspector.js';
import { metricsFeature } from './features/metrics.js';
import { rootFeature } from './features/root.js';
import { hostApiFeature } from './features/host-api.js';
import { clusterFeature } from './features/cluster.js';
import { defaultPortFeature } from './features/default-port.js';
import { httpLoopFeature } from './features/http-loop.js';
import { mcpFeature } from './features/mcp-http.js';
import { metaFeature } from './features/meta.js';
import { sessionsFeature } from './features/sessions.js';
import { skillsFeature } from './features/skills.js';
import { websocketFeature } from './features/websocket.js';
import { httpLimitsProblem } from './http-limits.js';
import { bindServing, closeListener, createApp, createListener, servePort } from './listener.js';
import { preflightRefusal } from './guarded-routes.js';
import { bearerGuard } from './read-route.js';
import { SERVER_DEFAULTS, serverLimits, type MdpServerOptions } from './options.js';
import { TlsState, type ReloadResult } from './tls.js';
import { advertisedAuthority, defaultServerId, isLoopback, serverUrls } from './urls.js';

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
  /**
   * Read the TLS files again (SIGHUP): new connections get the new certificate, open ones are
   * kept. A bad file keeps the certificate in force, is logged, and comes back as the error.
   */
  reloadTls(): ReloadResult;
  /** The MCP bridge (undefined with `mcp: false`); set once listening. */
  readonly mcp: McpBridge | undefined;
  /** Graceful shutdown: pending calls fail, sockets close, the port is released. Idempotent. */
  close(): Promise<void>;
}

/** Why `cookieSameSite: 'none'` is refused without TLS. */
export const SAME_SITE_NONE_NEEDS_TLS =
  'cookie SameSite=None needs TLS: browsers keep such a cookie only when it is Secure, and a Secure cookie only comes over HTTPS; give a TLS key and certificate, or keep SameSite=Lax';

function warnWhenExposed(host: string, logger: Logger): void {
  if (isLoopback(host)) return;
  logger.warn('server.no_auth_policy', {
    host,
    message: 'Listening beyond loopback with no auth policy: anyone who can reach this port can register clients and read skills. Use --auth-token.',
  });
}

/** What the listening line says of TLS. */
function tlsSummary(tls: TlsState): Record<string, unknown> {
  const { subject, validTo } = tls.current;
  return { certFile: tls.options.certFile, subject, validTo, peerCertificates: tls.verifiesPeers };
}

/** @throws RangeError for options that cannot run, TlsFileError for a TLS file that cannot be used. */
export function createMdpServer(options: MdpServerOptions = {}): MdpServer {
  const host = options.host ?? SERVER_DEFAULTS.host;
  const sameSite = options.cookieSameSite ?? SERVER_DEFAULTS.cookieSameSite;
  if (sameSite === 'none' && !options.tls) throw new RangeError(SAME_SITE_NONE_NEEDS_TLS);
  // The cluster's server ids, once the cluster feature exists (the router is made first).
  let clusterIds: (id: string) => boolean = () => false;
  const ctx = createServerContext(options, (id) => clusterIds(id));
  const { router, logger } = ctx;
  // Read and checked now: a bad file stops the server before anything listens.
  const tls = options.tls ? new TlsState(options.tls, logger) : undefined;
  const secure = tls !== undefined;
  const clusterId = options.clusterId ?? SERVER_DEFAULTS.clusterId;
  const cluster = clusterFeature(ctx, { clusterId, cluster: options.cluster, authTokens: options.authTokens, tls });
  clusterIds = cluster.isServerId;
  const limits = serverLimits(options);
  const httpProblem = httpLimitsProblem(limits.http);
  if (httpProblem) throw new RangeError(httpProblem);
  // The MCP bridge, the host API and the inspector share the cluster's host: on a follower it asks the leader.
  const mcp = mcpFeature(ctx, options.mcp, () => cluster.host);
  const httpLoop = httpLoopFeature(ctx, {
    longPollTimeoutMs: options.longPollTimeoutMs ?? SERVER_DEFAULTS.longPollTimeoutMs,
    idleTimeoutMs: options.httpLoopIdleTimeoutMs ?? SERVER_DEFAULTS.httpLoopIdleTimeoutMs,
    ...limits.httpLoop,
  });
  const probeGuard = bearerGuard(options.metricsToken);
  const defaultPort = defaultPortOf(options.cluster, host);
  // Dispatch runs down this list; shutdown runs up it (metrics let go of the cluster, the default port
  // is let go and the cluster resigns, then sessions drain and end so pending calls fail, are logged
  // and waiting reads answer, then the
  // transports close their sockets).
  const features: readonly ServerFeature[] = [
    skillsFeature(ctx, cluster.isServerId),
    httpLoop,
    metaFeature(ctx, cluster, host),
    authFeature(ctx, sameSite),
    hostApiFeature(ctx, cluster.host),
    mcp,
    inspectorFeature(ctx, cluster.host),
    rootFeature(ctx),
    healthFeature(ctx, cluster, probeGuard),
    websocketFeature(ctx, limits.websocket, cluster.mirrorPeer),
    clientLogFeature(ctx),
    callLogsFeature(ctx, { accessLog: options.accessLog ?? false, auditLog: options.auditLog }),
    sessionsFeature(ctx, { drainTimeoutMs: options.drainTimeoutMs ?? SERVER_DEFAULTS.drainTimeoutMs }),
    cluster,
    ...(defaultPort === undefined
      ? []
      : [
          defaultPortFeature(cluster, {
            port: defaultPort,
            retryMs: Math.min(250, options.cluster?.heartbeatIntervalMs ?? CLUSTER_DEFAULTS.heartbeatIntervalMs),
            logger,
            serve: (port) => servePort(httpServer, host, port),
          }),
        ]),
    // After the cluster: its start subscribes to the node the cluster's start creates.
    metricsFeature(ctx, { cluster, httpLoop, guard: probeGuard }),
  ];
  const app = createApp(features, logger, preflightRefusal(ctx.originPolicy));
  const httpServer = createListener(features, app, host, logger, limits.http, tls?.listenerOptions());

  const start = (port: number): ListeningInfo => {
    const serverId = options.serverId ?? defaultServerId(host, port);
    const info: ListeningInfo = { host, port, serverId, secure, urls: serverUrls(advertisedAuthority(host, port, undefined), secure) };
    ctx.setInfo(info);
    httpServer.on('error', (error) => logger.error('http.server_error', { error }));
    logger.info('server.listening', { url: info.urls.http, ws: info.urls.ws, serverId, authPolicy: ctx.guarded, ...(tls ? { tls: tlsSummary(tls) } : {}) });
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
    get mcp() {
      return mcp.bridge;
    },
    listen() {
      const port = options.port ?? SERVER_DEFAULTS.port;
      // auto mode: a port already held by an MDP hub is not an error; take the next free port of the range.
      const auto = options.cluster !== undefined && (options.cluster.mode ?? 'auto') === 'auto';
      const fallback = options.cluster?.portFallback ?? (auto && options.port === undefined);
      const ports = fallback ? () => fallbackPorts(port, options.cluster?.discovery) : undefined;
      return bindServing(httpServer, { host, port, logger, fallbackPorts: ports, secure }, start);
    },
    reloadTls() {
      if (!tls || !('setSecureContext' in httpServer)) return { ok: false, error: 'the server does not use TLS' };
      return tls.reload(httpServer);
    },
    close() {
      closing ??= (async () => {
        const reversed = [...features].reverse();
        await closeListener(httpServer, async () => {
          for (const feature of reversed) feature.stopping?.();
          for (const feature of reversed) await feature.close?.();
        });
        logger.info('server.closed', { serverId: ctx.info()?.serverId });
      })();
      return closing;
    },
  };
}
