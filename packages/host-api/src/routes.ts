/**
 * The host API over HTTP (SPEC §12): programs list clients and paths and call any path.
 *
 *   GET  /mdp/clients?search=                 → 200 {clients}
 *   GET  /mdp/paths?clientId=&search=&depth=   → 200 {paths}
 *   POST /mdp/call       {clientId, method, path, query?, body?, headers?, auth?} → 200 {ok: true, data}
 *   POST /mdp/call-many  {clientIds?, method, path, …}                            → 200 {results}
 *
 * Failures are `{error: SerializedError}` (a failed call also says `ok: false`), with one status
 * mapping (`httpStatusOf`): 400 bad request (the message names the field), 401 refused by the auth
 * policy, 404 unknown client or no such path, 413 body too large, 502 the client answered
 * `ok: false` or went away, 504 time-out. A call whose HTTP request is abandoned is cancelled.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { MdpError, extractTransportAuth, headersToMap, httpStatusOf, silentLogger, type HeaderMap, type HostApi, type Logger } from '@mdp/core';
import {
  parseCallPathRequest,
  parseCallPathsRequest,
  parseListClientsRequest,
  parseListPathsRequest,
  type AuthContext,
  type CallResult,
  type ParseResult,
  type SerializedError,
} from '@mdp/protocol';

export interface HostRoutesOptions {
  /** Reads the caller's transport auth, forwarded to the client when the body names no `auth`. Default: extractTransportAuth. */
  readonly extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /** Whether a caller with this transport auth may use the API; refused ones get 401. Default: all. */
  readonly authorize?: (auth: AuthContext | undefined) => boolean;
  /** Largest request body, bytes. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  readonly logger?: Logger;
}

export const HOST_API_DEFAULTS = { maxBodyBytes: 1_048_576 } as const;

const ROUTES = {
  '/mdp/clients': 'GET',
  '/mdp/paths': 'GET',
  '/mdp/call': 'POST',
  '/mdp/call-many': 'POST',
} as const;

/** Thrown inside a handler to answer with `{error}` and a status; nothing else is echoed. */
class Refusal extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly error: SerializedError,
  ) {
    super(error.message);
  }
}

const badRequest = (message: string): Refusal => new Refusal(400, { code: 'bad_request', message });

function parsed<T>(result: ParseResult<T>, where = ''): T {
  if (!result.ok) throw badRequest(`${where}${result.error}`);
  return result.value;
}

async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') throw badRequest('Request body must be a JSON object');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badRequest('Request body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  return body;
}

/** `?depth=` as a number; anything but a whole number of at least 1 is refused. */
function depthOf(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw badRequest(`depth: must be a whole number of at least 1, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

function callAnswer(c: Context, result: CallResult): Response {
  if (result.ok) return c.json({ ok: true, data: result.data ?? null });
  return c.json(result, httpStatusOf(result.error, result.source) as ContentfulStatusCode);
}

/** The four routes; mount at the root (`app.route('/', createHostRoutes(host))`). */
export function createHostRoutes(host: HostApi, options: HostRoutesOptions = {}): Hono {
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const logger = options.logger ?? silentLogger;
  const maxBodyBytes = options.maxBodyBytes ?? HOST_API_DEFAULTS.maxBodyBytes;
  const app = new Hono<{ Variables: { auth: AuthContext | undefined } }>();

  app.onError((error, c) => {
    if (error instanceof Refusal) return c.json({ error: error.error }, error.status);
    if (error instanceof MdpError) return c.json({ error: error.toJSON() }, httpStatusOf(error) as ContentfulStatusCode);
    logger.error('host_api.failed', { method: c.req.method, path: c.req.path, error });
    return c.json({ error: { code: 'handler_error', message: 'Internal error' } }, 500);
  });

  for (const [path, method] of Object.entries(ROUTES)) {
    app.use(path, async (c, next) => {
      if (c.req.method !== method) return c.body(null, 405, { allow: `${method}, OPTIONS` });
      const auth = extractAuth(headersToMap(c.req.raw.headers));
      if (options.authorize && !options.authorize(auth)) return c.json({ error: { code: 'unauthorized', message: 'Unauthorized' } }, 401);
      c.set('auth', auth);
      return next();
    });
  }
  const limit = bodyLimit({
    maxSize: maxBodyBytes,
    onError: (c) => c.json({ error: { code: 'bad_request', message: `Request body exceeds ${maxBodyBytes} bytes` } }, 413),
  });

  app.get('/mdp/clients', async (c) => {
    const request = parsed(parseListClientsRequest({ search: c.req.query('search') }));
    return c.json(await host.listClients(request));
  });

  app.get('/mdp/paths', async (c) => {
    const request = parsed(parseListPathsRequest({ clientId: c.req.query('clientId'), search: c.req.query('search'), depth: depthOf(c.req.query('depth')) }));
    return c.json(await host.listPaths(request));
  });

  app.post('/mdp/call', limit, async (c) => {
    const request = parsed(parseCallPathRequest(await jsonBody(c)));
    const auth = request.auth ?? c.get('auth');
    return callAnswer(c, await host.callPath(auth ? { ...request, auth } : request, { signal: c.req.raw.signal, route: 'host', caller: c.get('auth') }));
  });

  app.post('/mdp/call-many', limit, async (c) => {
    const request = parsed(parseCallPathsRequest(await jsonBody(c)));
    const auth = request.auth ?? c.get('auth');
    return c.json(await host.callPaths(auth ? { ...request, auth } : request, { signal: c.req.raw.signal, route: 'host', caller: c.get('auth') }));
  });

  return app as unknown as Hono;
}
