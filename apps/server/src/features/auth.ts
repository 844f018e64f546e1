/**
 * `POST`/`DELETE /mdp/auth` (SPEC §7): the auth cookie bootstrap, behind the body limit. Without an
 * auth policy, a server listening beyond loopback is said to be open to anyone, once it listens.
 */
import { bodyLimit } from 'hono/body-limit';
import { createAuthRoutes } from '../auth-routes.js';
import type { ServerContext, ServerFeature } from '../feature.js';
import type { CookieSameSite } from '../options.js';
import { isLoopback } from '../urls.js';

export function authFeature(ctx: ServerContext, sameSite: CookieSameSite): ServerFeature {
  return {
    name: 'auth',
    routes(app) {
      const max = ctx.maxMessageBytes;
      app.use('/mdp/auth', bodyLimit({ maxSize: max, onError: (c) => c.json({ error: `Request body exceeds ${max} bytes` }, 413) }));
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
