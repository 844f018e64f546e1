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
import type { NatsBus } from '@mdp/bus-nats/lite';
import { createServerContext } from './context.js';
import type { ListeningInfo, ServerFeature } from './feature.js';
import { accessTokensFeature, beforeDispatch } from './features/access-tokens.js';
import { authFeature } from './features/auth.js';
import { callLogsFeature } from './features/call-logs.js';
import { clientLogFeature } from './features/client-log.js';
import { healthFeature } from './features/health.js';
import { inspectorFeature } from './features/inspector.js';
import { metricsFeature } from './features/metrics.js';
import { rootFeature } from './features/root.js';
import { hostApiFeature } from './features/host-api.js';
import { busClusterProblem, busFeature } from './features/bus.js';
import { clusterFeature } from './features/cluster.js';
import { defaultPortFeature } from './features/default-port.js';
import { guideFeature, guideSource } from './features/guide.js';
import { httpLoopFeature } from './features/http-loop.js';
import { mcpFeature } from './features/mcp-http.js';
import { metaFeature } from './features/meta.js';
import { sessionsFeature } from './features/sessions.js';
import { skillReaderRefusal, skillsFeature } from './features/skills.js';
import { stateStoreFeature } from './features/state-store.js';
import { websocketFeature } from './features/websocket.js';
import { preflightPolicy } from './guarded-routes.js';
import { serverLifecycle } from './lifecycle.js';
import { createApp, createListener, servePort } from './listener.js';
import { portClaimOf } from './port-claim.js';
import { adminGuard, bearerGuard } from './read-route.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './settings/options.js';
import { peerTlsOf, type ReloadResult } from './tls.js';

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
  /** Its fleet bus (SPEC §16), with the `bus` option; set once listening. */
  readonly bus: NatsBus | undefined;
  /**
   * Read the TLS files again (SIGHUP): new connections get the new certificate, open ones are
   * kept. A bad file keeps the certificate in force, is logged, and comes back as the error.
   */
  reloadTls(): ReloadResult;
  /**
   * The MCP bridge once loaded: it is loaded (with the MCP SDK) by the first `/mcp` request or by
   * `openMcp()`, not at start. Undefined before, and with `mcp: false`.
   */
  readonly mcp: McpBridge | undefined;
  /** Load the MCP bridge now (the stdio session of `mdp-server mcp`); rejects with `mcp: false`, before `listen()` and after `close()`. */
  openMcp(): Promise<McpBridge>;
  /** Graceful shutdown: pending calls fail, sockets close, the port is released. Idempotent. */
  close(): Promise<void>;
}

/**
 * @throws RangeError for options that cannot run, TlsFileError for a TLS file that cannot be used,
 * StateStoreDirError for a state store directory that cannot be made or written.
 */
export function createMdpServer(options: MdpServerOptions = {}): MdpServer {
  const busProblem = busClusterProblem(options);
  if (busProblem) throw new RangeError(busProblem);
  // The cluster's server ids, once the cluster feature exists (the router is made first).
  let clusterIds: (id: string) => boolean = () => false;
  const ctx = createServerContext(options, (id) => clusterIds(id));
  const { router, logger, bindHost, tls, limits } = ctx;
  const clusterId = options.clusterId ?? SERVER_DEFAULTS.clusterId;
  const { maxBufferedBytes, stallTimeoutMs } = limits.websocket;
  const backlog = { maxBufferedBytes, stallTimeoutMs };
  const cluster = clusterFeature(ctx, { clusterId, cluster: options.cluster, authTokens: options.authTokens, tls, backlog });
  clusterIds = cluster.isServerId;
  // The guide at /SKILL.md is also the MCP bridge's resource mdp:///SKILL.md.
  const mcpHttp = options.mcp !== false && options.mcp?.http !== false;
  const guide = guideSource(ctx, { cluster, bindHost, mcpHttp, isServerId: cluster.isServerId });
  // The MCP bridge, the host API and the inspector share the cluster's host: on a follower it asks the leader.
  const mcp = mcpFeature(
    ctx,
    options.mcp,
    () => cluster.hostApi,
    (viewer) => guide.text(undefined, undefined, viewer),
  );
  // A fleet on NATS (SPEC §16): the other nodes' clients through the router, ours announced, and
  // HTTP loop requests passed to the node that holds their session.
  const bus = options.bus ? busFeature(ctx, { bus: options.bus, clusterId }) : undefined;
  const httpLoop = httpLoopFeature(ctx, {
    longPollTimeoutMs: options.httpLoopLongPollTimeoutMs ?? SERVER_DEFAULTS.httpLoopLongPollTimeoutMs,
    idleTimeoutMs: options.httpLoopIdleTimeoutMs ?? SERVER_DEFAULTS.httpLoopIdleTimeoutMs,
    ...limits.httpLoop,
    ...(bus ? { relay: bus.loopRelay } : {}),
  });
  // --metrics-token, or (signing teams in) a credential with the admin scope.
  const probeGuard = adminGuard(ctx, bearerGuard(options.metricsToken));
  // Which pages may read which client's skills: the skill routes and their preflights ask it.
  const skillReader = skillReaderRefusal(router, ctx.originPolicy);
  // Dispatch and start run down this list; shutdown runs up it (lifecycle.ts): metrics let go of the
  // cluster, the default port is let go and the cluster resigns, then sessions drain and end so
  // pending calls fail, are logged and waiting reads answer, then the transports close their sockets.
  const features: readonly ServerFeature[] = [
    skillsFeature(ctx, { isServerId: cluster.isServerId, readerRefusal: skillReader, accessLog: options.accessLog ?? false }),
    httpLoop,
    metaFeature(ctx, cluster, bindHost, bus),
    ...(ctx.accessTokens && options.accessTokens ? [accessTokensFeature(ctx, { issuer: options.accessTokens.issuer })] : []),
    authFeature(ctx, options.cookieSameSite ?? SERVER_DEFAULTS.cookieSameSite),
    hostApiFeature(ctx, cluster.hostApi),
    guideFeature(ctx, guide),
    mcp,
    inspectorFeature(ctx, cluster.hostApi),
    rootFeature(ctx),
    healthFeature(ctx, cluster, probeGuard, bus),
    websocketFeature(ctx, limits.websocket, cluster.mirrorPeer),
    clientLogFeature(ctx),
    callLogsFeature(ctx, { accessLog: options.accessLog ?? false, auditLog: options.auditLog }),
    // Before the sessions: it closes after them, so that drained calls may still cross the bus.
    ...(bus ? [bus] : []),
    sessionsFeature(ctx, { drainTimeoutMs: options.drainTimeoutMs ?? SERVER_DEFAULTS.drainTimeoutMs }),
    cluster,
    defaultPortFeature(cluster, { cluster: options.cluster, host: bindHost, logger, serve: (port) => servePort(httpServer, bindHost, port) }),
    // After the cluster: its start subscribes to the node the cluster's start creates.
    metricsFeature(ctx, { cluster, httpLoop, guard: probeGuard, bus }),
    // Last: it follows the cluster node too, and closing first it writes the clients the node had.
    ...(options.stateStore ? [stateStoreFeature(ctx, options.stateStore, { cluster, clusterId, mcpHttp })] : []),
  ];
  const app = createApp(features, logger, preflightPolicy(ctx.originPolicy, skillReader));
  const httpServer = createListener(features, app, bindHost, logger, limits.http, tls?.listenerOptions(), beforeDispatch(ctx), ctx.scopeGuard?.unauthorized);
  const claim = portClaimOf({
    cluster: options.cluster,
    clusterId,
    host: bindHost,
    secure: tls !== undefined,
    tls: tls && (() => peerTlsOf(tls.current)),
    logger,
    releaseRequest: (to, port, serverId) => cluster.portReleaseRequest({ to, port, serverId }),
  });
  const lifecycle = serverLifecycle(ctx, httpServer, features, options, claim);
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
    get bus() {
      return bus?.bus;
    },
    get mcp() {
      return mcp.bridge;
    },
    openMcp: mcp.open,
    listen: lifecycle.listen,
    reloadTls: lifecycle.reloadTls,
    close: lifecycle.close,
  };
}
