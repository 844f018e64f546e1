/**
 * The HTTP loop routes (SPEC §6), relative to their mount point (`/mdp/http-loop`), free of any
 * HTTP framework: each takes a {@link LoopRequest} and gives a {@link LoopResponse}; the Hono and
 * node adapters only translate.
 *
 *   POST /connect     {} or empty          → 200 {sessionId}
 *   POST /send        {message}            → 202 {ok: true}
 *   GET  /poll?waitMs=                     → 200 {message} | 204 on time-out
 *   POST /disconnect                       → 204
 *
 * Later calls name their session by header `x-mdp-session-id` or query `sessionId`; a missing or
 * unknown session is 404 with an empty body, a malformed request 400 `{error}`. Under an auth policy
 * a session id alone is no credential: every later call must carry an accepted credential of the
 * principal that connected, or it is 401 and the session is left as it was. In a fleet (`relay`) a
 * request for a session this node does not hold is passed to the node that does (relay.ts).
 */
import {
  INTERNAL_ERROR as INTERNAL,
  MdpError,
  httpStatusOf,
  originPrincipal,
  parseJsonObject,
  retryAfterSeconds,
  type BodyResult,
  type HeaderMap,
  type Scopes,
  type Logger,
} from '@mdp/core';
import { parseClientMessage, type AuthContext, type ClientToServerMessage, type ParseResult } from '@mdp/protocol';
import type { PollConnection, TakeResult } from './mailbox.js';
import { RELAY_POLL_HEADER, RELAY_POLL_MARGIN_MS, RELAY_TIMEOUT_MS, relayHeaders, type LoopRelay, type RelayedRequest } from './relay.js';
import type { LoopSession, LoopSessionRegistry } from './registry.js';
import { SESSION_ID_HEADER, SESSION_ID_QUERY, readSessionId } from './session-id.js';
import { randomUUID } from 'node:crypto';
import { resolveWaitMs } from './wait.js';

/** What the routes need of a request. Everything costly is a method, called only when needed. */
export interface LoopRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** The `x-mdp-session-id` header (repeats joined by `, `), if any. */
  readonly sessionHeader: string | undefined;
  /** Every value of a query parameter, or `undefined` when absent. */
  query(name: string): readonly string[] | undefined;
  /** The request headers as a lower-case map, for the transport auth. */
  headers(): HeaderMap;
  /** The body as UTF-8 text, refused above `maxBytes`. */
  readBody(maxBytes: number): Promise<BodyResult>;
  /** The poll's connection; without one a poll's client counts as always there (in-process). */
  connection(): PollConnection | undefined;
  /** The client's address, counted against the per-address session cap; `undefined` when unknown. */
  remoteAddress(): string | undefined;
  /** Whether the request came over TLS; a session connected so is listed as secure. */
  readonly secure: boolean;
  /** It came from another node of the fleet (relay.ts): it is answered here or not at all. */
  readonly relayed?: boolean;
}

/** What the adapters write. `body` is JSON text, or absent for an empty body. */
export interface LoopResponse {
  readonly status: number;
  readonly body?: string;
  /** Headers beyond `content-type` / `content-length`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** A polled message rides on this response: call when it closed before it was fully written. */
  readonly onLost?: () => void;
}

export interface LoopRoutesOptions {
  readonly registry: LoopSessionRegistry;
  readonly logger: Logger;
  /** Fallback `waitMs` of a poll, ms. */
  readonly longPollTimeoutMs: number;
  /** Largest accepted body, bytes. */
  readonly maxBodyBytes: number;
  readonly extractAuth: (headers: HeaderMap) => AuthContext | undefined;
  readonly authorize: ((auth: AuthContext | undefined) => boolean) | undefined;
  /** The principal of a credential `authorize` accepted; later calls must come from the one that connected. */
  readonly principalOf: ((auth: AuthContext | undefined) => string | undefined) | undefined;
  /** The scopes of a credential `authorize` accepted (`undefined`: every scope). */
  readonly scopesOf?: ((auth: AuthContext | undefined) => Scopes) | undefined;
  /** True once the transport is closed: connects get 503. */
  readonly isClosed: () => boolean;
  /** In a fleet: reach the sessions other nodes hold, and let them reach ours (relay.ts). */
  readonly relay?: LoopRelay | undefined;
}

export interface LoopRoutes {
  connect(request: LoopRequest): Promise<LoopResponse>;
  send(request: LoopRequest): Promise<LoopResponse>;
  poll(request: LoopRequest): Promise<LoopResponse>;
  disconnect(request: LoopRequest): LoopResponse;
  /** Dispatch on the sub-path and method; anything else is 404 with an empty body. */
  handle(path: string, request: LoopRequest): LoopResponse | Promise<LoopResponse>;
}

// Pre-built answers: constant bodies are serialised once.
const EMPTY_204: LoopResponse = { status: 204 };
/** A missing or unknown session, or no such route. */
export const EMPTY_404: LoopResponse = { status: 404 };
const ACCEPTED: LoopResponse = { status: 202, body: '{"ok":true}' };
// Hono runs GET handlers for HEAD and drops the body: a HEAD poll would swallow a message.
const HEAD_NOT_ALLOWED: LoopResponse = { status: 405, headers: { allow: 'GET' } };
const SHUTTING_DOWN: LoopResponse = { status: 503, body: '{"error":"Server is shutting down"}' };
const UNAUTHORIZED: LoopResponse = { status: 401, body: '{"error":"Unauthorized"}' };
const RETRY_SOON = { 'retry-after': '1' } as const;
const MESSAGE_REQUIRED: LoopResponse = { status: 400, body: '{"error":"message: required"}' };
export const INTERNAL_ERROR: LoopResponse = { status: httpStatusOf(INTERNAL), body: JSON.stringify({ error: INTERNAL.message }) };

const error = (status: number, message: string, headers?: Readonly<Record<string, string>>): LoopResponse => ({
  status,
  body: JSON.stringify({ error: message }),
  headers,
});

/** A body the node's in-flight budget needed the room of is not read further: try again soon, on a new connection. */
const RETRY_ON_NEW_CONNECTION = { 'retry-after': '1', connection: 'close' } as const;

/** The answer to a body that was not read (400, 413, or 503 from the in-flight budget). */
const unread = (body: Extract<BodyResult, { ok: false }>): LoopResponse =>
  error(body.status, body.error, body.status === 503 ? RETRY_ON_NEW_CONNECTION : undefined);

/** The answer to a message core refused (SPEC §4, §6). */
function refused(caught: MdpError): LoopResponse {
  const retry =
    caught.refusal === 'rate_limited' || caught.code === 'not_ready' ? { 'retry-after': String(retryAfterSeconds(caught.retryAfterMs)) } : undefined;
  return error(httpStatusOf(caught), caught.message, retry);
}

/** Parse the `message` of a send body; the error names the offending field (`message.client.id: …`). */
function parseMessage(input: unknown): ParseResult<ClientToServerMessage> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, error: 'message: must be a JSON object', path: undefined };
  }
  const parsed = parseClientMessage(input);
  if (parsed.ok) return parsed;
  return { ok: false, error: parsed.path ? `message.${parsed.error}` : `message: ${parsed.error}`, path: parsed.path };
}

export function createLoopRoutes(options: LoopRoutesOptions): LoopRoutes {
  const { registry, logger, longPollTimeoutMs, maxBodyBytes, extractAuth, authorize, principalOf, scopesOf, isClosed, relay } = options;

  /**
   * The session a request names and the request's transport auth, or the response refusing it.
   * Under an auth policy a request without an accepted credential is 401 whatever session it names
   * (no answer tells it which sessions exist), and one from another principal than the session's
   * is 401 too; the session is not touched either way.
   */
  const lookup = (request: LoopRequest): { readonly found: LoopSession; readonly auth: AuthContext | undefined } | LoopResponse => {
    const id = readSessionId(request.sessionHeader, request.query(SESSION_ID_QUERY));
    if (id.kind === 'malformed') return error(400, id.error);
    const auth = extractAuth(request.headers());
    if (authorize && !authorize(auth)) return UNAUTHORIZED;
    const found = id.kind === 'ok' ? registry.get(id.id) : undefined;
    if (!found) return EMPTY_404;
    if (authorize && principalOf?.(auth) !== found.session.principal) {
      logger.info('request.wrong_principal', { sessionId: found.session.id });
      return UNAUTHORIZED;
    }
    return { found, auth };
  };

  const connect = async (request: LoopRequest): Promise<LoopResponse> => {
    if (isClosed()) return SHUTTING_DOWN;
    const body = await request.readBody(maxBodyBytes);
    if (!body.ok) return unread(body);
    const parsed = parseJsonObject(body.text, true);
    if (!parsed.ok) return error(400, parsed.error);
    if (isClosed()) return SHUTTING_DOWN;
    const auth = extractAuth(request.headers());
    if (authorize && !authorize(auth)) return UNAUTHORIZED;
    try {
      // Without a policy a page's ids are its origin's, and a program's (no Origin) the machine's.
      const given = request.headers().origin;
      const origin = typeof given === 'string' ? given : given?.[0];
      const principal = authorize ? principalOf?.(auth) : originPrincipal(origin);
      const opened = registry.open(auth, principal, request.remoteAddress(), request.secure, origin);
      if (typeof opened === 'string') return error(503, opened, RETRY_SOON);
      if (authorize && scopesOf) opened.session.scopes = scopesOf(auth);
      // In a fleet, answer once every node can reach the session: the next request may land anywhere.
      if (relay) {
        await relay.hold(opened.session.id).catch((caught: unknown) => {
          logger.warn('session.not_held', { sessionId: opened.session.id, error: (caught as Error).message });
        });
      }
      return { status: 200, body: JSON.stringify({ sessionId: opened.session.id }) };
    } catch (caught) {
      if (caught instanceof MdpError && caught.code === 'not_ready') return SHUTTING_DOWN;
      throw caught;
    }
  };

  const send = async (request: LoopRequest): Promise<LoopResponse> => {
    const looked = lookup(request);
    if (!('found' in looked)) return looked;
    const { session } = looked.found;
    session.touch(looked.auth ?? null);
    // The credential of this send holds the session to its scopes (a refreshed token may hold others).
    if (authorize && scopesOf) session.scopes = scopesOf(looked.auth);
    const body = await request.readBody(maxBodyBytes);
    if (!body.ok) {
      // Like a websocket frame over the limit (1009), an oversized send ends the session: the
      // message (often a call result) is lost, so its pending calls fail now instead of timing out.
      // One refused for the in-flight budget may be sent again: the session goes on.
      if (body.status === 413) registry.end(session.id, 'message over the size limit');
      return unread(body);
    }
    const parsed = parseJsonObject(body.text, false);
    if (!parsed.ok) return error(400, parsed.error);
    if (!('message' in parsed.value)) return MESSAGE_REQUIRED;
    const message = parseMessage(parsed.value.message);
    if (!message.ok) return error(400, message.error);
    // The session may have ended while the body was read.
    if (session.closed) return EMPTY_404;
    const answers = session.answers;
    try {
      session.handle(message.value);
    } catch (caught) {
      if (caught instanceof MdpError) return session.closed ? EMPTY_404 : refused(caught);
      throw caught;
    }
    if (session.answers !== answers) registry.answered(looked.found);
    return ACCEPTED;
  };

  /*
   * Long poll. A message leaves the queue only for a response that is still live, and comes back
   * to the head of the queue when that response closes before it was fully written:
   *
   *   poll ─▶ take(waitMs) ─┬─ message ─▶ client still there? ─ yes ─▶ 200 {message} ─▶ finished? ─ no ─▶ putBack
   *                         │                                  └ no ──▶ putBack, 204
   *                         └─ time-out / newer poll / closed / client gone ─▶ 204
   */
  const poll = async (request: LoopRequest): Promise<LoopResponse> => {
    if (request.method === 'HEAD') return HEAD_NOT_ALLOWED;
    const looked = lookup(request);
    if (!('found' in looked)) return looked;
    const { session, mailbox } = looked.found;
    session.touch(looked.auth ?? null);
    const waitMs = resolveWaitMs(request.query('waitMs')?.[0], longPollTimeoutMs);
    const connection = request.connection();
    const isLive = (): boolean => connection?.isLive() ?? true;
    // Every poll passes here: build the fields only when they will be written.
    if (logger.level === 'debug') logger.debug('poll.start', { sessionId: session.id, waitMs, queued: mailbox.size });
    registry.pollStarted(looked.found);
    let result: TakeResult;
    try {
      result = await mailbox.take({ waitMs, connection });
    } finally {
      registry.pollEnded(looked.found);
    }
    // The client was there for the whole wait: that counts as activity too.
    if (!session.closed && isLive()) session.touch();
    if (result.message === undefined) {
      logger.debug(result.reason === 'abandoned' ? 'poll.abandoned' : 'poll.empty', { sessionId: session.id, reason: result.reason });
      return EMPTY_204;
    }
    if (!isLive()) {
      mailbox.putBack(result);
      logger.debug('poll.abandoned', { sessionId: session.id, reason: 'abandoned' });
      return EMPTY_204;
    }
    return {
      status: 200,
      body: `{"message":${result.text}}`,
      onLost: () => {
        mailbox.putBack(result);
        logger.info('poll.requeued', { sessionId: session.id, type: result.message.type });
      },
    };
  };

  /**
   * A request for session `sessionId`, which this node does not hold: passed to the node that does
   * (relay.ts). A credential the policy refuses is 401 here, as for a local session; the holder
   * checks the rest. Nobody holds it: 404 with an empty body (a disconnect: 204).
   */
  const relayed = async (path: '/send' | '/poll' | '/disconnect', request: LoopRequest, sessionId: string, via: LoopRelay): Promise<LoopResponse> => {
    const headers = request.headers();
    if (authorize && !authorize(extractAuth(headers))) return UNAUTHORIZED;
    let body = '';
    if (path === '/send') {
      const read = await request.readBody(maxBodyBytes);
      if (!read.ok) return unread(read);
      body = read.text;
    }
    const passed: Record<string, string> = { ...relayHeaders(headers), [SESSION_ID_HEADER]: sessionId };
    let target: string = path;
    let timeoutMs = RELAY_TIMEOUT_MS;
    let pollId: string | undefined;
    if (path === '/poll') {
      // The wait is settled here, so that the holder waits exactly as long as this node does.
      const waitMs = resolveWaitMs(request.query('waitMs')?.[0], longPollTimeoutMs);
      target = `/poll?waitMs=${waitMs}`;
      timeoutMs = waitMs + RELAY_POLL_MARGIN_MS;
      pollId = randomUUID();
      passed[RELAY_POLL_HEADER] = pollId;
    }
    const internal = (what: string): RelayedRequest => ({ method: 'POST', target: what, headers: { [RELAY_POLL_HEADER]: pollId as string }, body: '' });
    const cut = new AbortController();
    // The client went away while its poll waited there: that poll takes nothing now.
    const stop = pollId
      ? request.connection()?.onGone(() => {
          cut.abort();
          void via.forward(sessionId, internal('/abandon'), { timeoutMs: RELAY_TIMEOUT_MS });
        })
      : undefined;
    let outcome: Awaited<ReturnType<LoopRelay['forward']>>;
    try {
      outcome = await via.forward(sessionId, { method: request.method, target, headers: passed, body }, { timeoutMs, signal: cut.signal });
    } finally {
      stop?.();
    }
    if (!outcome.ok) {
      if (cut.signal.aborted) return EMPTY_204;
      logger.debug('relay.failed', { sessionId, path, reason: outcome.reason, message: outcome.message });
      // The holder may have answered this poll (with a message) after this node gave up on it, or
      // with an answer that did not arrive: it takes nothing, or puts back what it took.
      if (pollId && (outcome.reason === 'timeout' || outcome.reason === 'failed' || outcome.reason === 'too_large')) {
        void via.forward(sessionId, internal('/abandon'), { timeoutMs: RELAY_TIMEOUT_MS });
      }
      switch (outcome.reason) {
        case 'unknown':
          return path === '/disconnect' ? EMPTY_204 : EMPTY_404;
        case 'not_ready':
          return error(503, outcome.message, { 'retry-after': String(retryAfterSeconds(outcome.retryAfterMs)) });
        case 'timeout':
          return error(504, outcome.message);
        case 'too_large':
          return error(413, outcome.message);
        default:
          return error(502, outcome.message);
      }
    }
    const { answer } = outcome;
    const response: LoopResponse = { status: answer.status, ...(answer.body === '' ? {} : { body: answer.body }), headers: answer.headers };
    if (!pollId || answer.status !== 200) return response;
    // The message rides on this response: when it cannot be written, the holder queues it again.
    return { ...response, onLost: () => void via.forward(sessionId, internal('/requeue'), { timeoutMs: RELAY_TIMEOUT_MS }) };
  };

  /** The session a request for `path` names, when another node must answer it (in a fleet, not held here). */
  const elsewhere = (path: string, request: LoopRequest): string | undefined => {
    if (!relay || request.relayed) return undefined;
    if (path !== '/send' && path !== '/poll' && path !== '/disconnect') return undefined;
    const id = readSessionId(request.sessionHeader, request.query(SESSION_ID_QUERY));
    return id.kind === 'ok' && registry.get(id.id) === undefined ? id.id : undefined;
  };

  const disconnect = (request: LoopRequest): LoopResponse => {
    const looked = lookup(request);
    // An unknown or missing session is gone already: 204, as for a known one.
    if (looked === EMPTY_404) return EMPTY_204;
    if (!('found' in looked)) return looked;
    registry.end(looked.found.session.id, 'client disconnected');
    return EMPTY_204;
  };

  return {
    connect,
    send,
    poll,
    disconnect,
    handle(path, request) {
      const { method } = request;
      const remote = relay && (method === 'POST' || method === 'GET') ? elsewhere(path, request) : undefined;
      if (remote !== undefined && relay && (path === '/poll' ? method === 'GET' : method === 'POST')) {
        return relayed(path as '/send' | '/poll' | '/disconnect', request, remote, relay);
      }
      switch (path) {
        case '/poll':
          return method === 'GET' || method === 'HEAD' ? poll(request) : EMPTY_404;
        case '/send':
          return method === 'POST' ? send(request) : EMPTY_404;
        case '/connect':
          return method === 'POST' ? connect(request) : EMPTY_404;
        case '/disconnect':
          return method === 'POST' ? disconnect(request) : EMPTY_404;
        default:
          return EMPTY_404;
      }
    },
  };
}
