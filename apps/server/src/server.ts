/**
 * `createMdpServer`: the list of features (feature.ts) on one node HTTP listener. Tests and
 * embedders start one on port 0; the CLI wraps it. Adding a feature is a module in `features/` and
 * a line in the list below; its place in the list is its place in dispatch and, reversed, in
 * shutdown.
 */
import type { Hono } from 'hono';
import type { Logger, Router } from '@mdp/core';
import type { McpBridge } from '@mdp/mcp-bridge';
import type { ClusterNode } from '@mdp/cluster';
import { fallbackPorts } from './cluster.js';
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
import { bindServing, closeListener, createApp, createListener, servePort } from './listener.js';
import { preflightRefusal } from './guarded-routes.js';
import { bearerGuard } from './read-route.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';
import type { ReloadResult, TlsState } from './tls.js';
import { advertisedAuthority, defaultServerId, serverUrls } from './urls.js';

export type { ListeningInfo } from './feature.js';
export { SAME_SITE_NONE_NEEDS_TLS } from './context.js';
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

/** What the listening line says of TLS. */
function tlsSummary(tls: TlsState): Record<string, unknown> {
  const { subject, validTo } = tls.current;
  return { certFile: tls.options.certFile, subject, validTo, peerCertificates: tls.verifiesPeers };
}

/** @throws RangeError for options that cannot run, TlsFileError for a TLS file that cannot be used. */
export function createMdpServer(options: MdpServerOptions = {}): MdpServer {
  const ctx = createServerContext(options);
  const { router, logger, host, tls, limits } = ctx;
  const secure = tls !== undefined;
  const clusterId = options.clusterId ?? SERVER_DEFAULTS.clusterId;
  const cluster = clusterFeature(ctx, { clusterId, cluster: options.cluster, authTokens: options.authTokens, tls });
  // The MCP bridge, the host API and the inspector share the cluster's host: on a follower it asks the leader.
  const mcp = mcpFeature(ctx, options.mcp, () => cluster.host);
  const httpLoop = httpLoopFeature(ctx, {
    longPollTimeoutMs: options.longPollTimeoutMs ?? SERVER_DEFAULTS.longPollTimeoutMs,
    idleTimeoutMs: options.httpLoopIdleTimeoutMs ?? SERVER_DEFAULTS.httpLoopIdleTimeoutMs,
    ...limits.httpLoop,
  });
  const probeGuard = bearerGuard(options.metricsToken);
  // Dispatch runs down this list; shutdown runs up it (metrics let go of the cluster, the default port
  // is let go and the cluster resigns, then sessions drain and end so pending calls fail, are logged
  // and waiting reads answer, then the
  // transports close their sockets).
  const features: readonly ServerFeature[] = [
    skillsFeature(ctx, cluster.isServerId),
    httpLoop,
    metaFeature(ctx, cluster, host),
    authFeature(ctx, options.cookieSameSite ?? SERVER_DEFAULTS.cookieSameSite),
    hostApiFeature(ctx, cluster.host),
    mcp,
    inspectorFeature(ctx, cluster.host),
    rootFeature(ctx),
    healthFeature(ctx, cluster, probeGuard),
    websocketFeature(ctx, limits.websocket),
    clientLogFeature(ctx),
    callLogsFeature(ctx, { accessLog: options.accessLog ?? false, auditLog: options.auditLog }),
    sessionsFeature(ctx, { drainTimeoutMs: options.drainTimeoutMs ?? SERVER_DEFAULTS.drainTimeoutMs }),
    cluster,
    defaultPortFeature(cluster, { cluster: options.cluster, host, logger, serve: (port) => servePort(httpServer, host, port) }),
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
