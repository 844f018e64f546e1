/**
 * Skill reads, independent of any HTTP framework: a request description in, a response
 * description out. The node handler (`node.ts`) and the Hono routes (`hono.ts`) are thin adapters
 * around this.
 */
import { UNSENDABLE_DATA_ERROR, skillPathCandidates, type AuthContext } from '@mdp/protocol';
import {
  FORWARD_AS_IS,
  FORWARD_WITHOUT_CREDENTIAL,
  INTERNAL_ERROR as INTERNAL,
  httpStatusOf,
  resolveClientId,
  retryAfterHeader,
  serializeError,
  type CallHandle,
  type CallSignal,
  type CredentialForwarding,
  type InvokeOutcome,
  type IsServerId,
  type Maybe,
  type ResolvedTarget,
  type Router,
  type ScopeGuard,
  type SeenClient,
} from '@mdp/core';
import { parseSkillRoute, rawSkillRoute } from './route.js';

export interface SkillReadRequest {
  readonly method: string;
  /** Raw pathname, still percent-encoded. */
  readonly pathname: string;
  /** Query parameters; the last value of a repeated key wins. */
  readonly query: Record<string, string>;
  /** Request headers as `headersToMap` (`@mdp/core`) reads them: lower-case names, repeats joined. */
  readonly headers: Record<string, string>;
  readonly auth: AuthContext | undefined;
}

export interface SkillReadResponse {
  readonly status: number;
  /** Possibly shared between answers: copy before changing. */
  readonly headers: Readonly<Record<string, string>>;
  /** `undefined` for an empty body. */
  readonly body: string | undefined;
  /** Why a 404 found nothing (also in `headers`), for the adapters' logs. */
  readonly miss?: SkillMiss;
  /** `readerRefusal` refused this reader: an adapter adds no CORS grant to the answer. */
  readonly readerRefused?: true;
}

export interface SkillReadOptions {
  /** Per-call time-out override, ms; default the router's invocation time-out. */
  timeoutMs?: number;
  /** Whether a reader with this transport auth may read; refused reads get 401. Default: all. */
  authorize?: (auth: AuthContext | undefined) => boolean;
  /**
   * Holds readers `authorize` accepted to their scopes (SPEC §17): one without the read scope gets
   * 403 `{error}` with `WWW-Authenticate: Bearer error="insufficient_scope"`; a 401 says how to
   * sign in. Default: none (every accepted reader reads).
   */
  scopeGuard?: ScopeGuard;
  /**
   * What of the reader's headers and transport auth the client gets (`AuthGate` of `@mdp/core` is
   * one). Default: with `authorize` (an auth policy), everything but the credential the server
   * verified (`FORWARD_WITHOUT_CREDENTIAL`); without, everything as it came (`FORWARD_AS_IS`).
   */
  forwarding?: CredentialForwarding;
  /**
   * Whether an id is a server id of this server's cluster: a read of an absent client names its
   * mirrored twin only under such a prefix (`resolveClientId` of `@mdp/core`). Default: none.
   */
  isServerId?: IsServerId;
  /**
   * Why the reader of `clientId`'s skills may not read them, from its request headers (a web page
   * of another site, by its `Origin`; a rebound DNS name, by its `Host`), or `undefined` when it
   * may. A refused read of a skill that exists is 403 `{error}` and never reaches the client; any
   * refused answer (a preflight is still the seed's 204, a miss still its empty 404) is marked
   * `readerRefused` so that the adapter grants it no CORS. Default: every reader may.
   */
  readerRefusal?: (headers: Readonly<Record<string, string>>, clientId: string) => string | undefined;
  /**
   * The clients a reader with this transport auth sees (tenancy by principal: `clientsSeenBy` of
   * `@mdp/core`), or `undefined` when it sees every client. A client the reader does not see is an
   * unknown client: the seed's empty 404 with `MDP-Error-Code: unknown_client`, exactly as for an
   * id nobody holds, and nothing is sent to it. Default: every reader sees every client.
   */
  visibleTo?: (auth: AuthContext | undefined) => ((client: SeenClient) => boolean) | undefined;
}

export const DEFAULT_SKILL_CONTENT_TYPE = 'text/markdown; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const ALLOW = 'GET, OPTIONS';

const json = (status: number, value: unknown): SkillReadResponse => ({
  status,
  headers: { 'content-type': JSON_TYPE },
  body: JSON.stringify(value),
});
const empty = (status: number, headers: Readonly<Record<string, string>> = {}): SkillReadResponse => ({ status, headers, body: undefined });

const UNAUTHORIZED: SkillReadResponse = json(401, { error: 'Unauthorized' });
/** What an adapter answers when a read fails inside the server; the cause is logged, never echoed. */
export const INTERNAL_ERROR: SkillReadResponse = json(httpStatusOf(INTERNAL), { error: INTERNAL.message });

/** `text/*` without a charset gets `; charset=utf-8`; no content type means Markdown. */
export function skillContentType(declared: string | undefined): string {
  if (!declared) return DEFAULT_SKILL_CONTENT_TYPE;
  if (/^text\//i.test(declared) && !/;\s*charset=/i.test(declared)) return `${declared}; charset=utf-8`;
  return declared;
}

/**
 * Read a skill; resolves with the response to send. Never rejects for a client's failure. `signal`
 * aborts when the reader goes away: the call then ends at once and is never delivered later.
 */
export function handleSkillRead(router: Router, request: SkillReadRequest, options: SkillReadOptions = {}, signal?: AbortSignal): Promise<SkillReadResponse> {
  return new Promise((resolve) => readSkill(router, request, options, resolve, signal));
}

/**
 * {@link handleSkillRead} with a callback, for adapters on the hot path: `respond` is called exactly
 * once, synchronously for answers that need no client (errors, OPTIONS), later for a relayed read.
 * Returns the call in flight (hand it to `router.cancel` when the reader goes away, if there is no
 * `signal`), or `undefined` when `respond` was already called.
 */
export function readSkill(
  router: Router,
  request: SkillReadRequest,
  options: SkillReadOptions,
  respond: (response: SkillReadResponse) => void,
  signal?: AbortSignal,
): CallHandle | undefined {
  const read = resolveRead(router, request, options);
  if ('status' in read) {
    respond(read);
    return undefined;
  }
  if ('pending' in read) return readLater(router, request, options, read, respond, signal);
  return dispatchRead(router, request, options, read.clientId, read.target, respond, signal);
}

/**
 * A read of a client of another node of the fleet (SPEC §16): its catalog is fetched from there
 * (cached by digest) before the read goes on as for a client of this node. The handle returned ends
 * the wait, and the call after it, when the reader goes away (`router.cancel`).
 */
function readLater(
  router: Router,
  request: SkillReadRequest,
  options: SkillReadOptions,
  read: PendingRead,
  respond: (response: SkillReadResponse) => void,
  signal: AbortSignal | undefined,
): CallHandle {
  const wait = router.fleet.waitHandle();
  const onAbort = (): void => router.cancel(wait);
  signal?.addEventListener('abort', onAbort, { once: true });
  const finish = (response: SkillReadResponse): void => {
    signal?.removeEventListener('abort', onAbort);
    respond(response);
  };
  read.pending.then(
    (target) => {
      if (!target) {
        finish(read.miss());
        return;
      }
      const refused = readerRefused(request, read.clientId, options);
      if (refused) finish(refused);
      else dispatchRead(router, request, options, read.clientId, target, finish, wait.signal);
    },
    (error: unknown) => finish(answerTo({ ok: false, source: 'server', error: serializeError(error) }, read.clientId, undefined)),
  );
  return wait;
}

function dispatchRead(
  router: Router,
  request: SkillReadRequest,
  options: SkillReadOptions,
  clientId: string,
  target: ResolvedTarget,
  respond: (response: SkillReadResponse) => void,
  signal: CallSignal | undefined,
): CallHandle | undefined {
  const forwarding = options.forwarding ?? (options.authorize ? FORWARD_WITHOUT_CREDENTIAL : FORWARD_AS_IS);
  return router.dispatch(
    clientId,
    target,
    {
      query: request.query,
      headers: forwarding.forwardableHeaders(request.headers),
      auth: forwarding.forwardableAuth(request.headers, request.auth),
      caller: request.auth,
      timeoutMs: options.timeoutMs,
      route: 'skill',
      signal,
    },
    (outcome) => respond(answerTo(outcome, clientId, target)),
  );
}

/** A read whose skill is being looked up in a remote client's catalog; `miss` answers when there is none. */
interface PendingRead {
  readonly clientId: string;
  readonly pending: Promise<ResolvedTarget | undefined>;
  readonly miss: () => SkillReadResponse;
}

/**
 * The skill a request reads and on which client, the response that ends it without a call, or
 * (for a client of another node of the fleet) the lookup to wait for.
 */
function resolveRead(
  router: Router,
  request: SkillReadRequest,
  options: SkillReadOptions,
): { readonly clientId: string; readonly target: ResolvedTarget } | SkillReadResponse | PendingRead {
  if (request.method === 'OPTIONS') return preflight(request, options);
  if (options.authorize && !options.authorize(request.auth))
    return options.scopeGuard ? { ...UNAUTHORIZED, headers: { ...UNAUTHORIZED.headers, 'www-authenticate': options.scopeGuard.unauthorized() } } : UNAUTHORIZED;
  if (request.method !== 'GET') return empty(405, { allow: ALLOW });
  const guard = options.scopeGuard;
  const lacking = guard?.missingScope(request.auth, 'read');
  if (guard && lacking !== undefined) {
    return {
      ...json(403, { error: `Reading skills needs scope ${lacking}` }),
      headers: { 'content-type': JSON_TYPE, 'www-authenticate': guard.forbidden(lacking) },
    };
  }
  const raw = rawSkillRoute(request.pathname);
  if (!raw) return empty(404);
  // Under tenancy, the clients this reader sees: any other is not there for it.
  const seen = options.visibleTo?.(request.auth);
  const seenTarget = (clientId: string, skillPath: string): Maybe<ResolvedTarget | undefined> => {
    const target = router.findSkillRead(clientId, skillPath);
    if (target === undefined && !router.hasClient(clientId)) {
      // Perhaps a client of another node: looked up there once the reader may see it.
      const remote = router.fleet.attached ? router.fleet.locate(clientId) : undefined;
      return remote && (!seen || seen(remote)) ? router.fleet.locateSkillRead(clientId, skillPath) : undefined;
    }
    if (!target || !seen) return target;
    const client = router.getClient(clientId);
    return client && seen(client) ? target : undefined;
  };
  // An unencoded path is looked up as it stands: a skill found under it is a valid static path, so
  // decoding and grammar checks are needed only when nothing is found (to tell 400 from 404).
  const plain = !request.pathname.includes('%');
  if (plain) {
    const target = seenTarget(raw.clientId, raw.skillPath);
    if (target instanceof Promise) return { clientId: raw.clientId, pending: target, miss: () => missOf(router, request, options, seen) };
    if (target) return readerRefused(request, raw.clientId, options) ?? { clientId: raw.clientId, target };
  }
  const route = parseSkillRoute(request.pathname);
  if (!route) return empty(404);
  if (!route.ok) return json(400, { error: route.error });
  const target = plain ? undefined : seenTarget(route.clientId, route.skillPath);
  if (target instanceof Promise) return { clientId: route.clientId, pending: target, miss: () => missOf(router, request, options, seen) };
  if (target) return readerRefused(request, route.clientId, options) ?? { clientId: route.clientId, target };
  return missOf(router, request, options, seen);
}

/** The answer to a read that found no skill: 400 for a malformed route, else the seed's empty 404. */
function missOf(router: Router, request: SkillReadRequest, options: SkillReadOptions, seen: ((client: SeenClient) => boolean) | undefined): SkillReadResponse {
  const route = parseSkillRoute(request.pathname);
  if (!route) return empty(404);
  if (!route.ok) return json(400, { error: route.error });
  const missed = notFoundResponse(notFound(router, route.clientId, route.skillPath, options.isServerId, seen));
  // Still the seed's 404; a page of another site is not even told that.
  return options.readerRefusal?.(request.headers, route.clientId) === undefined ? missed : { ...missed, readerRefused: true };
}

/** 403 `{error}` for a reader `readerRefusal` refuses, before anything is sent to the client. */
function readerRefused(request: SkillReadRequest, clientId: string, options: SkillReadOptions): SkillReadResponse | undefined {
  const refusal = options.readerRefusal?.(request.headers, clientId);
  return refusal === undefined ? undefined : { ...json(403, { error: refusal }), readerRefused: true };
}

const PREFLIGHT: SkillReadResponse = empty(204, { allow: ALLOW });
const REFUSED_PREFLIGHT: SkillReadResponse = { ...PREFLIGHT, readerRefused: true };

/** OPTIONS answers 204 (the seed); a reader refused for the client it names gets no CORS grant. */
function preflight(request: SkillReadRequest, options: SkillReadOptions): SkillReadResponse {
  if (!options.readerRefusal) return PREFLIGHT;
  const route = parseSkillRoute(request.pathname);
  return options.readerRefusal(request.headers, route?.ok ? route.clientId : '') === undefined ? PREFLIGHT : REFUSED_PREFLIGHT;
}

/** Why a skill route found nothing, as the `MDP-Error-Code` header names it. */
export type SkillMissCode = 'unknown_client' | 'unknown_path';

/**
 * The reason behind a 404 of a skill route. The seed fixes that answer as 404 with an empty body
 * (SPEC §8), so the reason travels in response headers (`MDP-Error-Code`, `MDP-Error`, and
 * `MDP-Client-Candidates` for the mirrored twins an id reaches) and in the logs, never in the body.
 */
export interface SkillMiss {
  readonly code: SkillMissCode;
  readonly message: string;
  readonly clientId: string;
  readonly skillPath: string;
  /** The mirrored ids the client id reaches in a cluster (SPEC §12, ids that survive a failover). */
  readonly candidates?: readonly string[];
}

/** Response header names of a skill route's 404 (lower case, as node writes them). */
export const MDP_ERROR_CODE_HEADER = 'mdp-error-code';
export const MDP_ERROR_HEADER = 'mdp-error';
export const MDP_CLIENT_CANDIDATES_HEADER = 'mdp-client-candidates';

// Header values are ASCII here: client ids and paths are untrusted text of any character.
const MAX_HEADER_TEXT = 400;
function headerText(text: string): string {
  const ascii = text.replace(/[^\x20-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return ascii.length <= MAX_HEADER_TEXT ? ascii : `${ascii.slice(0, MAX_HEADER_TEXT - 3)}...`;
}

/** The seed's 404 (empty body) with the reason in its headers. */
export function notFoundResponse(miss: SkillMiss): SkillReadResponse {
  const headers: Record<string, string> = { [MDP_ERROR_CODE_HEADER]: miss.code, [MDP_ERROR_HEADER]: headerText(miss.message) };
  // Each id percent-encoded, so that a comma or any other character of an id cannot split the list.
  if (miss.candidates?.length) headers[MDP_CLIENT_CANDIDATES_HEADER] = headerText(miss.candidates.map((id) => encodeURIComponent(id)).join(', '));
  return { status: 404, headers, body: undefined, miss };
}

/**
 * Why a read found nothing: no such client (naming the mirrored twin an id reaches, since skill
 * routes take ids as registered) or no such skill on it (naming the paths tried). Only read on a
 * miss, so its cost (a walk over the clients for an unknown id) stays off the reads that succeed.
 */
function notFound(
  router: Router,
  clientId: string,
  skillPath: string,
  isServerId: IsServerId | undefined,
  seen: ((client: SeenClient) => boolean) | undefined,
): SkillMiss {
  const client = router.fleet.locate(clientId);
  if (client && (!seen || seen(client))) {
    const tried = skillPathCandidates(skillPath);
    return {
      code: 'unknown_path',
      clientId,
      skillPath,
      message: `Client ${JSON.stringify(clientId)} has no skill ${JSON.stringify(skillPath)} (tried ${tried.join(', ')})`,
    };
  }
  const found = resolveClientId(
    clientId,
    () => false,
    () => (seen ? router.listClients().filter(seen) : router.listClients()).map((client) => client.descriptor),
    isServerId,
  );
  const miss = { code: 'unknown_client', clientId, skillPath } as const;
  switch (found.kind) {
    case 'alias':
      return {
        ...miss,
        message: `No client ${JSON.stringify(clientId)} is connected; it is mirrored here as ${JSON.stringify(found.id)}: read /skills/${encodeURIComponent(found.id)}${skillPath}`,
        candidates: [found.id],
      };
    case 'ambiguous':
      return {
        ...miss,
        message: `No client ${JSON.stringify(clientId)} is connected; it is mirrored here as ${found.candidates.map((id) => JSON.stringify(id)).join(', ')}`,
        candidates: found.candidates,
      };
    default:
      return { ...miss, message: `No client ${JSON.stringify(clientId)} is connected` };
  }
}

const textHeaders = new Map<string | undefined, Readonly<Record<string, string>>>();
// What HTTP allows in a header value (RFC 9110 field-value: visible ASCII, obs-text, space, tab).
const INVALID_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * Sent with every skill's text. The text and its type come from a client, and a page of any site
 * may register one: opened in a browser (a link the user follows) as `text/html` or
 * `image/svg+xml`, its scripts would run as a page of this server, which the server lets use the
 * host API and so call every client. The sandbox gives such a document an origin of its own and no
 * scripts, and nosniff keeps a browser from taking other text for HTML. Readers that fetch the
 * text (agents, pages with CORS) are not affected.
 */
export const SKILL_TEXT_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "sandbox; default-src 'none'",
  'x-content-type-options': 'nosniff',
});

/**
 * The response headers of a text skill, shared per declared content type (a handful per server);
 * `undefined` when the declared type cannot be sent as a header (a client's mistake).
 */
function textHeadersFor(declared: string | undefined): Readonly<Record<string, string>> | undefined {
  let headers = textHeaders.get(declared);
  if (!headers) {
    const contentType = skillContentType(declared);
    if (INVALID_HEADER_VALUE.test(contentType)) return undefined;
    headers = Object.freeze({ 'content-type': contentType, ...SKILL_TEXT_HEADERS });
    // Declared types come from clients; keep the cache small whatever they declare.
    if (textHeaders.size < 64) textHeaders.set(declared, headers);
  }
  return headers;
}

// A throw here would leave the read hanging: the router has already let go of the call.
const UNSENDABLE_DATA: SkillReadResponse = json(502, { error: UNSENDABLE_DATA_ERROR });

function answerTo(outcome: InvokeOutcome, clientId: string, target: ResolvedTarget | undefined): SkillReadResponse {
  try {
    return responseTo(outcome, clientId, target);
  } catch {
    return UNSENDABLE_DATA;
  }
}

function responseTo(outcome: InvokeOutcome, clientId: string, target: ResolvedTarget | undefined): SkillReadResponse {
  if (outcome.ok) {
    if (typeof outcome.data === 'string') {
      const declared = target?.descriptor.type === 'skill' ? target.descriptor.contentType : undefined;
      const headers = textHeadersFor(declared);
      if (!headers) {
        const message = `Client declared a contentType that is not a valid HTTP header value: ${JSON.stringify(declared)}`;
        return json(502, { error: { code: 'handler_error', message } });
      }
      return { status: 200, headers, body: outcome.data };
    }
    return json(200, { data: outcome.data ?? null });
  }
  // The client left between resolution and invocation: the seed's 404, empty, like any other miss.
  if (outcome.error.code === 'not_found' && outcome.source !== 'client') {
    return notFoundResponse({ code: 'unknown_client', clientId, skillPath: target?.path ?? '', message: outcome.error.message });
  }
  // 502 when the client answered ok:false or went away, 504 on time-out.
  const status = httpStatusOf(outcome.error, outcome.source);
  if (status !== 503) return json(status, { error: outcome.error });
  // The client has too many calls waiting: refused before anything was sent; try again soon.
  return { ...json(status, { error: outcome.error }), headers: { 'content-type': JSON_TYPE, ...retryAfterHeader(outcome.error) } };
}
