/**
 * The skill routes as Hono routes (`@mdp/skills-gateway/hono`), for embedders whose server is a
 * Hono app. The MDP server answers these routes on node's request (`createNodeSkillsHandler`); both
 * read requests the same way and go through the same handler, and the package's main entry never
 * loads Hono.
 */
import { Hono, type Context } from 'hono';
import { extractTransportAuth, headersToMap, silentLogger, type HeaderMap, type Logger, type Router } from '@mdp/core';
import type { AuthContext } from '@mdp/protocol';
import { INTERNAL_ERROR, handleSkillRead, type SkillReadOptions, type SkillReadResponse } from './handler.js';
import { originForm, skillTarget } from './route.js';

export interface SkillsRoutesOptions extends SkillReadOptions {
  /** Reads the transport auth of a request. Default: extractTransportAuth. */
  extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /**
   * Where a read that fails inside the server is logged (it is answered 500 `{error}`), and at
   * debug why a read found nothing (`skills.not_found`; the answer is the seed's empty 404).
   */
  logger?: Logger;
}

/**
 * The request target as the client sent it. Fetch-style URLs have dot segments already resolved
 * (`/a/../b` becomes `/b`), which would turn a malformed request into a read of another skill; on
 * @hono/node-server `env.incoming` is the node request, whose raw target is used when it is there.
 */
function targetOf(c: Context): string {
  const raw = (c.env as { incoming?: { url?: unknown } } | undefined)?.incoming?.url;
  const target = typeof raw === 'string' ? originForm(raw) : undefined;
  if (target?.startsWith('/')) return target;
  const url = new URL(c.req.url);
  return `${url.pathname}${url.search}`;
}

const toResponse = (answer: SkillReadResponse): Response => new Response(answer.body ?? null, { status: answer.status, headers: answer.headers });

/**
 * Hono routes for both skill routes. Mount at the root (`app.route('/', routes)`), after the
 * server's own `/mdp/*` routes. Requests that are not skill routes fall through.
 */
export function createSkillsRoutes(router: Router, options: SkillsRoutesOptions = {}): Hono {
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const logger = options.logger ?? silentLogger;
  const app = new Hono();
  app.all('*', async (c, next) => {
    const target = skillTarget(targetOf(c));
    if (target === undefined) return next();
    try {
      const headers = headersToMap(c.req.raw.headers);
      const read = { method: c.req.method, pathname: target.pathname, query: target.query, headers, auth: extractAuth(headers) };
      const answer = await handleSkillRead(router, read, options, c.req.raw.signal);
      if (answer.miss) logger.debug('skills.not_found', { ...answer.miss });
      return toResponse(answer);
    } catch (error) {
      logger.error('skills.read_failed', { error });
      return toResponse(INTERNAL_ERROR);
    }
  });
  return app;
}
