/**
 * The inspector on a node `request` listener: the page and its files under `/mdp/inspector`, and
 * its event stream at `/mdp/inspector/events`. The page is open to all (it holds no data); the
 * stream, like the host API the page calls, needs a credential the auth policy accepts. With an
 * origin policy, every path refuses other sites' pages and rebound DNS names (403), as the host
 * API does: the stream lists every client.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthContext } from '@mdp/protocol';
import {
  extractTransportAuth,
  originProblem,
  silentLogger,
  type HeaderMap,
  type HostApi,
  type Logger,
  type OriginPolicy,
  type ScopeGuard,
  type Viewer,
} from '@mdp/core';
import { INSPECTOR_CSP, INSPECTOR_PATH, inspectorAssets } from './assets.js';
import { EventStreams } from './events.js';

export interface InspectorOptions {
  /** Reads the transport auth of a request. Default: extractTransportAuth. */
  readonly extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /** Whether a caller with this auth may open the event stream; refused ones get 401. Default: all. */
  readonly authorize?: (auth: AuthContext | undefined) => boolean;
  /**
   * Holds callers `authorize` accepted to their scopes: the event stream needs the admin scope
   * (SPEC §17), else 403 with `WWW-Authenticate: Bearer error="insufficient_scope"`. Default: none.
   */
  readonly scopeGuard?: ScopeGuard;
  /**
   * Who a reader of the event stream with this transport auth is, for the host's tenancy (`@mdp/core`
   * tenancy.ts): under tenancy by principal its stream lists only the clients it sees. The MDP
   * server gives `{principal: AuthGate.principalOf(auth)}` under an auth policy. Default: none (the
   * host lists every client).
   */
  readonly viewerOf?: (auth: AuthContext | undefined) => Viewer | undefined;
  /** Checked against every request's Host and Origin (`originPolicyFor` of `@mdp/core`); refused ones get 403. Default: none. */
  readonly originPolicy?: OriginPolicy;
  /** Client changes within this long are sent as one event, ms. Default 100. */
  readonly coalesceMs?: number;
  /** Keep-alive comment period of the event stream, ms. Default 15000. */
  readonly keepAliveMs?: number;
  /** Event streams open at once; one more gets 503. Default 64. */
  readonly maxStreams?: number;
  /** A stream with more unsent bytes than this when the list changes (its reader stopped reading) is ended, bytes. Default 1 MiB. */
  readonly maxBufferedBytes?: number;
  /** Clients in one event of the stream: the first page of the listing. Default 100. */
  readonly pageLimit?: number;
  /** Bytes of JSON of one event's page. Default 256 KiB: a quarter of `maxBufferedBytes`, so a reader a few events behind is not dropped. */
  readonly pageBytes?: number;
  readonly logger?: Logger;
}

export const INSPECTOR_DEFAULTS = {
  coalesceMs: 100,
  keepAliveMs: 15_000,
  maxStreams: 64,
  maxBufferedBytes: 1024 * 1024,
  pageLimit: 100,
  pageBytes: 256 * 1024,
} as const;

export interface Inspector {
  /** Answer a request under `/mdp/inspector` and return true; false for any other path. `url` is the origin form. */
  handle(request: IncomingMessage, response: ServerResponse, url: string): boolean;
  /** Event streams open now. */
  readonly streams: number;
  /** Timers held by the event streams (0 when none is open). */
  readonly timers: number;
  /** End every event stream. Idempotent. */
  close(): void;
}

const EVENTS = '/events';
const SECURITY_HEADERS = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' } as const;

function refuse(response: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ error: { code, message } });
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers }).end(body);
}

export function createInspector(host: HostApi, options: InspectorOptions = {}): Inspector {
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const logger = options.logger ?? silentLogger;
  const assets = inspectorAssets();
  const streams = new EventStreams(host, {
    coalesceMs: options.coalesceMs ?? INSPECTOR_DEFAULTS.coalesceMs,
    keepAliveMs: options.keepAliveMs ?? INSPECTOR_DEFAULTS.keepAliveMs,
    maxStreams: options.maxStreams ?? INSPECTOR_DEFAULTS.maxStreams,
    maxBufferedBytes: options.maxBufferedBytes ?? INSPECTOR_DEFAULTS.maxBufferedBytes,
    pageLimit: options.pageLimit ?? INSPECTOR_DEFAULTS.pageLimit,
    pageBytes: options.pageBytes ?? INSPECTOR_DEFAULTS.pageBytes,
    logger,
  });

  const serveEvents = (request: IncomingMessage, response: ServerResponse, query: string | undefined): void => {
    if (request.method !== 'GET')
      return refuse(response, 405, 'bad_request', `${request.method} is not allowed on ${INSPECTOR_PATH}${EVENTS}`, { allow: 'GET' });
    const auth = extractAuth(request.headers);
    if (options.authorize && !options.authorize(auth)) {
      return refuse(response, 401, 'unauthorized', 'Unauthorized', { 'www-authenticate': options.scopeGuard?.unauthorized() ?? 'Bearer' });
    }
    const guard = options.scopeGuard;
    const lacking = guard?.missingScope(auth, 'admin');
    if (guard && lacking !== undefined) {
      return refuse(response, 403, 'forbidden', `The inspector needs scope ${lacking}`, { 'www-authenticate': guard.forbidden(lacking) });
    }
    if (query !== undefined && query !== '') {
      const [name] = new URLSearchParams(query).keys();
      return refuse(response, 400, 'bad_request', `${INSPECTOR_PATH}${EVENTS} takes no query parameters, got ${JSON.stringify(name ?? '')}`);
    }
    streams.add(response, options.viewerOf?.(auth));
  };

  return {
    handle(request, response, url) {
      if (!url.startsWith(INSPECTOR_PATH)) return false;
      const mark = url.indexOf('?');
      const path = mark < 0 ? url : url.slice(0, mark);
      let rest = path.slice(INSPECTOR_PATH.length);
      if (rest !== '' && !rest.startsWith('/')) return false; // `/mdp/inspectorX` is not ours
      if (options.originPolicy) {
        const problem = originProblem({ host: request.headers.host, origin: request.headers.origin }, options.originPolicy);
        if (problem) {
          refuse(response, 403, 'forbidden', problem);
          return true;
        }
      }
      if (rest === EVENTS) {
        serveEvents(request, response, mark < 0 ? undefined : url.slice(mark + 1));
        return true;
      }
      if (rest === '/') rest = '';
      const asset = assets.get(rest);
      if (!asset) {
        refuse(response, 404, 'not_found', `No inspector file ${JSON.stringify(path)}`);
        return true;
      }
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        refuse(response, 405, 'bad_request', `${request.method} is not allowed on ${path}`, { allow: 'GET, HEAD' });
        return true;
      }
      const headers: Record<string, string | number> = {
        'content-type': asset.contentType,
        'content-length': asset.body.length,
        'cache-control': 'no-cache',
        ...SECURITY_HEADERS,
      };
      if (rest === '') headers['content-security-policy'] = INSPECTOR_CSP;
      response.writeHead(200, headers);
      response.end(request.method === 'HEAD' ? undefined : asset.body);
      return true;
    },
    get streams() {
      return streams.size;
    },
    get timers() {
      return streams.timers;
    },
    close: () => streams.close(),
  };
}
