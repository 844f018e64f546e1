/**
 * The MCP bridge as a server feature: one bridge per server (its catalog names are the server's
 * for the life of the process), Streamable HTTP at `/mcp` on the listener, and the same bridge
 * for the stdio session of `mdp-server mcp` (`bridge`). `/mcp` checks Host and Origin against DNS
 * rebinding and other sites' pages (the server's origin policy), then the server's auth policy,
 * before the SDK transport sees the request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { INTERNAL_ERROR, headersToMap, readNodeBody, type HostApi } from '@mdp/core';
import {
  createMcpBridge,
  createMcpHttpHandler,
  jsonRpcError,
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
  /** Serve Streamable HTTP at /mcp. Default true. */
  http?: boolean;
  /** An idle /mcp session is closed after this long, ms. Default 10 minutes. */
  sessionIdleMs?: number;
  /** Most /mcp sessions open at once. Default 256. */
  maxSessions?: number;
  /** Most /mcp sessions one credential holds at once, under an auth policy. Default 32. */
  maxSessionsPerPrincipal?: number;
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

/**
 * One `/mcp` request on node's request: the body is read and parsed here (bounded), so the SDK
 * transport gets a `Request` without a body stream and the parsed message.
 */
async function serveMcp(handler: McpHttpHandler, req: IncomingMessage, url: string, maxBodyBytes: number): Promise<Response> {
  // node's parsed headers: lower-case names, repeats joined (as Fetch Headers join them).
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  const request = new Request(`http://${req.headers.host ?? 'localhost'}${url}`, { method: req.method ?? 'GET', headers });
  if (req.method !== 'POST') return handler.handle(request);
  const body = await readNodeBody(req, maxBodyBytes);
  if (!body.ok) return jsonRpcError(body.status, -32000, body.error);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.text);
  } catch {
    return jsonRpcError(400, -32700, 'Parse error: the body is not valid JSON');
  }
  return handler.handle(request, parsed);
}

/**
 * Write a Fetch `Response` to node's response: a JSON answer at once, a server-sent-event stream
 * (an agent's GET stream) chunk by chunk until either side ends it.
 */
async function writeResponse(res: ServerResponse, response: Response, extra: Readonly<Record<string, string>>): Promise<void> {
  if (res.destroyed) return void (await response.body?.cancel().catch(() => undefined));
  const headers: Record<string, string | number> = { ...extra };
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  // Browser-based agents must be able to read the session id they are given.
  headers['access-control-expose-headers'] = 'mcp-session-id';
  if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) {
    const bytes = Buffer.from(await response.arrayBuffer());
    headers['content-length'] = bytes.length;
    res.writeHead(response.status, headers);
    res.end(bytes);
    return;
  }
  res.writeHead(response.status, headers);
  res.flushHeaders();
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => undefined));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // The stream was cancelled (the agent went away) or failed: end the response either way.
  }
  res.end();
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
    handle(req, res, url) {
      if (config.http === false || (url !== MCP_PATH && !url.startsWith(`${MCP_PATH}?`))) return false;
      const handler = http;
      const extra = ctx.guardedCorsFor(req);
      if (!handler) {
        void writeResponse(res, jsonRpcError(503, -32000, 'Not listening yet'), extra);
        return true;
      }
      serveMcp(handler, req, url, ctx.maxMessageBytes).then(
        (response) => writeResponse(res, response, extra),
        (error: unknown) => {
          ctx.logger.error('mcp.http_failed', { error });
          if (!res.headersSent) void writeResponse(res, jsonRpcError(500, -32603, INTERNAL_ERROR.message), extra);
          else res.destroy();
        },
      );
      return true;
    },
    start() {
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
        originPolicy: ctx.originPolicy,
        authorize: authorize && ((request) => authorize(ctx.extractAuth(headersToMap(request.headers)))),
        // Under a policy a session belongs to the principal that opened it (the gate's, as for client ids).
        ...(authorize ? { principalOf: (request: Request) => ctx.principalOf(ctx.extractAuth(headersToMap(request.headers))) ?? '' } : {}),
        maxSessionsPerPrincipal: config.maxSessionsPerPrincipal,
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
