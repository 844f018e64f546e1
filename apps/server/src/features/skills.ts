/** The two skill read routes (SPEC §8), answered on node's request without Hono. */
import type { IncomingMessage } from 'node:http';
import { clientsSeenBy, crossSiteWithoutOrigin, isOpaqueOrigin, originProblem, type OriginPolicy, type Router } from '@mdp/core';
import { MDP_CLIENT_CANDIDATES_HEADER, MDP_ERROR_CODE_HEADER, MDP_ERROR_HEADER, createNodeSkillsHandler, type SkillReadResponse } from '@mdp/skills-gateway';
import { NO_CORS } from '../cors.js';
import type { ServerContext, ServerFeature } from '../feature.js';
import type { SkillReaderRefusal } from '../guarded-routes.js';

// A page reads why a skill was not found only if the answer exposes the headers that say it.
const EXPOSE = { 'access-control-expose-headers': `${MDP_ERROR_CODE_HEADER}, ${MDP_ERROR_HEADER}, ${MDP_CLIENT_CANDIDATES_HEADER}` };

/**
 * Who may read a client's skills from a browser (SPEC §6, issue 36): what the origin policy lets
 * use the host API (loopback origins, this server's own pages, `--allow-origin` origins; and a Host
 * that is no rebound DNS name), and besides a page of the origin that registered the client. Any
 * other site's page gets no CORS grant and its read is refused: what a local app publishes is not
 * for every site the user visits. So is a page of another site that sends no Origin, as browsers do
 * for an element's GET, by its Fetch Metadata (`crossSiteWithoutOrigin`): the client is not called.
 */
export function skillReaderRefusal(router: Router, policy: OriginPolicy): SkillReaderRefusal {
  // Nearly every reader sends the same Host and no Origin: remember the last Host that passed.
  let passedHost: string | undefined;
  return (headers, clientId) => {
    const { origin, host } = headers;
    // A page of another site that sends no Origin (a <script src> of the skill, a no-cors fetch).
    const unnamed = crossSiteWithoutOrigin(headers);
    if (unnamed !== undefined) return unnamed;
    // No Origin: a program, or a page reading its own server (a rebound name shows in Host). No
    // Host either: no browser sends that (an HTTP/1.0 tool may).
    if (origin === undefined && (host === undefined || host === passedHost)) return undefined;
    const problem = originProblem(headers, policy);
    if (problem === undefined) {
      if (origin === undefined) passedHost = host;
      return undefined;
    }
    // The opaque origin (`null`) is no page's own: any site can send it from a sandboxed iframe.
    return origin !== undefined && !isOpaqueOrigin(origin) && router.fleet.locate(clientId)?.origin === origin ? undefined : problem;
  };
}

export interface SkillsFeatureOptions {
  /** The cluster's server ids, under which a missing client's mirrored twin is named. */
  readonly isServerId: (id: string) => boolean;
  /** Who may read which client's skills ({@link skillReaderRefusal}). */
  readonly readerRefusal: SkillReaderRefusal;
  /**
   * A read that found nothing gets an access line too (outcome `unknown_client` or `unknown_path`),
   * since its answer, the seed's empty 404, cannot say why.
   */
  readonly accessLog: boolean;
}

export function skillsFeature(ctx: ServerContext, { isServerId, readerRefusal, accessLog }: SkillsFeatureOptions): ServerFeature {
  const serve = createNodeSkillsHandler(ctx.router, {
    isServerId,
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
    // Under a policy the reader's credential stays here (core's forwarding.ts).
    forwarding: ctx.gate,
    scopeGuard: ctx.scopeGuard,
    readerRefusal,
    // Under --tenancy principal a reader sees its own principal's clients and the shared ones.
    ...(ctx.tenancy.mode === 'principal'
      ? { visibleTo: (auth: Parameters<typeof ctx.viewerOf>[0]) => clientsSeenBy(ctx.tenancy, ctx.viewerOf(auth), isServerId) }
      : {}),
    extraHeaders: (request: IncomingMessage, answer: SkillReadResponse) => {
      if (answer.readerRefused) return NO_CORS;
      const cors = ctx.corsFor(request);
      // Readers without Origin (most) share the one CORS object; browsers get the exposed names too.
      return request.headers.origin === undefined ? cors : { ...cors, ...EXPOSE };
    },
    logger: ctx.logger,
    onMiss: (miss) => {
      if (accessLog)
        ctx.logger.info('call', { route: 'skill', clientId: miss.clientId, method: 'GET', path: miss.skillPath, outcome: miss.code, reason: miss.message });
      else ctx.logger.debug('skills.not_found', { ...miss });
    },
  });
  return {
    name: 'skills',
    handle: (request, response) => serve(request, response),
  };
}
