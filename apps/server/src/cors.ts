import type { MiddlewareHandler } from 'hono';

const DEFAULT_ALLOW_HEADERS = 'content-type, x-mdp-session-id, authorization, cookie';
const ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS';

/**
 * The CORS headers of an answer to a request from `origin` (none: a non-browser caller). Do not
 * mutate. Credentials are allowed for every page (SPEC §6: browser MDP clients of every site send
 * their requests with `credentials: 'include'`); what a page of another site sends with them does
 * not count: the server reads the `mdp_auth` cookie only for the pages the gate's `honoursCookie`
 * accepts, so such a page gets what a request without the cookie gets.
 */
export function corsHeadersFor(origin: string | undefined): Readonly<Record<string, string>> {
  return origin ? { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', vary: 'Origin' } : ANY_ORIGIN;
}

/** No CORS headers: the browser keeps the answer from the page (a refused origin on a guarded route). */
export const NO_CORS: Readonly<Record<string, string>> = Object.freeze({});

// Most answers go to callers without Origin; they all share one object.
const ANY_ORIGIN: Readonly<Record<string, string>> = Object.freeze({ 'access-control-allow-origin': '*' });

/**
 * What a preflight gets: the grant (204 with CORS headers), `refuse` (403 without CORS headers: a
 * guarded route, an origin its policy refuses) or `withhold` (204 without CORS headers: a skill
 * route answers every OPTIONS 204, as the seed says, but grants only the pages that may read).
 * Either way the browser never sends the request.
 */
export type PreflightAnswer = 'grant' | 'refuse' | 'withhold';

/**
 * CORS for browser clients (SPEC §6): echo the Origin with credentials allowed (else `*`), allow the
 * MDP headers or whatever the preflight asks for, and answer every OPTIONS as `preflight` says.
 */
export function mdpCors(preflight: (request: Request) => PreflightAnswer = () => 'grant'): MiddlewareHandler {
  return async (c, next) => {
    const headers = corsHeadersFor(c.req.header('origin'));
    if (c.req.method === 'OPTIONS') {
      const answer = preflight(c.req.raw);
      if (answer === 'refuse') return new Response(null, { status: 403 });
      if (answer === 'withhold') return new Response(null, { status: 204 });
      return new Response(null, {
        status: 204,
        headers: {
          ...headers,
          'access-control-allow-methods': ALLOW_METHODS,
          'access-control-allow-headers': c.req.header('access-control-request-headers') || DEFAULT_ALLOW_HEADERS,
          'access-control-max-age': '600',
        },
      });
    }
    await next();
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  };
}
