/**
 * `POST`/`DELETE /mdp/auth` (SPEC §7): the auth cookie bootstrap, behind the body limit and the
 * node's in-flight budget. Without an auth policy, a server listening beyond loopback is said to be
 * open to anyone, once it listens.
 */
import type { MiddlewareHandler } from 'hono';
import { readBodyText, type InflightBudget } from '@mdp/core';
import { createAuthRoutes } from '../auth-routes.js';
import type { ServerContext, ServerFeature } from '../feature.js';
import type { CookieSameSite } from '../settings/options.js';
import { isLoopback } from '../urls.js';

/**
 * Read the body (at most `maxBytes`, counted against `inflight` while it arrives) before the route
 * runs, which then reads it from memory: over the limit 413 `{error}`, evicted by the budget 503
 * `{error}` with `Retry-After`, both closing the connection (the rest is not read); a client gone
 * mid-body 400.
 */
function boundedBody(maxBytes: number, inflight: InflightBudget): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.raw.body === null) return next();
    const read = await readBodyText(c.req.raw, maxBytes, inflight);
    if (!read.ok) {
      const headers: Record<string, string> = read.status === 400 ? {} : { connection: 'close', ...(read.status === 503 ? { 'retry-after': '1' } : {}) };
      return c.json({ error: read.error }, read.status, headers);
    }
    c.req.raw = new Request(c.req.raw, { body: read.text });
    return next();
  };
}

export function authFeature(ctx: ServerContext, sameSite: CookieSameSite): ServerFeature {
  return {
    name: 'auth',
    routes(app) {
      app.use('/mdp/auth', boundedBody(ctx.maxMessageBytes, ctx.inflight));
      app.route('/mdp/auth', createAuthRoutes(ctx.gate, sameSite));
    },
    start(info) {
      if (ctx.authorize !== undefined || isLoopback(info.host)) return;
      ctx.logger.warn('server.no_auth_policy', {
        host: info.host,
        message: 'Listening beyond loopback with no auth policy: anyone who can reach this port can register clients and read skills. Use --auth-token.',
      });
    },
  };
}
