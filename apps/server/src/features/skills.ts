/** The two skill read routes (SPEC §8), answered on node's request without Hono. */
import { createNodeSkillsHandler } from '@mdp/skills-gateway';
import type { ServerContext, ServerFeature } from '../feature.js';

/** `isServerId`: the cluster's server ids, under which a missing client's mirrored twin is named. */
export function skillsFeature(ctx: ServerContext, isServerId: (id: string) => boolean): ServerFeature {
  const serve = createNodeSkillsHandler(ctx.router, {
    isServerId,
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
    // Under a policy the reader's credential stays here (core's forwarding.ts).
    forwarding: ctx.gate,
    extraHeaders: ctx.corsFor,
    logger: ctx.logger,
  });
  return {
    name: 'skills',
    handle: (request, response) => serve(request, response),
  };
}
