/** The two skill read routes (SPEC §8), answered on node's request without Hono. */
import { createNodeSkillsHandler } from '@mdp/skills-gateway';
import type { ServerContext, ServerFeature } from '../feature.js';

export function skillsFeature(ctx: ServerContext): ServerFeature {
  const serve = createNodeSkillsHandler(ctx.router, {
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
    extraHeaders: ctx.corsFor,
    logger: ctx.logger,
  });
  return {
    name: 'skills',
    handle: (request, response) => serve(request, response),
  };
}
