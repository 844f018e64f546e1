/** The two skill read routes (SPEC §8), answered on node's request without Hono. */
import type { IncomingMessage } from 'node:http';
import { MDP_CLIENT_CANDIDATES_HEADER, MDP_ERROR_CODE_HEADER, MDP_ERROR_HEADER, createNodeSkillsHandler } from '@mdp/skills-gateway';
import type { ServerContext, ServerFeature } from '../feature.js';

/**
 * `isServerId`: the cluster's server ids, under which a missing client's mirrored twin is named.
 * `accessLog`: a read that found nothing gets an access line too (outcome `unknown_client` or
 * `unknown_path`), since its answer, the seed's empty 404, cannot say why.
 */
// A page reads why a skill was not found only if the answer exposes the headers that say it.
const EXPOSE = { 'access-control-expose-headers': `${MDP_ERROR_CODE_HEADER}, ${MDP_ERROR_HEADER}, ${MDP_CLIENT_CANDIDATES_HEADER}` };

export function skillsFeature(ctx: ServerContext, isServerId: (id: string) => boolean, accessLog: boolean): ServerFeature {
  const serve = createNodeSkillsHandler(ctx.router, {
    isServerId,
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
    // Under a policy the reader's credential stays here (core's forwarding.ts).
    forwarding: ctx.gate,
    extraHeaders: (request: IncomingMessage) => {
      const cors = ctx.corsFor(request);
      // Readers without Origin (most) share the one CORS object; browsers get the exposed names too.
      return request.headers.origin === undefined ? cors : { ...cors, ...EXPOSE };
    },
    logger: ctx.logger,
    onMiss: (miss) => {
      if (accessLog) ctx.logger.info('call', { route: 'skill', clientId: miss.clientId, method: 'GET', path: miss.skillPath, outcome: miss.code, reason: miss.message });
      else ctx.logger.debug('skills.not_found', { ...miss });
    },
  });
  return {
    name: 'skills',
    handle: (request, response) => serve(request, response),
  };
}
