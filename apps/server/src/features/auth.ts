/** `POST`/`DELETE /mdp/auth` (SPEC §7): the auth cookie bootstrap, behind the body limit. */
import { bodyLimit } from 'hono/body-limit';
import { createAuthRoutes } from '../auth-routes.js';
import type { ServerContext, ServerFeature } from '../feature.js';
import type { CookieSameSite } from '../options.js';

export function authFeature(ctx: ServerContext, sameSite: CookieSameSite): ServerFeature {
  return {
    name: 'auth',
    routes(app) {
      const max = ctx.maxMessageBytes;
      app.use('/mdp/auth', bodyLimit({ maxSize: max, onError: (c) => c.json({ error: `Request body exceeds ${max} bytes` }, 413) }));
      app.route('/mdp/auth', createAuthRoutes(ctx.gate, sameSite));
    },
  };
}
