/** The inspector page at `/mdp/inspector` (SPEC §15), served on node's request by `@mdp/inspector`. */
import type { HostApi } from '@mdp/core';
import { createInspector } from '@mdp/inspector';
import type { ServerContext, ServerFeature } from '../feature.js';

export function inspectorFeature(ctx: ServerContext, host: HostApi): ServerFeature {
  const inspector = createInspector(host, {
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
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
