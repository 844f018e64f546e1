import { Hono } from 'hono';
import type { AuthContext } from '@mdp/protocol';
import { extractTransportAuth, setOwn, type HeaderMap, type Router } from '@mdp/core';
import { handleSkillRead, type SkillReadOptions } from './handler.js';
import { isSkillRoutePath, originForm } from './route.js';

export interface SkillsRoutesOptions extends SkillReadOptions {
  /** Reads the transport auth of a request. Default: extractTransportAuth. */
  extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
}

/** Query parameters of a URL; the last value of a repeated key wins. */
export function lastValueQuery(search: URLSearchParams): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [key, value] of search) setOwn(query, key, value);
  return query;
}

/**
 * The path as the client sent it. Fetch-style URLs have dot segments already resolved (`/a/../b`
 * becomes `/b`), which would turn a malformed request into a read of another skill; the node
 * adapter exposes the raw request target, so use it when it is there.
 */
function rawPathname(env: unknown, url: URL): string {
  const target = (env as { incoming?: { url?: unknown } } | undefined)?.incoming?.url;
  const raw = typeof target === 'string' ? originForm(target) : undefined;
  if (raw?.startsWith('/')) {
    const end = raw.indexOf('?');
    return end < 0 ? raw : raw.slice(0, end);
  }
  return url.pathname;
}

/**
 * Hono routes for both skill routes. Mount at the root (`app.route('/', routes)`), after the
 * server's own `/mdp/*` routes. Requests that are not skill routes fall through.
 */
export function createSkillsRoutes(router: Router, options: SkillsRoutesOptions = {}): Hono {
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const app = new Hono();
  app.all('*', async (c, next) => {
    const url = new URL(c.req.url);
    const pathname = rawPathname(c.env, url);
    if (!isSkillRoutePath(pathname)) return next();
    const headers: Record<string, string> = {};
    c.req.raw.headers.forEach((value, name) => setOwn(headers, name, value));
    const auth = extractAuth(headers);
    const response = await handleSkillRead(
      router,
      { method: c.req.method, pathname, query: lastValueQuery(url.searchParams), headers, auth },
      options,
      c.req.raw.signal,
    );
    return new Response(response.body ?? null, { status: response.status, headers: response.headers });
  });
  return app;
}
