/**
 * The routes that reach every client (the host API, the inspector, /mcp) and the guide to them
 * (/SKILL.md: counts, and a connected client's skill) answer only browsers the origin policy
 * allows. Their own handlers refuse the requests (403); this refuses the CORS preflights too, so
 * that a browser never sends such a request from another site's page. The HTTP loop and /mdp/auth
 * are for browser MDP clients and keep SPEC §6's CORS; the skill routes grant it to the pages that
 * may read (features/skills.ts).
 */
import { originProblem, type OriginPolicy } from '@mdp/core';
import { HOST_ROUTES } from '@mdp/host-api';
import { INSPECTOR_PATH } from '@mdp/inspector';
import { isSkillRoutePath, parseSkillRoute } from '@mdp/skills-gateway';
import type { PreflightAnswer } from './cors.js';
import { MCP_PATH } from './features/mcp-http.js';
import { GUIDE_PATH } from './guide.js';

/** Whether `path` (no query) is one of the guarded routes. */
export function isGuardedPath(path: string): boolean {
  return HOST_ROUTES[path] !== undefined || path === MCP_PATH || path === GUIDE_PATH || path === INSPECTOR_PATH || path.startsWith(`${INSPECTOR_PATH}/`);
}

/** Why `headers` may not read `clientId`'s skills (features/skills.ts), or `undefined`. */
export type SkillReaderRefusal = (headers: Readonly<Record<string, string>>, clientId: string) => string | undefined;

/**
 * How the server answers a preflight: refused for a guarded route from a browser `policy` refuses;
 * on a skill route the seed's 204, without a grant for a page that may not read that client.
 */
export function preflightPolicy(policy: OriginPolicy, skillReader: SkillReaderRefusal): (request: Request) => PreflightAnswer {
  return (request) => {
    const origin = request.headers.get('origin');
    const host = request.headers.get('host');
    const { pathname } = new URL(request.url);
    if (isGuardedPath(pathname)) return originProblem({ host, origin }, policy) === undefined ? 'grant' : 'refuse';
    if (!isSkillRoutePath(pathname)) return 'grant';
    const headers: Record<string, string> = {};
    if (origin !== null) headers.origin = origin;
    if (host !== null) headers.host = host;
    const route = parseSkillRoute(pathname);
    return skillReader(headers, route?.ok ? route.clientId : '') === undefined ? 'grant' : 'withhold';
  };
}
