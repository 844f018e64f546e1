import type { MiddlewareHandler } from 'hono';

const DEFAULT_ALLOW_HEADERS = 'content-type, x-mdp-session-id, authorization, cookie';
const ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS';

/**
 * CORS for browser clients (SPEC §6): echo the Origin with credentials allowed (else `*`), allow the
 * MDP headers or whatever the preflight asks for, and answer every OPTIONS with 204.
 */
/** The CORS headers of an answer to a request from `origin` (none: a non-browser caller). */
export function corsHeadersFor(origin: string | undefined): Record<string, string> {
  return origin
    ? { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', vary: 'Origin' }
    : { 'access-control-allow-origin': '*' };
}

export function mdpCors(): MiddlewareHandler {
  return async (c, next) => {
    const headers = corsHeadersFor(c.req.header('origin'));
    if (c.req.method === 'OPTIONS') {
      headers['access-control-allow-methods'] = ALLOW_METHODS;
      headers['access-control-allow-headers'] = c.req.header('access-control-request-headers') || DEFAULT_ALLOW_HEADERS;
      headers['access-control-max-age'] = '600';
      return new Response(null, { status: 204, headers });
    }
    await next();
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  };
}
