import type { MiddlewareHandler } from 'hono';

const DEFAULT_ALLOW_HEADERS = 'content-type, x-mdp-session-id, authorization, cookie';
const ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS';

/**
 * The CORS headers of an answer to a request from `origin` (none: a non-browser caller). Do not
 * mutate. `credentials`: whether the page may send the `mdp_auth` cookie (the gate's
 * `honoursCookie`); a page of another site still gets its Origin echoed, so it may use the route
 * without credentials, but a credentialed request of its (and its preflight) fails in the browser.
 */
export function corsHeadersFor(origin: string | undefined, credentials = true): Readonly<Record<string, string>> {
  if (!origin) return ANY_ORIGIN;
  return credentials ? { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', vary: 'Origin' } : { 'access-control-allow-origin': origin, vary: 'Origin' };
}

/** No CORS headers: the browser keeps the answer from the page (a refused origin on a guarded route). */
export const NO_CORS: Readonly<Record<string, string>> = Object.freeze({});

// Most answers go to callers without Origin; they all share one object.
const ANY_ORIGIN: Readonly<Record<string, string>> = Object.freeze({ 'access-control-allow-origin': '*' });

/**
 * CORS for browser clients (SPEC §6): echo the Origin with credentials allowed (else `*`), allow the
 * MDP headers or whatever the preflight asks for, and answer every OPTIONS with 204, except a
 * preflight that `refuses` (a guarded route, an origin its policy refuses): 403 without CORS
 * headers, so the browser never sends the request. `credentialed`: whether the request's page may
 * send the cookie; for other pages the Origin is echoed without credentials.
 */
export function mdpCors(refuses: (request: Request) => boolean = () => false, credentialed: (request: Request) => boolean = () => true): MiddlewareHandler {
  return async (c, next) => {
    const origin = c.req.header('origin');
    const headers = corsHeadersFor(origin, origin === undefined || credentialed(c.req.raw));
    if (c.req.method === 'OPTIONS') {
      if (refuses(c.req.raw)) return new Response(null, { status: 403 });
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
