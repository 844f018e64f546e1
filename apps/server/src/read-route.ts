/**
 * The shape every read-only route of the server's own (health, readiness, metrics, the inspector's
 * event stream) shares: GET (and HEAD) only, no query parameters, an optional guard. Refusals are
 * `{error: {code, message}}`: 405 with `Allow`, 401 with `WWW-Authenticate`, 400 naming the
 * unexpected parameter.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { headersToMap } from '@mdp/core';
import type { ServerContext } from './feature.js';

/** Whether a request may read; `undefined` lets everyone. */
export type ReadGuard = ((c: Context) => boolean) | undefined;

const ALLOW = 'GET, HEAD, OPTIONS';

function refusal(c: Context, status: 400 | 401 | 405, code: string, message: string, headers: Record<string, string> = {}): Response {
  return c.json({ error: { code, message } }, status, headers);
}

/** Mount `handler` at `path` for GET and HEAD behind `guard`; other methods get 405. */
export function readRoute(app: Hono, path: string, guard: ReadGuard, handler: (c: Context) => Response | Promise<Response>): void {
  app.on(['GET', 'HEAD'], path, (c) => {
    if (guard && !guard(c)) return refusal(c, 401, 'unauthorized', 'Unauthorized', { 'www-authenticate': 'Bearer' });
    const url = c.req.url;
    const mark = url.indexOf('?');
    if (mark >= 0 && mark < url.length - 1) {
      const [name] = new URLSearchParams(url.slice(mark + 1)).keys();
      return refusal(c, 400, 'bad_request', `${path} takes no query parameters, got ${JSON.stringify(name ?? '')}`);
    }
    return handler(c);
  });
  app.all(path, (c) => refusal(c, 405, 'bad_request', `${c.req.method} is not allowed on ${path}`, { allow: ALLOW }));
}

/**
 * `guard` (the metrics token), or under access tokens also any credential the auth gate accepts
 * with the admin scope (SPEC §17). Without a metrics token the routes stay open, as before.
 */
export function adminGuard(ctx: Pick<ServerContext, 'accessTokens' | 'gate'>, guard: ReadGuard): ReadGuard {
  if (guard === undefined || ctx.accessTokens === undefined) return guard;
  const { gate } = ctx;
  return (c) => {
    if (guard(c)) return true;
    const auth = gate.extract(headersToMap(c.req.raw.headers));
    return gate.allows(auth) && gate.missingScope(auth, 'admin') === undefined;
  };
}

/** The bearer token a request carries in `Authorization`, if any. */
function bearerOf(c: Context): string | undefined {
  const header = c.req.header('authorization');
  const match = header === undefined ? null : /^Bearer\s+(\S.*)$/i.exec(header.trim());
  return match?.[1]?.trim();
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** A guard that accepts `Authorization: Bearer <token>` with exactly `token` (compared in constant time). */
export function bearerGuard(token: string | undefined): ReadGuard {
  if (token === undefined) return undefined;
  const expected = digest(token);
  return (c) => {
    const given = bearerOf(c);
    return given !== undefined && timingSafeEqual(digest(given), expected);
  };
}
