/**
 * The MCP bridge as a server feature: one bridge per server (its catalog names are the server's
 * for the life of the process), Streamable HTTP at `/mcp` on the listener, and the same bridge
 * for the stdio session of `mdp-server mcp` (`bridge`). `/mcp` checks Host and Origin against DNS
 * rebinding, then the server's auth policy, before the SDK transport sees the request.
 */
import { createRequire } from 'node:module';
import { headersToMap, type HostApi } from '@mdp/core';
import {
  createMcpBridge,
  createMcpHttpHandler,
  originPolicyFor,
  type McpBridge,
  type McpHttpHandler,
  type SurfaceMode,
} from '@mdp/mcp-bridge';
import type { ServerContext, ServerFeature } from '../feature.js';

export const MCP_PATH = '/mcp';

/** What `createMdpServer` takes as `mcp` (false: no bridge at all). */
export interface MdpMcpOptions {
  /** `catalog` (default): endpoints as tools, prompts as prompts, skills as resources; `generic`: the four generic tools only. */
  surface?: SurfaceMode;
  /** Most tools listed, the four generic ones included. Default 40. */
  maxTools?: number;
  /** Globs (`*`, `?`): list only catalog items whose name or `<clientId><path>` matches one. */
  include?: readonly string[];
  /** Globs: leave out catalog items that match one. */
  exclude?: readonly string[];
  /** Browser origins allowed at /mcp besides loopback ones. */
  allowedOrigins?: readonly string[];
  /** Host names allowed at /mcp besides loopback names (on a server bound beyond loopback: the only ones, when given). */
  allowedHosts?: readonly string[];
  /** Serve Streamable HTTP at /mcp. Default true. */
  http?: boolean;
  /** An idle /mcp session is closed after this long, ms. Default 10 minutes. */
  sessionIdleMs?: number;
  /** Most /mcp sessions open at once. Default 256. */
  maxSessions?: number;
}

export interface McpFeature extends ServerFeature {
  /** The bridge, once the server listens; undefined with `mcp: false`. */
  readonly bridge: McpBridge | undefined;
}

const version = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

/**
 * A host that asks `get` for the real one on every use, so that the feature may be listed before
 * whatever provides the host has started (a cluster node exists only once the server listens).
 */
function deferredHost(get: () => HostApi): HostApi {
  return {
    listClients: (request) => get().listClients(request),
    listPaths: (request) => get().listPaths(request),
    callPath: (request, options) => get().callPath(request, options),
    callPaths: (request, options) => get().callPaths(request, options),
    onChange: (listener) => get().onChange(listener),
  };
}

/** `host`: the local router's host, or (clustered) one that asks the leader; asked on each use. */
export function mcpFeature(ctx: ServerContext, options: MdpMcpOptions | false | undefined, host: () => HostApi): McpFeature {
  if (options === false) return { name: 'mcp', bridge: undefined };
  const config = options ?? {};
  let bridge: McpBridge | undefined;
  let http: McpHttpHandler | undefined;
  const authorize = ctx.authorize;
  return {
    name: 'mcp',
    get bridge() {
      return bridge;
    },
    routes(app) {
      if (config.http === false) return;
      app.all(MCP_PATH, async (c) => {
        if (!http) return c.json({ error: 'Not listening yet' }, 503);
        const response = await http.handle(c.req.raw);
        // Browser-based agents must be able to read the session id they are given.
        response.headers.set('access-control-expose-headers', 'mcp-session-id');
        return response;
      });
    },
    start(info) {
      bridge = createMcpBridge({
        host: deferredHost(host),
        serverInfo: { name: 'mdp-server', version },
        logger: ctx.logger,
        surface: config.surface,
        maxTools: config.maxTools,
        include: config.include,
        exclude: config.exclude,
      });
      if (config.http === false) return;
      http = createMcpHttpHandler(bridge, {
        originPolicy: originPolicyFor(info.host, { allowedHosts: config.allowedHosts, allowedOrigins: config.allowedOrigins }),
        authorize: authorize && ((request) => authorize(ctx.extractAuth(headersToMap(request.headers)))),
        maxBodyBytes: ctx.maxMessageBytes,
        maxSessions: config.maxSessions,
        sessionIdleMs: config.sessionIdleMs,
        logger: ctx.logger,
      });
    },
    async close() {
      await http?.close();
      await bridge?.close();
    },
  };
}
