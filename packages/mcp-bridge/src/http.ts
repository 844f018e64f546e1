/**
 * MCP over Streamable HTTP for any Fetch-style server (Hono, Deno, workers): one
 * `handle(Request) → Response`. Each MCP session is the SDK's web-standard transport plus one
 * bridge session, found by its `Mcp-Session-Id`.
 *
 *   request ─▶ Origin/Host guard (403) ─▶ authorize (401) ─▶ method (405)
 *     ├─ Mcp-Session-Id known ─────────▶ that session's transport
 *     ├─ Mcp-Session-Id unknown ───────▶ 404 (the client starts a new session)
 *     ├─ none, POST, initialize ───────▶ room made (see below), new transport, kept
 *     ├─ none, POST, anything else ────▶ a transport that answers (400) and is closed
 *     └─ none, GET/DELETE ─────────────▶ 400
 *
 * Sessions end on DELETE, on `close()`, and when idle: no request in flight and no response
 * stream open (an agent holds a GET stream while it listens) for `sessionIdleMs`. An agent that
 * went away without a DELETE has closed its streams, so its session is released that long after.
 *
 * Under an auth policy (`principalOf`) a session belongs to the principal that opened it: another
 * credential naming it gets 404, as for a session that does not exist. One principal holds at most
 * `maxSessionsPerPrincipal`. An initialize that finds its principal's quota, or the whole table,
 * full takes the place of an idle session (its principal's oldest; else the oldest of whoever holds
 * the most) instead of being refused: an idle session's agent sent nothing and listens to nothing,
 * and MCP has it start a new session on 404 if it comes back. Only when none is idle is it 503.
 */
import { randomUUID } from 'node:crypto';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { AuthContext } from '@mdp/protocol';
import { originProblem, readBodyText, silentLogger, type AuthAction, type Logger, type OriginPolicy } from '@mdp/core';
import type { McpBridge, McpSession } from './bridge.js';
import { Timer, systemClock, type Clock } from './clock.js';
import { releaseAnsweredJsonStreams } from './json-streams.js';
import { MCP_HTTP_DEFAULTS, jsonRpcError } from './lite.js';

export interface McpHttpOptions {
  /** Checked against every request's Host and Origin. */
  readonly originPolicy: OriginPolicy;
  /** Whether a request may use the bridge (an auth policy); refused ones get 401. Default: all may. */
  readonly authorize?: (request: Request) => boolean;
  /**
   * Who an authorized request comes from (e.g. a hash of its token): a session answers only the
   * principal that opened it, and is the bridge's session of that viewer (`connect`'s `viewer`:
   * under tenancy by principal it sees only that principal's clients). Default: everyone is one
   * principal, and sessions name no viewer.
   */
  readonly principalOf?: (request: Request) => string;
  /**
   * Holds requests `authorize` accepted to their scopes (SPEC §17, MCP authorization): each
   * JSON-RPC message needs the scope of its action ({@link mcpActionOf}), else 403 with
   * `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`; and says how to sign in on a
   * 401 (`resource_metadata`). Default: none.
   */
  readonly scopeGuard?: McpScopeGuard;
  /**
   * What the calls of a session carry to clients (`McpConnectOptions.forward`), from the credential
   * of the request that made each call (an agent that refreshed its token is stamped with the new
   * one's scopes from its next request on; a session stays with one principal, and a call never
   * carries another request's credential): the server stamps who the agent is. Default: none.
   */
  readonly forwardOf?: (request: Request) => ((given: AuthContext | undefined) => AuthContext | undefined) | undefined;
  readonly maxBodyBytes?: number;
  readonly maxSessions?: number;
  readonly maxSessionsPerPrincipal?: number;
  readonly sessionIdleMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** {@link McpHttpOptions.scopeGuard}: core's `ScopeGuard`, on Fetch requests. */
export interface McpScopeGuard {
  missingScope(request: Request, action: AuthAction): string | undefined;
  /** `WWW-Authenticate` of a 401. */
  unauthorized(): string;
  /** `WWW-Authenticate` of a 403 for `scope`. */
  forbidden(scope: string): string;
}

/** The generic tools that only list. */
const LISTING_TOOLS: ReadonlySet<string> = new Set(['listClients', 'listPaths']);

/**
 * The action one JSON-RPC message takes, for its scope: calling a tool (but the two generic tools
 * that list), getting a prompt (a GET of the prompt's path on its client) and the task methods of
 * calls are `call`; everything else (initialize, lists, reading a skill resource, completions,
 * notifications, responses) is `read`.
 */
export function mcpActionOf(message: unknown): AuthAction {
  if (typeof message !== 'object' || message === null) return 'read';
  const { method, params } = message as { method?: unknown; params?: { name?: unknown } };
  if (method === 'tools/call') return typeof params?.name === 'string' && LISTING_TOOLS.has(params.name) ? 'read' : 'call';
  if (method === 'prompts/get' || (typeof method === 'string' && method.startsWith('tasks/'))) return 'call';
  return 'read';
}

export interface McpHttpHandler {
  /**
   * Answer one request. An adapter that has read and parsed the body itself (bounded by
   * `maxBodyBytes`) passes it as `parsedBody`, and `request` then needs no body: the SDK does not
   * read it again.
   */
  handle(request: Request, parsedBody?: unknown): Promise<Response>;
  /** Open sessions. */
  readonly sessions: number;
  /** End every session. Idempotent. */
  close(): Promise<void>;
}

interface Entry {
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly session: McpSession;
  /** Who opened it (`principalOf`); '' without one. */
  readonly principal: string;
  /** Requests in flight plus response streams open. */
  active: number;
  /** When it last became idle (or opened), ms of the clock. */
  idleSince: number;
  readonly idle: Timer;
  /** Requests of this session the agent cancelled (or whose HTTP request closed) while they ran. */
  readonly cancelled: Set<RequestId>;
}

type Forward = (given: AuthContext | undefined) => AuthContext | undefined;

/** The ids of the JSON-RPC requests in a POST body (one message or a batch). */
function requestIdsOf(body: unknown): RequestId[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages
    .filter(
      (message): message is { id: RequestId; method: string } =>
        typeof message === 'object' && message !== null && typeof (message as { method?: unknown }).method === 'string' && 'id' in message,
    )
    .map((message) => message.id)
    .filter((id) => typeof id === 'string' || typeof id === 'number');
}

/**
 * Cancellation on a transport that answers with JSON: the SDK's server drops the answer of a
 * cancelled request (MCP says none is sent), which leaves the transport waiting for it and the HTTP
 * request that carried it open for good. Every `notifications/cancelled` the agent sends is
 * followed here by an answer to settle the transport (the agent gave up on it: nobody reads it, and
 * a POST whose requests were all cancelled is answered 202).
 */
function settleCancelled(transport: WebStandardStreamableHTTPServerTransport, cancelled: Set<RequestId>): void {
  const onmessage = transport.onmessage;
  if (!onmessage) return;
  transport.onmessage = (message, extra) => {
    onmessage(message, extra);
    if (!('method' in message) || message.method !== 'notifications/cancelled' || 'id' in message) return;
    const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    cancelled.add(requestId);
    const answer: JSONRPCMessage = { jsonrpc: '2.0', id: requestId, error: { code: -32000, message: 'Request cancelled' } };
    // Already answered (the cancellation came late) or unknown: nothing is waiting.
    transport.send(answer).catch(() => cancelled.delete(requestId));
  };
}

/** The idle session idle the longest among those `eligible`. */
function oldestIdle(entries: Iterable<Entry>, eligible: (entry: Entry) => boolean): Entry | undefined {
  let oldest: Entry | undefined;
  for (const entry of entries) if (entry.active === 0 && eligible(entry) && (oldest === undefined || entry.idleSince < oldest.idleSince)) oldest = entry;
  return oldest;
}

/** The idle session to end when the table is full: one of whoever holds the most sessions, idle the longest. */
function hoggingIdle(entries: Iterable<Entry>): Entry | undefined {
  const all = [...entries];
  const counts = new Map<string, number>();
  for (const entry of all) counts.set(entry.principal, (counts.get(entry.principal) ?? 0) + 1);
  let victim: Entry | undefined;
  for (const entry of all) {
    if (entry.active > 0) continue;
    const mine = counts.get(entry.principal) ?? 0;
    const theirs = victim === undefined ? -1 : (counts.get(victim.principal) ?? 0);
    if (mine > theirs || (mine === theirs && entry.idleSince < (victim as Entry).idleSince)) victim = entry;
  }
  return victim;
}

/** Whether a POST body opens a session: an initialize, alone or in a batch (as the SDK reads it). */
function isInitialize(body: unknown): boolean {
  return Array.isArray(body) ? body.some((message) => isInitializeRequest(message)) : isInitializeRequest(body);
}

/**
 * The body of a POST an adapter did not parse, read here (bounded) so that whether it is an
 * initialize is known before anything is done for it. `parsed` is undefined when it is no JSON: the
 * SDK transport answers that from `request`, rebuilt around the text read.
 */
async function bodyOf(request: Request, maxBytes: number): Promise<{ request: Request; parsed: unknown } | Response> {
  const read = await readBodyText(request, maxBytes);
  if (!read.ok) return jsonRpcError(read.status, -32000, read.error);
  let parsed: unknown;
  try {
    parsed = JSON.parse(read.text);
  } catch {
    parsed = undefined;
  }
  return { request: new Request(request.url, { method: request.method, headers: request.headers, body: read.text, signal: request.signal }), parsed };
}

/**
 * `response` with a body that calls `done` once, when it ends or its reader cancels (the client went
 * away). A plain JSON answer is complete already: it is passed on as it is.
 */
function watched(response: Response, done: () => void): Response {
  if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) {
    done();
    return response;
  }
  const reader = response.body.getReader();
  let finished = false;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    done();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read();
        if (end) {
          controller.close();
          finish();
        } else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
        finish();
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

export function createMcpHttpHandler(bridge: McpBridge, options: McpHttpOptions): McpHttpHandler {
  const clock = options.clock ?? systemClock;
  const logger = (options.logger ?? silentLogger).child({ component: 'mcp-http' });
  const maxBodyBytes = options.maxBodyBytes ?? MCP_HTTP_DEFAULTS.maxBodyBytes;
  const maxSessions = options.maxSessions ?? MCP_HTTP_DEFAULTS.maxSessions;
  // Without principals everyone is one: only the table's own cap applies.
  const perPrincipal = options.principalOf ? (options.maxSessionsPerPrincipal ?? MCP_HTTP_DEFAULTS.maxSessionsPerPrincipal) : Infinity;
  const principalOf = options.principalOf ?? (() => '');
  const idleMs = options.sessionIdleMs ?? MCP_HTTP_DEFAULTS.sessionIdleMs;
  const sessions = new Map<string, Entry>();
  /**
   * What the calls of one request carry (`forwardOf` of it), found by the `authInfo` the transport
   * hands that request's handlers (one object per request, made here).
   */
  const stamps = new WeakMap<AuthInfo, Forward>();
  /** Transports that have not initialized yet (their first POST is in flight), by principal. */
  const starting = new Map<string, number>();
  let startingTotal = 0;
  let closed = false;

  const held = (principal: string): number => {
    let count = starting.get(principal) ?? 0;
    for (const entry of sessions.values()) if (entry.principal === principal) count += 1;
    return count;
  };

  /** End `entry` now to make room; its agent gets 404 and starts a new session if it comes back. */
  const evict = (entry: Entry, why: string): void => {
    const id = entry.transport.sessionId;
    if (id !== undefined) sessions.delete(id);
    entry.idle.clear();
    logger.info('mcp.session_evicted', { sessionId: id, why, idleMs: clock.now() - entry.idleSince });
    void entry.session.close();
  };

  /** Make room for one more session of `principal`: undefined when made, else the refusal. */
  const room = (principal: string): Response | undefined => {
    if (held(principal) >= perPrincipal) {
      const victim = oldestIdle(sessions.values(), (entry) => entry.principal === principal);
      if (!victim)
        return jsonRpcError(503, -32000, `Too many MCP sessions for this credential (${perPrincipal}), none idle; close one (DELETE /mcp) or try later`);
      evict(victim, 'principal_quota');
    }
    if (sessions.size + startingTotal >= maxSessions) {
      const victim = hoggingIdle(sessions.values());
      if (!victim) return jsonRpcError(503, -32000, `Too many MCP sessions (${maxSessions}), none idle; close one (DELETE /mcp) or try later`);
      evict(victim, 'server_full');
    }
    return undefined;
  };

  const serve = async (entry: Entry, request: Request, parsedBody: unknown): Promise<Response> => {
    if (request.method === 'POST' && parsedBody === undefined) {
      // Read here (bounded) to know the requests it carries, which its closing cancels.
      const read = await bodyOf(request, maxBodyBytes);
      if (read instanceof Response) return read;
      request = read.request;
      parsedBody = read.parsed;
    }
    // Calls this request makes are stamped with its own credential (the one `authorize` accepted).
    const forward = options.forwardOf?.(request);
    let authInfo: AuthInfo | undefined;
    if (forward) stamps.set((authInfo = { token: '', clientId: '', scopes: [] }), forward);
    entry.active += 1;
    entry.idle.clear();
    const release = (): void => {
      entry.active -= 1;
      if (entry.active > 0 || !entry.transport.sessionId || !sessions.has(entry.transport.sessionId)) return;
      entry.idleSince = clock.now();
      entry.idle.after(idleMs, () => {
        logger.info('mcp.session_expired', { sessionId: entry.transport.sessionId, idleMs });
        void entry.session.close();
      });
    };
    // The agent closing the HTTP request of a call cancels it, as a notifications/cancelled would.
    const ids = request.method === 'POST' ? requestIdsOf(parsedBody) : [];
    const onClosed = (): void => {
      for (const requestId of ids) {
        entry.transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'The HTTP request was closed' } });
      }
    };
    if (ids.length > 0) request.signal.addEventListener('abort', onClosed, { once: true });
    let response: Response;
    try {
      response = await entry.transport.handleRequest(request, {
        ...(parsedBody === undefined ? {} : { parsedBody }),
        ...(authInfo === undefined ? {} : { authInfo }),
      });
      releaseAnsweredJsonStreams(entry.transport);
    } catch (error) {
      release();
      throw error;
    } finally {
      request.signal.removeEventListener('abort', onClosed);
    }
    if (ids.length > 0 && ids.every((id) => entry.cancelled.has(id))) {
      for (const id of ids) entry.cancelled.delete(id);
      await response.body?.cancel().catch(() => undefined);
      release();
      return new Response(null, { status: 202 });
    }
    for (const id of ids) entry.cancelled.delete(id);
    return watched(response, release);
  };

  /**
   * A POST without a session id. Only an initialize opens a session, so only one makes room (ends
   * an idle session) and counts as starting: anything else goes to a transport that is closed once
   * it answered (its refusal names what was wrong), and never costs another agent its session.
   */
  const open = async (request: Request, parsedBody: unknown, principal: string): Promise<Response> => {
    if (parsedBody === undefined) {
      const read = await bodyOf(request, maxBodyBytes);
      if (read instanceof Response) return read;
      request = read.request;
      parsedBody = read.parsed;
    }
    const initialize = isInitialize(parsedBody);
    if (initialize) {
      const refused = room(principal);
      if (refused) return refused;
      starting.set(principal, (starting.get(principal) ?? 0) + 1);
      startingTotal += 1;
    }
    let entry: Entry | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      maxRequestBodySize: maxBodyBytes,
      // A request is answered with one JSON response, not a server-sent-event stream of one event:
      // a stream costs several times the CPU of the call itself. Notifications (list_changed) go
      // to the session's GET stream, which stays a stream.
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        if (entry) sessions.set(id, entry);
        logger.info('mcp.session_opened', { sessionId: id });
      },
    });
    try {
      const forwardOf = options.forwardOf;
      const session = await bridge.connect(transport, {
        jsonAnswers: true,
        ...(options.principalOf ? { viewer: { principal: principal === '' ? undefined : principal } } : {}),
        ...(forwardOf
          ? {
              forward: (given: AuthContext | undefined, authInfo: AuthInfo | undefined) => {
                const stamp = authInfo === undefined ? undefined : stamps.get(authInfo);
                return stamp ? stamp(given) : given;
              },
            }
          : {}),
      });
      entry = {
        transport,
        session,
        principal,
        active: 0,
        idleSince: clock.now(),
        idle: new Timer(clock, (error) => logger.error('mcp.timer_failed', { error })),
        cancelled: new Set(),
      };
      settleCancelled(transport, entry.cancelled);
      const current = entry;
      void session.closed.then(() => {
        current.idle.clear();
        if (transport.sessionId !== undefined && sessions.get(transport.sessionId) === current) sessions.delete(transport.sessionId);
      });
      const response = await serve(entry, request, parsedBody);
      if (transport.sessionId !== undefined) return response;
      // Not an initialize: nothing to keep.
      await session.close();
      // The transport's own word for a request that is no initialize ("Server not initialized") says
      // too little; other refusals (bad JSON, wrong content type) stand as they are.
      const text = await response.text();
      if (response.status === 400 && text.includes('not initialized')) {
        return jsonRpcError(400, -32000, 'Bad Request: no Mcp-Session-Id header; start a session with an initialize request');
      }
      return new Response(text, { status: response.status, headers: response.headers });
    } finally {
      if (initialize) {
        startingTotal -= 1;
        const left = (starting.get(principal) ?? 1) - 1;
        if (left === 0) starting.delete(principal);
        else starting.set(principal, left);
      }
    }
  };

  return {
    async handle(request, parsedBody) {
      // A Fetch Request built in process has no Host header; its URL's host stands for it.
      const host = request.headers.get('host') ?? new URL(request.url).host;
      const problem = originProblem({ host, origin: request.headers.get('origin') }, options.originPolicy);
      if (problem) return jsonRpcError(403, -32000, problem);
      const guard = options.scopeGuard;
      if (options.authorize && !options.authorize(request)) {
        return jsonRpcError(401, -32000, 'Unauthorized: this server needs a credential (e.g. Authorization: Bearer <token>)', {
          'www-authenticate': guard?.unauthorized() ?? 'Bearer',
        });
      }
      if (guard && request.method === 'POST') {
        if (parsedBody === undefined) {
          const read = await bodyOf(request, maxBodyBytes);
          if (read instanceof Response) return read;
          request = read.request;
          parsedBody = read.parsed;
        }
        // Reading needs the read scope (also to open a session); a message that calls, the call scope.
        const actions = new Set<AuthAction>(['read']);
        for (const message of Array.isArray(parsedBody) ? parsedBody : [parsedBody]) actions.add(mcpActionOf(message));
        for (const action of actions) {
          const lacking = guard.missingScope(request, action);
          if (lacking === undefined) continue;
          logger.info('mcp.insufficient_scope', { action, scope: lacking });
          return jsonRpcError(403, -32000, `Forbidden: this needs scope ${lacking}`, { 'www-authenticate': guard.forbidden(lacking) });
        }
      }
      if (request.method !== 'POST' && request.method !== 'GET' && request.method !== 'DELETE') {
        return jsonRpcError(405, -32000, `Method ${request.method} not allowed: use POST, GET or DELETE`, { allow: 'GET, POST, DELETE, OPTIONS' });
      }
      if (closed) return jsonRpcError(503, -32000, 'The server is shutting down');
      const id = request.headers.get('mcp-session-id');
      const principal = principalOf(request);
      if (id === null) {
        if (request.method !== 'POST') return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
        return open(request, parsedBody, principal);
      }
      const entry = sessions.get(id);
      // Another principal's session is as good as none: its id alone is never a credential.
      if (!entry || entry.principal !== principal) {
        return jsonRpcError(404, -32001, 'Session not found: it ended or never existed; start a new one with an initialize request');
      }
      return serve(entry, request, parsedBody);
    },
    get sessions() {
      return sessions.size;
    },
    async close() {
      closed = true;
      const entries = [...sessions.values()];
      sessions.clear();
      for (const entry of entries) entry.idle.clear();
      await Promise.all(entries.map((entry) => entry.session.close().catch(() => undefined)));
    },
  };
}
