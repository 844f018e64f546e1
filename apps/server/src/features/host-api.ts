/** The host API (SPEC §12): `/mdp/clients`, `/mdp/paths`, `/mdp/call`, `/mdp/call-many`. */
import type { HostApi } from '@mdp/core';
import { createHostRoutes } from '@mdp/host-api';
import type { ServerContext, ServerFeature } from '../feature.js';

export function hostApiFeature(ctx: ServerContext, host: HostApi): ServerFeature {
  return {
    name: 'host-api',
    routes(app) {
      app.route(
        '/',
        createHostRoutes(host, {
          extractAuth: ctx.extractAuth,
          authorize: ctx.authorize,
          maxBodyBytes: ctx.maxMessageBytes,
          logger: ctx.logger,
        }),
      );
    },
  };
}
