/** The inspector page at `/mdp/inspector` (SPEC §15), served on node's request by `@mdp/inspector`. */
import type { HostApi } from '@mdp/core';
import { createInspector } from '@mdp/inspector';
import type { ServerContext, ServerFeature } from '../feature.js';

export function inspectorFeature(ctx: ServerContext, hostApi: HostApi): ServerFeature {
  const inspector = createInspector(hostApi, {
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
    // The event stream needs the admin scope (SPEC §17).
    scopeGuard: ctx.scopeGuard,
    // Under --tenancy principal each reader's stream lists what it sees.
    viewerOf: ctx.viewerOf,
    originPolicy: ctx.originPolicy,
    logger: ctx.logger,
  });
  return {
    name: 'inspector',
    handle: (request, response, url) => inspector.handle(request, response, url),
    // Its event streams end before the listener waits for open connections.
    close: () => inspector.close(),
  };
}
