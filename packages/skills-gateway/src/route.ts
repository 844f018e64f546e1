/**
 * Parsing the request target of the two skill routes (SPEC §8):
 *   direct  /skills/:clientId/*skillPath
 *   nested  /:clientId/skills/*skillPath   (clientId never `mdp` or `skills`)
 */
import { staticPathProblem } from '@mdp/protocol';
import { setOwn } from '@mdp/core';

export type SkillRoute = { readonly ok: true; readonly clientId: string; readonly skillPath: string } | { readonly ok: false; readonly error: string };

const RESERVED_NESTED_CLIENT_IDS = new Set(['mdp', 'skills']);

/** The client id and skill path of a skill route as they stand in the pathname (still encoded). */
export interface RawSkillRoute {
  readonly clientId: string;
  /** Starts with "/". */
  readonly skillPath: string;
}

/**
 * The origin form (`/path?query`) of a raw request target. The absolute form
 * (`http://host/path?query`, which servers must accept, RFC 9112 §3.2.2) loses its scheme and
 * authority and nothing else: dot segments and percent-encoding stay as sent, for the route checks.
 */
export function originForm(target: string): string {
  if (target.startsWith('/')) return target;
  const authority = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
  if (!authority) return target;
  const rest = target.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** Query parameters of a URL; the last value of a repeated key wins. */
export function lastValueQuery(search: URLSearchParams): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [key, value] of search) setOwn(query, key, value);
  return query;
}

/** One trailing slash is tolerated, as the reference server does: `/skills/c/docs/` reads `/docs`. */
function withoutTrailingSlash(skillPath: string): string {
  return skillPath.length > 1 && skillPath.endsWith('/') ? skillPath.slice(0, -1) : skillPath;
}

/** Split a raw pathname that has the shape of a skill route; `undefined` when it has not. */
export function rawSkillRoute(pathname: string): RawSkillRoute | undefined {
  if (pathname.startsWith('/skills/')) {
    const end = pathname.indexOf('/', 8);
    return end > 8 ? { clientId: pathname.slice(8, end), skillPath: withoutTrailingSlash(pathname.slice(end)) } : undefined;
  }
  const second = pathname.indexOf('/', 1);
  if (second <= 1 || !pathname.startsWith('/skills/', second)) return undefined;
  // Compare decoded: `/%6Ddp/skills/…` names client `mdp` too.
  const clientId = pathname.slice(1, second);
  if (RESERVED_NESTED_CLIENT_IDS.has(decodeSegment(clientId) ?? clientId)) return undefined;
  return { clientId, skillPath: withoutTrailingSlash(pathname.slice(second + 7)) };
}

/** True when a raw pathname has the shape of a skill route (before decoding). */
export function isSkillRoutePath(pathname: string): boolean {
  return rawSkillRoute(pathname) !== undefined;
}

/**
 * The raw pathname and the query of an origin-form request target, or `undefined` when it is not a
 * skill route (checked first and cheaply: servers ask this of every request). Both adapters read
 * their requests through it.
 */
export function skillTarget(target: string): { readonly pathname: string; readonly query: Record<string, string> } | undefined {
  const mark = target.indexOf('?');
  const pathname = mark < 0 ? target : target.slice(0, mark);
  if (!isSkillRoutePath(pathname)) return undefined;
  return { pathname, query: mark < 0 ? {} : lastValueQuery(new URLSearchParams(target.slice(mark + 1))) };
}

function decodeSegment(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * Split a raw (still percent-encoded) pathname into client id and concrete skill path. Returns
 * `undefined` when the pathname is not a skill route at all, an error when it is but is malformed.
 */
export function parseSkillRoute(pathname: string): SkillRoute | undefined {
  const raw = rawSkillRoute(pathname);
  if (!raw) return undefined;
  const clientId = decodeSegment(raw.clientId);
  if (clientId === undefined) return { ok: false, error: 'clientId has malformed percent-encoding' };
  if (clientId === '') return { ok: false, error: 'clientId must not be empty' };
  const segments: string[] = [];
  for (const segment of raw.skillPath.slice(1).split('/')) {
    const decoded = decodeSegment(segment);
    if (decoded === undefined) return { ok: false, error: 'skill path has malformed percent-encoding' };
    if (decoded.includes('/')) return { ok: false, error: 'skill path segments must not contain an encoded "/"' };
    segments.push(decoded);
  }
  const skillPath = `/${segments.join('/')}`;
  // Only static segments: a client must never be sent a path outside the grammar it registered with.
  const problem = staticPathProblem(skillPath);
  if (problem) return { ok: false, error: `skill path ${problem}` };
  return { ok: true, clientId, skillPath };
}
