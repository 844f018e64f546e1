/**
 * The host API over HTTP (SPEC §12), free of any HTTP framework: a request description in, a
 * response description out. The node adapter (`node.ts`, the server's production path) and the
 * Hono adapter (`hono.ts`, for embedders) only translate.
 *
 *   GET  /mdp/clients?search=&limit=&cursor=                 → 200 {clients, nextCursor?}
 *   GET  /mdp/paths?clientId=&search=&depth=&limit=&cursor=   → 200 {paths, nextCursor?}
 *   POST /mdp/call       {clientId, method, path, query?, body?, headers?, auth?} → 200 {ok: true, data}
 *   POST /mdp/call-many  {clientIds?, method, path, …}                            → 200 {results}
 *
 * Listings are paged (SPEC §12.6, `@mdp/core` listing.ts): `limit` items at most (default 100, at
 * most 1000), about 1 MiB of JSON at most, and a page may end early after a bounded amount of work;
 * `nextCursor` is there while the listing goes on. Each page is built and written on its own, so
 * no answer is one giant string.
 *
 * Failures are `{error: SerializedError}` (a failed call also says `ok: false` and its `source`),
 * with one status mapping (`httpStatusOf`): 400 bad request (the message names the field), 401
 * refused by the auth policy, 403 refused by the origin policy, 404 unknown client or no such path,
 * 405 wrong method, 413 body too large, 415 a POST body not declared `application/json`, 502 the
 * client answered `ok: false` or went away, 504 time-out. A call whose HTTP request is abandoned is
 * cancelled.
 *
 * These routes reach every client, so web pages must not use them: with an `originPolicy`, a
 * request from another site's page (its `Origin`) or through a rebound DNS name (its `Host`) is
 * refused, and a POST must say `Content-Type: application/json`, which a page can only send after
 * a CORS preflight (a "simple" cross-origin form post cannot reach a call).
 */
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  FANOUT_BODY_FACTOR,
  FORWARD_AS_IS,
  FORWARD_WITHOUT_CREDENTIAL,
  INTERNAL_ERROR,
  MdpError,
  extractTransportAuth,
  fanoutTargets,
  httpStatusOf,
  originProblem,
  parseJsonObject,
  retryAfterHeader,
  silentLogger,
  type BodyResult,
  type CallSignal,
  type CredentialForwarding,
  type HeaderMap,
  type HostApi,
  type InflightBudget,
  type Logger,
  type OriginPolicy,
  type ScopeGuard,
  type Viewer,
} from '@mdp/core';
import {
  parseCallPathRequest,
  parseCallPathsRequest,
  parseListClientsRequest,
  parseListPathsRequest,
  MAX_LIST_LIMIT,
  type AuthContext,
  type CallResult,
  type ParseResult,
  type SerializedError,
} from '@mdp/protocol';

export interface HostApiOptions {
  /** Reads the caller's transport auth. Default: extractTransportAuth. */
  readonly extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /** Whether a caller with this transport auth may use the API; refused ones get 401. Default: all. */
  readonly authorize?: (auth: AuthContext | undefined) => boolean;
  /**
   * What of the caller's transport auth a call forwards to the client when its body names no `auth`
   * (an `auth` in the body is passed as given). `AuthGate` of `@mdp/core` is one. Default: with
   * `authorize` (an auth policy), nothing of the credential the server verified
   * (`FORWARD_WITHOUT_CREDENTIAL`); without, the transport auth as it came (`FORWARD_AS_IS`).
   */
  readonly forwarding?: CredentialForwarding;
  /**
   * Holds callers `authorize` accepted to their scopes (SPEC §17): the listings need the read scope,
   * the calls the call scope; without it 403 with `WWW-Authenticate: Bearer
   * error="insufficient_scope"`. A 401 says how to sign in. Default: none.
   */
  readonly scopeGuard?: ScopeGuard;
  /**
   * Checked against every request's Host and Origin (`originPolicyFor` of `@mdp/core`); refused
   * ones get 403. Default: none, for embedders that guard the routes themselves; the MDP server
   * always gives one.
   */
  readonly originPolicy?: OriginPolicy;
  /**
   * Who a caller with this transport auth is, for the host's tenancy (`@mdp/core` tenancy.ts): under
   * tenancy by principal it lists and calls only the clients it sees, and another's is an unknown
   * client (404). The MDP server gives `{principal: AuthGate.principalOf(auth)}` under an auth
   * policy. Default: none (the host answers as itself: every client).
   */
  readonly viewerOf?: (auth: AuthContext | undefined) => Viewer | undefined;
  /** Largest request body, bytes. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /**
   * The node's budget on bytes received but not yet a whole message (core's `InflightBudget`),
   * shared with the other edges: a body counts against it while it is read. Past it, the body whose
   * reading began first is answered 503 `{error: {code: 'not_ready', …}}` with `Retry-After: 1` and
   * the connection closes. Default: a budget of the adapter's own, 64 MiB.
   */
  readonly inflight?: InflightBudget;
  readonly logger?: Logger;
}

export const HOST_API_DEFAULTS = { maxBodyBytes: DEFAULT_MAX_MESSAGE_BYTES } as const;

/** The routes and the method each takes. */
export const HOST_ROUTES: Readonly<Record<string, 'GET' | 'POST'>> = Object.freeze({
  '/mdp/clients': 'GET',
  '/mdp/paths': 'GET',
  '/mdp/call': 'POST',
  '/mdp/call-many': 'POST',
});

/** What the handler needs of a request. Everything costly is a method, called only when needed. */
export interface HostHttpRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** One of {@link HOST_ROUTES}' paths. */
  readonly path: string;
  /** A query parameter (the last value of a repeated one). */
  query(name: string): string | undefined;
  headers(): HeaderMap;
  /** The body as UTF-8 text, refused above `maxBytes`. */
  readBody(maxBytes: number): Promise<BodyResult>;
  /** Aborted when the caller goes away before the answer is written. */
  signal(): CallSignal | undefined;
}

/** What the adapters write: JSON text, or no body (405). */
export interface HostHttpResponse {
  readonly status: number;
  readonly body: string | undefined;
  /** Headers beyond `content-type`. */
  readonly headers?: Readonly<Record<string, string>>;
}

export type HostHandler = (request: HostHttpRequest) => Promise<HostHttpResponse>;

const json = (status: number, value: unknown): HostHttpResponse => ({ status, body: JSON.stringify(value) });
const failure = (status: number, error: SerializedError): HostHttpResponse => json(status, { error });
const badRequest = (message: string): HostHttpResponse => failure(400, { code: 'bad_request', message });
const UNAUTHORIZED = failure(401, { code: 'unauthorized', message: 'Unauthorized' });
const NOT_JSON = failure(415, { code: 'bad_request', message: 'The body must be JSON, sent with Content-Type: application/json' });
const INTERNAL_FAILURE = failure(httpStatusOf(INTERNAL_ERROR), INTERNAL_ERROR);
const NOT_ALLOWED: Readonly<Record<string, HostHttpResponse>> = {
  GET: { status: 405, body: undefined, headers: { allow: 'GET, OPTIONS' } },
  POST: { status: 405, body: undefined, headers: { allow: 'POST, OPTIONS' } },
};

/** A body the node's in-flight budget needed the room of: not read further, so try again soon on a new connection. */
const evicted = (message: string): HostHttpResponse => ({
  ...failure(503, { code: 'not_ready', message, details: { retryAfterMs: 1000 } }),
  headers: { 'retry-after': '1', connection: 'close' },
});

/** Thrown by the steps below to end a request with `response`. */
class Answer {
  constructor(readonly response: HostHttpResponse) {}
}

function parsed<T>(result: ParseResult<T>): T {
  if (!result.ok) throw new Answer(badRequest(result.error));
  return result.value;
}

/** `?depth=` as a number; anything but a whole number of at least 1 is refused. */
function depthOf(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Answer(badRequest(`depth: must be a whole number of at least 1, got ${JSON.stringify(raw)}`));
  return Number(raw);
}

/** `?limit=` as a number (the schema checks its range); anything but digits is refused. Empty: none. */
function limitOf(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d{1,9}$/.test(raw))
    throw new Answer(badRequest(`limit: must be a whole number from 1 to ${MAX_LIST_LIMIT}, got ${JSON.stringify(raw.slice(0, 100))}`));
  return Number(raw);
}

/** `?cursor=`: the `nextCursor` of the page before. Empty: none (the first page). */
function cursorOf(raw: string | undefined): string | undefined {
  return raw === '' ? undefined : raw;
}

/** The first value of a header. */
function headerOf(headers: HeaderMap, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : value?.[0];
}

/** Whether a Content-Type names JSON (`application/json`, any parameters). */
function isJsonType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

function callAnswer(result: CallResult): HostHttpResponse {
  if (result.ok) return json(200, { ok: true, data: result.data ?? null });
  const status = httpStatusOf(result.error, result.source);
  // Refused before anything was sent (the client has too many calls waiting): try again soon.
  if (status === 503) return { ...json(status, result), headers: retryAfterHeader(result.error) };
  return json(status, result);
}

export function createHostHandler(host: HostApi, options: HostApiOptions = {}): HostHandler {
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const logger = options.logger ?? silentLogger;
  const maxBodyBytes = options.maxBodyBytes ?? HOST_API_DEFAULTS.maxBodyBytes;
  const forwarding = options.forwarding ?? (options.authorize ? FORWARD_WITHOUT_CREDENTIAL : FORWARD_AS_IS);
  /** A body's own `auth`, as the forwarding passes it on (under a policy: with the caller stamped on). */
  const named = (given: AuthContext, auth: AuthContext | undefined): AuthContext => (forwarding.namedAuth ? forwarding.namedAuth(given, auth) : given);

  const body = async (request: HostHttpRequest): Promise<Record<string, unknown>> => {
    const read = await request.readBody(maxBodyBytes);
    if (!read.ok) throw new Answer(read.status === 503 ? evicted(read.error) : failure(read.status, { code: 'bad_request', message: read.error }));
    const object = parseJsonObject(read.text, false);
    if (!object.ok) throw new Answer(badRequest(object.error));
    return object.value;
  };

  /**
   * `auth`: the caller's transport auth (for the audit log); `forwardable`: what of it the client may
   * get, unless the body names an `auth` of its own.
   */
  const route = async (request: HostHttpRequest, auth: AuthContext | undefined, forwardable: () => AuthContext | undefined): Promise<HostHttpResponse> => {
    const viewer = options.viewerOf?.(auth);
    const seen = viewer === undefined ? {} : { viewer };
    switch (request.path) {
      case '/mdp/clients': {
        const query = { search: request.query('search'), limit: limitOf(request.query('limit')), cursor: cursorOf(request.query('cursor')) };
        return json(200, await host.listClients(parsed(parseListClientsRequest(query)), seen));
      }
      case '/mdp/paths': {
        const query = {
          clientId: request.query('clientId'),
          search: request.query('search'),
          depth: depthOf(request.query('depth')),
          limit: limitOf(request.query('limit')),
          cursor: cursorOf(request.query('cursor')),
        };
        return json(200, await host.listPaths(parsed(parseListPathsRequest(query)), seen));
      }
      case '/mdp/call': {
        const call = parsed(parseCallPathRequest(await body(request)));
        const caller = call.auth ? named(call.auth, auth) : forwardable();
        return callAnswer(await host.callPath(caller ? { ...call, auth: caller } : call, { signal: request.signal(), route: 'host', caller: auth, ...seen }));
      }
      case '/mdp/call-many': {
        const call = parsed(parseCallPathsRequest(await body(request)));
        const caller = call.auth ? named(call.auth, auth) : forwardable();
        const forwarded = caller ? { ...call, auth: caller } : call;
        // Every client called gets its own copy of the payload: bound the copies, not just the request.
        const maxTargets = fanoutTargets(forwarded, FANOUT_BODY_FACTOR * maxBodyBytes);
        return json(200, await host.callPaths(forwarded, { signal: request.signal(), route: 'host', caller: auth, maxTargets, ...seen }));
      }
      default:
        throw new Error(`not a host API route: ${request.path}`);
    }
  };

  return async (request) => {
    const method = HOST_ROUTES[request.path];
    if (method === undefined) return json(404, { error: { code: 'not_found', message: `No route ${request.path}` } });
    const headers = request.headers();
    if (options.originPolicy) {
      const problem = originProblem({ host: headerOf(headers, 'host'), origin: headerOf(headers, 'origin') }, options.originPolicy);
      if (problem) return failure(403, { code: 'forbidden', message: problem });
    }
    if (request.method !== method) return NOT_ALLOWED[method] as HostHttpResponse;
    const auth = extractAuth(headers);
    const guard = options.scopeGuard;
    if (options.authorize && !options.authorize(auth)) return guard ? { ...UNAUTHORIZED, headers: { 'www-authenticate': guard.unauthorized() } } : UNAUTHORIZED;
    const lacking = guard?.missingScope(auth, method === 'GET' ? 'read' : 'call');
    if (guard && lacking !== undefined) {
      const what = method === 'GET' ? 'Listing' : 'Calling';
      return {
        ...failure(403, { code: 'forbidden', message: `${what} needs scope ${lacking}`, details: { scope: lacking } }),
        headers: { 'www-authenticate': guard.forbidden(lacking) },
      };
    }
    if (method === 'POST' && !isJsonType(headerOf(headers, 'content-type'))) return NOT_JSON;
    try {
      return await route(request, auth, () => forwarding.forwardableAuth(headers, auth));
    } catch (error) {
      if (error instanceof Answer) return error.response;
      if (error instanceof MdpError) return failure(httpStatusOf(error), error.toJSON());
      logger.error('host_api.failed', { method: request.method, path: request.path, error });
      return INTERNAL_FAILURE;
    }
  };
}
