/**
 * The routes that reach every client (the host API, the inspector, /mcp) and the guide to them
 * (/SKILL.md: counts, and a connected client's skill) answer only browsers the origin policy
 * allows. Their own handlers refuse the requests (403); this refuses the CORS preflights too, so
 * that a browser never sends such a request from another site's page. The skill routes, the HTTP
 * loop and /mdp/auth are for browser MDP clients and keep SPEC §6's CORS.
 */
import { originProblem, type OriginPolicy } from '@mdp/core';
import { HOST_ROUTES } from '@mdp/host-api';
import { INSPECTOR_PATH } from '@mdp/inspector';
import { MCP_PATH } from './features/mcp-http.js';
import { GUIDE_PATH } from './guide.js';

/** Whether `path` (no query) is one of the guarded routes. */
export function isGuardedPath(path: string): boolean {
  return HOST_ROUTES[path] !== undefined || path === MCP_PATH || path === GUIDE_PATH || path === INSPECTOR_PATH || path.startsWith(`${INSPECTOR_PATH}/`);
}

/** Whether the preflight `request` is for a guarded route from a browser `policy` refuses. */
export function preflightRefusal(policy: OriginPolicy): (request: Request) => boolean {
  return (request) =>
    isGuardedPath(new URL(request.url).pathname) && originProblem({ host: request.headers.get('host'), origin: request.headers.get('origin') }, policy) !== undefined;
}
