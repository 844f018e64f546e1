/**
 * Path grammar, pattern matching and specificity (SPEC §2).
 *
 * A concrete path starts with `/` and has no `?`, `#`, empty segment, `.`/`..` segment, whitespace or
 * control character. A pattern (what a descriptor declares) is a concrete path whose static segments
 * use only letters, digits, `.`, `_`, `-`, `~`, and which may hold parameter segments `:name`.
 */

// \p{Cc} is every control character: C0, DEL and the C1 range U+0080–U+009F (e.g. NEL U+0085).
const FORBIDDEN_CHAR = /[?#\s\p{Cc}]/u;
const STATIC_SEGMENT = /^[A-Za-z0-9._~-]+$/;
const PARAM_SEGMENT = /^:[A-Za-z_][A-Za-z0-9_]*$/;

const SKILL_LEAVES = new Set(['skill.md', 'SKILL.md']);
const PROMPT_LEAVES = new Set(['prompt.md', 'PROMPT.md']);

/** Why `path` is not a valid concrete path, or `undefined` when it is. */
export function concretePathProblem(path: string): string | undefined {
  if (path.length === 0 || path.charCodeAt(0) !== 47 /* / */) return 'must start with "/"';
  if (FORBIDDEN_CHAR.test(path)) return 'must not contain "?", "#", whitespace or control characters';
  // Segment by segment without splitting: every host call checks its path twice (parse, route).
  for (let start = 1; ; ) {
    const slash = path.indexOf('/', start);
    const end = slash < 0 ? path.length : slash;
    const length = end - start;
    if (length === 0) return 'must not contain an empty segment';
    if (length <= 2 && path.charCodeAt(start) === 46 /* . */ && (length === 1 || path.charCodeAt(start + 1) === 46)) {
      return 'must not contain "." or ".." segments';
    }
    if (slash < 0) return undefined;
    start = slash + 1;
  }
}

/** Why `pattern` is not a valid descriptor path, or `undefined` when it is. */
export function patternProblem(pattern: string): string | undefined {
  const problem = concretePathProblem(pattern);
  if (problem) return problem;
  for (const segment of pattern.slice(1).split('/')) {
    if (segment.charCodeAt(0) === 58 /* : */) {
      if (!PARAM_SEGMENT.test(segment)) return `parameter segment "${segment}" must be ":" followed by a name`;
    } else if (!STATIC_SEGMENT.test(segment)) {
      return `segment "${segment}" may only use letters, digits, ".", "_", "-" and "~"`;
    }
  }
  return undefined;
}

/**
 * Why `path` is not a concrete path whose every segment is static (letters, digits, `.`, `_`, `-`,
 * `~`), or `undefined`. Paths addressed from outside (skill routes) are held to this, so that a
 * client is never sent a path outside the grammar it registered with.
 */
export function staticPathProblem(path: string): string | undefined {
  const problem = concretePathProblem(path);
  if (problem) return problem;
  for (const segment of path.slice(1).split('/')) {
    if (!STATIC_SEGMENT.test(segment)) return `segment "${segment}" may only use letters, digits, ".", "_", "-" and "~"`;
  }
  return undefined;
}

export function isValidConcretePath(path: string): boolean {
  return concretePathProblem(path) === undefined;
}

export function isValidPattern(pattern: string): boolean {
  return patternProblem(pattern) === undefined;
}

function lastSegment(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** `…/skill.md`, `…/SKILL.md` or `….skill.md`. */
export function isSkillPath(path: string): boolean {
  const leaf = lastSegment(path);
  return SKILL_LEAVES.has(leaf) || leaf.endsWith('.skill.md');
}

/**
 * The concrete paths a skill route's path names, in the order they are tried (SPEC §8): the path
 * itself when it is a skill path, then `<path>/skill.md`, `<path>/SKILL.md`, `<path>.skill.md`.
 */
export function skillPathCandidates(skillPath: string): string[] {
  const candidates: string[] = [];
  if (isSkillPath(skillPath)) candidates.push(skillPath);
  candidates.push(`${skillPath}/skill.md`, `${skillPath}/SKILL.md`, `${skillPath}.skill.md`);
  return candidates;
}

/**
 * The skill-route names under which the skill at `skillPath` is read, with the position its path
 * takes among each name's candidates ({@link skillPathCandidates}); lower positions win.
 */
export function skillReadNames(skillPath: string): Array<{ readonly name: string; readonly rank: number }> {
  const names: Array<{ name: string; rank: number }> = [];
  if (isSkillPath(skillPath)) names.push({ name: skillPath, rank: 0 });
  if (skillPath.endsWith('/skill.md')) names.push({ name: skillPath.slice(0, -9), rank: 1 });
  else if (skillPath.endsWith('/SKILL.md')) names.push({ name: skillPath.slice(0, -9), rank: 2 });
  else if (skillPath.endsWith('.skill.md')) names.push({ name: skillPath.slice(0, -9), rank: 3 });
  return names;
}

/** `…/prompt.md`, `…/PROMPT.md` or `….prompt.md`. */
export function isPromptPath(path: string): boolean {
  const leaf = lastSegment(path);
  return PROMPT_LEAVES.has(leaf) || leaf.endsWith('.prompt.md');
}

/** Segment ranks for specificity: static beats a reserved leaf, which beats a parameter. */
export const SegmentRank = { Param: 1, ReservedLeaf: 2, Static: 3 } as const;
export type SegmentRank = (typeof SegmentRank)[keyof typeof SegmentRank];

export interface CompiledPattern {
  readonly pattern: string;
  /** Segment text; for parameters, the name without the colon. */
  readonly segments: readonly string[];
  readonly ranks: readonly SegmentRank[];
  /** True when the pattern has no parameter segment (it matches exactly one path). */
  readonly isStatic: boolean;
}

/** Compile a pattern that already passed {@link patternProblem}. */
export function compilePattern(pattern: string): CompiledPattern {
  const raw = pattern.slice(1).split('/');
  const segments: string[] = [];
  const ranks: SegmentRank[] = [];
  let isStatic = true;
  for (const segment of raw) {
    if (segment.charCodeAt(0) === 58) {
      segments.push(segment.slice(1));
      ranks.push(SegmentRank.Param);
      isStatic = false;
    } else {
      segments.push(segment);
      ranks.push(SKILL_LEAVES.has(segment) || PROMPT_LEAVES.has(segment) ? SegmentRank.ReservedLeaf : SegmentRank.Static);
    }
  }
  return { pattern, segments, ranks, isStatic };
}

/** Split a concrete path into its segments (`/a/b` → `['a', 'b']`). */
export function splitPath(path: string): string[] {
  return path.slice(1).split('/');
}

/**
 * What a parameter segment may take. The clients in the field parse every `callClient` path with
 * their own grammar (lower-case `[a-z0-9][a-z0-9_-]*` segments) and drop the connection, or crash,
 * on anything else; so a value outside it never matches, and the caller gets not-found instead.
 */
const PARAM_VALUE = /^[a-z0-9][a-z0-9_-]*$/;

export function isValidParamValue(value: string): boolean {
  return PARAM_VALUE.test(value);
}

/**
 * Match compiled `pattern` against the segments of a concrete path. Returns the parameter values
 * (possibly an empty object) or `undefined` when it does not match.
 */
export function matchPattern(pattern: CompiledPattern, pathSegments: readonly string[]): Record<string, string> | undefined {
  const { segments, ranks } = pattern;
  if (segments.length !== pathSegments.length) return undefined;
  let params: Record<string, string> | undefined;
  for (let i = 0; i < segments.length; i++) {
    const actual = pathSegments[i] as string;
    if (ranks[i] === SegmentRank.Param) {
      if (!PARAM_VALUE.test(actual)) return undefined;
      (params ??= {})[segments[i] as string] = actual;
    } else if (segments[i] !== actual) {
      return undefined;
    }
  }
  return params ?? {};
}

/**
 * Order two patterns by specificity: negative when `a` is more specific than `b`. Segments are
 * compared from the left; the first segment whose rank differs decides. Suitable for `Array#sort`.
 */
export function compareSpecificity(a: CompiledPattern, b: CompiledPattern): number {
  const n = Math.min(a.ranks.length, b.ranks.length);
  for (let i = 0; i < n; i++) {
    const diff = (b.ranks[i] as number) - (a.ranks[i] as number);
    if (diff !== 0) return diff;
  }
  return b.ranks.length - a.ranks.length;
}
