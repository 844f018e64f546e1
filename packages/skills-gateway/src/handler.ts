/**
 * Skill reads, independent of any HTTP framework: a request description in, a response
 * description out. The Hono routes (and any faster adapter) are thin wrappers around this.
 */
import type { AuthContext } from '@mdp/protocol';
import type { ResolvedTarget, Router } from '@mdp/core';
import { parseSkillRoute, rawSkillRoute } from './route.js';

export interface SkillReadRequest {
  readonly method: string;
  /** Raw pathname, still percent-encoded. */
  readonly pathname: string;
  /** Query parameters; the last value of a repeated key wins. */
  readonly query: Record<string, string>;
  /** Request headers, lower-case names, repeated values joined by ", ". */
  readonly headers: Record<string, string>;
  readonly auth: AuthContext | undefined;
}

export interface SkillReadResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** `undefined` for an empty body. */
  readonly body: string | undefined;
}

export interface SkillReadOptions {
  /** Per-call time-out override, ms; default the router's invocation time-out. */
  timeoutMs?: number;
  /** Whether a reader with this transport auth may read; refused reads get 401. Default: all. */
  authorize?: (auth: AuthContext | undefined) => boolean;
}

export const DEFAULT_SKILL_CONTENT_TYPE = 'text/markdown; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const ALLOW = 'GET, OPTIONS';

const json = (status: number, value: unknown): SkillReadResponse => ({
  status,
  headers: { 'content-type': JSON_TYPE },
  body: JSON.stringify(value),
});
const empty = (status: number, headers: Record<string, string> = {}): SkillReadResponse => ({ status, headers, body: undefined });

const UNAUTHORIZED: SkillReadResponse = json(401, { error: 'Unauthorized' });

/** `text/*` without a charset gets `; charset=utf-8`; no content type means Markdown. */
export function skillContentType(declared: string | undefined): string {
  if (!declared) return DEFAULT_SKILL_CONTENT_TYPE;
  if (/^text\//i.test(declared) && !/;\s*charset=/i.test(declared)) return `${declared}; charset=utf-8`;
  return declared;
}

export async function handleSkillRead(router: Router, request: SkillReadRequest, options: SkillReadOptions = {}): Promise<SkillReadResponse> {
  if (request.method === 'OPTIONS') return empty(204, { allow: ALLOW });
  if (options.authorize && !options.authorize(request.auth)) return UNAUTHORIZED;
  if (request.method !== 'GET') return empty(405, { allow: ALLOW });
  const raw = rawSkillRoute(request.pathname);
  if (!raw) return empty(404);
  // An unencoded path is looked up as it stands: a skill found under it is a valid static path, so
  // decoding and grammar checks are needed only when nothing is found (to tell 400 from 404).
  const plain = !request.pathname.includes('%');
  let clientId = raw.clientId;
  let target: ResolvedTarget | undefined = plain ? router.findSkillRead(clientId, raw.skillPath) : undefined;
  if (!target) {
    const route = parseSkillRoute(request.pathname);
    if (!route) return empty(404);
    if (!route.ok) return json(400, { error: route.error });
    if (!plain) target = router.findSkillRead(route.clientId, route.skillPath);
    if (!target) return empty(404);
    clientId = route.clientId;
  }

  const outcome = await router.invokeTarget(clientId, target, {
    query: request.query,
    headers: request.headers,
    auth: request.auth,
    timeoutMs: options.timeoutMs,
  });
  if (outcome.ok) {
    if (typeof outcome.data === 'string') {
      const declared = target.descriptor.type === 'skill' ? target.descriptor.contentType : undefined;
      return { status: 200, headers: { 'content-type': skillContentType(declared) }, body: outcome.data };
    }
    return json(200, { data: outcome.data ?? null });
  }
  if (outcome.source === 'client') return json(502, { error: outcome.error });
  switch (outcome.error.code) {
    case 'timeout':
      return json(504, { error: outcome.error });
    case 'not_found':
      // The client went away between resolution and invocation.
      return empty(404);
    default:
      return json(502, { error: outcome.error });
  }
}
