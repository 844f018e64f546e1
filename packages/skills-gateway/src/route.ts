/**
 * Parsing the two skill routes (SPEC §8):
 *   direct  /skills/:clientId/*skillPath
 *   nested  /:clientId/skills/*skillPath   (clientId never `mdp` or `skills`)
 */
import { isSkillPath, staticPathProblem } from '@mdp/protocol';

export type SkillRoute =
  | { readonly ok: true; readonly clientId: string; readonly skillPath: string }
  | { readonly ok: false; readonly error: string };

const RESERVED_NESTED_CLIENT_IDS = new Set(['mdp', 'skills']);

/** True when a raw pathname has the shape of a skill route (before decoding). */
export function isSkillRoutePath(pathname: string): boolean {
  if (pathname.startsWith('/skills/')) return pathname.indexOf('/', 8) > 8;
  const second = pathname.indexOf('/', 1);
  if (second <= 1 || !pathname.startsWith('/skills/', second)) return false;
  // Compare decoded: `/%6Ddp/skills/…` names client `mdp` too.
  const rawClientId = pathname.slice(1, second);
  return !RESERVED_NESTED_CLIENT_IDS.has(decodeSegment(rawClientId) ?? rawClientId);
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
  if (!isSkillRoutePath(pathname)) return undefined;
  const raw = pathname.slice(1).split('/');
  // direct: ['skills', clientId, ...path]; nested: [clientId, 'skills', ...path]
  const direct = raw[0] === 'skills';
  const rawClientId = (direct ? raw[1] : raw[0]) as string;
  const rawPath = raw.slice(2);
  const clientId = decodeSegment(rawClientId);
  if (clientId === undefined) return { ok: false, error: 'clientId has malformed percent-encoding' };
  if (clientId === '') return { ok: false, error: 'clientId must not be empty' };
  const segments: string[] = [];
  for (const segment of rawPath) {
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

/** The concrete paths tried for a skill path, in order (SPEC §8). */
export function skillPathCandidates(skillPath: string): string[] {
  const candidates: string[] = [];
  if (isSkillPath(skillPath)) candidates.push(skillPath);
  candidates.push(`${skillPath}/skill.md`, `${skillPath}/SKILL.md`, `${skillPath}.skill.md`);
  return candidates;
}
