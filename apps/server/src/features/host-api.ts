/**
 * The host API (SPEC §12): `/mdp/clients`, `/mdp/paths`, `/mdp/call`, `/mdp/call-many`, answered on
 * node's request like the skill reads (a host call costs about what a skill read costs; through
 * Fetch objects it cost five times as much, see bench/README.md). Only browsers the server's origin
 * policy allows may use it (guarded-routes.ts).
 */
import type { HostApi } from '@mdp/core';
import { createNodeHostHandler } from '@mdp/host-api';
import type { ServerContext, ServerFeature } from '../feature.js';

export function hostApiFeature(ctx: ServerContext, hostApi: HostApi): ServerFeature {
  const handle = createNodeHostHandler(hostApi, {
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
    // Under a policy the caller's credential stays here (core's forwarding.ts).
    forwarding: ctx.gate,
    scopeGuard: ctx.scopeGuard,
    // Under --tenancy principal a caller reaches its own principal's clients only (cluster.ts's host applies it).
    viewerOf: ctx.viewerOf,
    originPolicy: ctx.originPolicy,
    maxBodyBytes: ctx.maxMessageBytes,
    inflight: ctx.inflight,
    extraHeaders: ctx.guardedCorsFor,
    logger: ctx.logger,
  });
  return { name: 'host-api', handle };
}
