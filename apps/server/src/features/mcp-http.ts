/**
 * The MCP bridge as a server feature: one bridge per server (its catalog names are the server's
 * for the life of the process), Streamable HTTP at `/mcp` on the listener, and the same bridge
 * for the stdio session of `mdp-server mcp` (`open()`). `/mcp` checks Host and Origin against DNS
 * rebinding and other sites' pages (the server's origin policy), then the server's auth policy,
 * before the SDK transport sees the request.
 *
 * The bridge (and with it the MCP SDK) is loaded when an agent first comes, not at start: the SDK's
 * schemas are tens of thousands of live objects that every major GC of the process walks, which
 * cost a server no agent talks to a third more CPU per host call (bench `host-call`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthContext } from '@mdp/protocol';
import {
  INTERNAL_ERROR,
  bearerChallenge,
  headersToMap,
  insufficientScopeChallenge,
  originProblem,
  readNodeBody,
  type AuthAction,
  type HostApi,
  type InflightBudget,
  type OriginPolicy,
  type Viewer,
} from '@mdp/core';
import type { McpBridge, McpHttpHandler } from '@mdp/mcp-bridge';
import { jsonRpcError, type SurfaceMode } from '@mdp/mcp-bridge/lite';
import type { ServerContext, ServerFeature } from '../feature.js';
import { SERVER_VERSION } from '../version.js';

export const MCP_PATH = '/mcp';

/** What `createMdpServer` takes as `mcp` (false: no bridge at all). */
export interface MdpMcpOptions {
  /** `catalog` (default): endpoints as tools, prompts as prompts, skills as resources; `generic`: the four generic tools only. */
  surface?: SurfaceMode;
  /** Most tools listed, the four generic ones included. Default 40. */
  maxTools?: number;
  /** Most bytes of text and decoded data in one result's MCP content, or one binary skill read. Default 3 MiB. */
  maxContentBytes?: number;
  /**
   * Time a client has to answer a call an agent made as an MCP task (`task` on `callPath` or a
   * catalog tool), ms. Default 10 minutes.
   */
  taskTimeoutMs?: number;
  /** Most MCP tasks one session holds (working, or finished and not expired). Default 32. */
  maxTasksPerSession?: number;
  /** Most MCP tasks the sessions of one principal hold together (without an auth policy: every session's). Default 128. */
  maxTasksPerPrincipal?: number;
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
  /** The bridge once loaded (the first `/mcp` request or `open()`); undefined before, and with `mcp: false`. */
  readonly bridge: McpBridge | undefined;
  /** Load the bridge now (the stdio session of `mdp-server mcp`). Rejects with `mcp: false`, before start and after close. */
  open(): Promise<McpBridge>;
}

type BridgeModule = typeof import('@mdp/mcp-bridge');

/** The loaded bridge, and `/mcp`'s handler unless `http: false`. */
interface Loaded {
  readonly bridge: McpBridge;
  readonly http: McpHttpHandler | undefined;
}

/** The server's icon for agents' hosts: an SVG, inline (a host needs no route of ours to show it). */
const ICON = `data:image/svg+xml;base64,${Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#1f2937"/><path d="M14 46V18l18 16 18-16v28" fill="none" stroke="#34d399" stroke-width="6" stroke-linejoin="round" stroke-linecap="round"/></svg>',
).toString('base64')}`;

/** What `initialize` says of this server; its website is the inspector (what is connected), once it listens. */
function serverInfo(http: string | undefined) {
  return {
    name: 'mdp-server',
    title: 'MDP server',
    version: SERVER_VERSION,
    icons: [{ src: ICON, mimeType: 'image/svg+xml', sizes: ['any'] }],
    ...(http === undefined ? {} : { websiteUrl: `${http}/mdp/inspector` }),
  };
}

/** The bridge cannot be had now: the server is not listening yet, or is shutting down (503). */
class Unavailable extends Error {}

/**
 * A host that asks `get` for the real one on every use, so that the feature may be listed before
 * whatever provides the host has started (a cluster node exists only once the server listens).
 */
function deferredHost(get: () => HostApi): HostApi {
  return {
    listClients: (request, options) => get().listClients(request, options),
    listPaths: (request, options) => get().listPaths(request, options),
    callPath: (request, options) => get().callPath(request, options),
    callPaths: (request, options) => get().callPaths(request, options),
    onChange: (listener, viewer) => get().onChange(listener, viewer),
  };
}

/**
 * The Fetch URL of a `/mcp` request, or the answer that refuses it first: a Host header that makes
 * no URL is 400 (it would make the Request constructor throw), and a request without one (HTTP/1.0)
 * is judged by the origin policy as it stands, as on the host API and the inspector (403 on a
 * loopback server), not as if it had named localhost.
 */
function mcpUrl(req: IncomingMessage, url: string, originPolicy: OriginPolicy): string | Response {
  const host = req.headers.host;
  if (host === undefined) {
    const problem = originProblem({ host, origin: req.headers.origin }, originPolicy);
    if (problem) return jsonRpcError(403, -32000, problem);
  }
  try {
    return new URL(url, `http://${host ?? 'localhost'}`).href;
  } catch {
    return jsonRpcError(400, -32000, `Bad Request: malformed Host header ${JSON.stringify(host)}`);
  }
}

const CLOSE = { connection: 'close' } as const;
/** A body the node's in-flight budget needed the room of: try again soon, on a new connection. */
const RETRY_ON_NEW_CONNECTION = { connection: 'close', 'retry-after': '1' } as const;

/**
 * One `/mcp` request on node's request: the body is read and parsed here (bounded), so the SDK
 * transport gets a `Request` without a body stream and the parsed message. Its signal aborts when
 * the agent closes the connection before the answer is written (the call it carried is cancelled).
 */
async function serveMcp(
  handler: McpHttpHandler,
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
  maxBodyBytes: number,
  originPolicy: OriginPolicy,
  inflight: InflightBudget,
): Promise<Response> {
  const target = mcpUrl(req, url, originPolicy);
  if (typeof target !== 'string') return target;
  // node's parsed headers: lower-case names, repeats joined (as Fetch Headers join them).
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  const closed = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) closed.abort();
  });
  const request = new Request(target, { method: req.method ?? 'GET', headers, signal: closed.signal });
  if (req.method !== 'POST') return handler.handle(request);
  const body = await readNodeBody(req, maxBodyBytes, inflight);
  // After a 413 or 503 the rest of the body is not read: the connection closes with the answer.
  if (!body.ok) return jsonRpcError(body.status, -32000, body.error, body.status === 400 ? {} : body.status === 503 ? RETRY_ON_NEW_CONNECTION : CLOSE);
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

/**
 * `hostApi`: the local router's host, or (clustered) one that asks the leader; asked on each use.
 * `guide`: the server's guide (`GET /SKILL.md`), the bridge's resource `mdp:///SKILL.md`.
 */
export function mcpFeature(
  ctx: ServerContext,
  options: MdpMcpOptions | false | undefined,
  hostApi: () => HostApi,
  guide?: (viewer: Viewer | undefined) => string,
): McpFeature {
  if (options === false) {
    return { name: 'mcp', bridge: undefined, open: () => Promise.reject(new Error('the MCP bridge is off (mcp: false)')) };
  }
  const config = options ?? {};
  const authorize = ctx.authorize;
  const scopeGuard = ctx.scopeGuard;
  let state: 'idle' | 'started' | 'closed' = 'idle';
  let loading: Promise<Loaded> | undefined;
  let loaded: Loaded | undefined;

  const create = (module: BridgeModule): Loaded => {
    const bridge = module.createMcpBridge({
      host: deferredHost(hostApi),
      serverInfo: serverInfo(ctx.info()?.urls.http),
      logger: ctx.logger,
      surface: config.surface,
      maxTools: config.maxTools,
      maxContentBytes: config.maxContentBytes,
      tasks: {
        ...(config.taskTimeoutMs === undefined ? {} : { timeoutMs: config.taskTimeoutMs }),
        ...(config.maxTasksPerSession === undefined ? {} : { maxPerSession: config.maxTasksPerSession }),
        ...(config.maxTasksPerPrincipal === undefined ? {} : { maxPerPrincipal: config.maxTasksPerPrincipal }),
      },
      include: config.include,
      exclude: config.exclude,
      guide,
      // Under --tenancy principal each principal's sessions get a catalog of what it sees.
      perViewer: ctx.tenancy.mode === 'principal',
    });
    const http =
      config.http === false
        ? undefined
        : module.createMcpHttpHandler(bridge, {
            originPolicy: ctx.originPolicy,
            authorize: authorize && ((request) => authorize(ctx.extractAuth(headersToMap(request.headers)))),
            // Under a policy a session belongs to the principal that opened it (the gate's, as for client ids).
            ...(authorize ? { principalOf: (request: Request) => ctx.principalOf(ctx.extractAuth(headersToMap(request.headers))) ?? '' } : {}),
            // SPEC §17: each message needs the scope of its action; a 401 names the resource metadata.
            ...(scopeGuard
              ? {
                  scopeGuard: {
                    missingScope: (request: Request, action: AuthAction) => scopeGuard.missingScope(ctx.extractAuth(headersToMap(request.headers)), action),
                    // The /mcp resource's own metadata: what an MCP client finds from the URL alone.
                    unauthorized: () => bearerChallenge(ctx.resourceMetadata(MCP_PATH)),
                    forbidden: (scope: string) => insufficientScopeChallenge(scope, ctx.resourceMetadata(MCP_PATH)),
                  },
                }
              : {}),
            // Signing teams in (SPEC §17), the session's calls tell clients who the agent is: the
            // principal and scopes of the credential that opened it, never its token.
            ...(ctx.accessTokens
              ? {
                  forwardOf: (request: Request) => {
                    const headers = headersToMap(request.headers);
                    const auth = ctx.extractAuth(headers);
                    const own = ctx.gate.forwardableAuth(headers, auth);
                    return (given: AuthContext | undefined) => (given ? ctx.gate.namedAuth(given, auth) : own);
                  },
                }
              : {}),
            maxSessionsPerPrincipal: config.maxSessionsPerPrincipal,
            maxBodyBytes: ctx.maxMessageBytes,
            maxSessions: config.maxSessions,
            sessionIdleMs: config.sessionIdleMs,
            logger: ctx.logger,
          });
    ctx.logger.debug('mcp.loaded', { http: http !== undefined });
    return { bridge, http };
  };

  /** The bridge, loaded once, between start and close. */
  const load = (): Promise<Loaded> => {
    if (state !== 'started') return Promise.reject(new Unavailable(state === 'idle' ? 'Not listening yet' : 'The server is shutting down'));
    loading ??= import('@mdp/mcp-bridge').then((module) => {
      // Closed while the module loaded: nothing to create, nothing to close later.
      if (state === 'closed') throw new Unavailable('The server is shutting down');
      return (loaded = create(module));
    });
    return loading;
  };

  return {
    name: 'mcp',
    get bridge() {
      return loaded?.bridge;
    },
    open: () => load().then(({ bridge }) => bridge),
    handle(req, res, url) {
      if (config.http === false || (url !== MCP_PATH && !url.startsWith(`${MCP_PATH}?`))) return false;
      const extra = ctx.guardedCorsFor(req);
      load()
        .then(({ http }) => serveMcp(http!, req, res, url, ctx.maxMessageBytes, ctx.originPolicy, ctx.inflight))
        .then(
          (response) => writeResponse(res, response, extra),
          (error: unknown) => {
            if (!(error instanceof Unavailable)) ctx.logger.error('mcp.http_failed', { error });
            if (res.headersSent) return void res.destroy();
            const answer = error instanceof Unavailable ? jsonRpcError(503, -32000, error.message) : jsonRpcError(500, -32603, INTERNAL_ERROR.message);
            void writeResponse(res, answer, extra);
          },
        );
      return true;
    },
    start() {
      if (state === 'idle') state = 'started';
    },
    async close() {
      state = 'closed';
      if (!loaded) return;
      await loaded.http?.close();
      await loaded.bridge.close();
    },
  };
}
