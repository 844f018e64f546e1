/**
 * Per-client path index. Static patterns resolve with one map lookup; patterns with parameters are
 * kept per method in specificity order so the first match is the most specific one (SPEC §4).
 * Cost depends only on this client's catalog, never on how many clients are connected.
 */
import {
  compareSpecificity,
  compilePattern,
  matchPattern,
  methodOf,
  isSkillPath,
  skillPathCandidates,
  splitPath,
  staticPathProblem,
  type CallKind,
  type CompiledPattern,
  type EndpointMethod,
  type PathDescriptor,
} from '@mdp/protocol';

export interface ResolvedTarget {
  readonly descriptor: PathDescriptor;
  /** The concrete path that was resolved. */
  readonly path: string;
  readonly method: EndpointMethod;
  readonly params: Record<string, string>;
  readonly kind: CallKind;
}

interface Entry {
  readonly descriptor: PathDescriptor;
  readonly kind: CallKind;
}

interface PatternEntry extends Entry {
  readonly compiled: CompiledPattern;
}

function kindOf(descriptor: PathDescriptor): CallKind {
  return descriptor.type === 'endpoint' ? 'tool' : descriptor.type;
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export class PathIndex {
  readonly descriptors: readonly PathDescriptor[];
  // Both maps are keyed by method first, so a lookup hashes the path as it is (no "GET /a" key is
  // built per call); both are created only when needed, since every connected client holds one.
  private exact: Map<EndpointMethod, Map<string, Entry>> | undefined;
  private patterns: Map<EndpointMethod, PatternEntry[]> | undefined;

  constructor(descriptors: readonly PathDescriptor[]) {
    this.descriptors = descriptors;
    for (const descriptor of descriptors) {
      const method = methodOf(descriptor);
      const kind = kindOf(descriptor);
      if (descriptor.path.includes('/:')) {
        const entry: PatternEntry = { descriptor, kind, compiled: compilePattern(descriptor.path) };
        const patterns = (this.patterns ??= new Map());
        let list = patterns.get(method);
        if (!list) patterns.set(method, (list = []));
        list.push(entry);
      } else {
        const exact = (this.exact ??= new Map());
        let byPath = exact.get(method);
        if (!byPath) exact.set(method, (byPath = new Map()));
        // The first declaration of a method+path wins.
        if (!byPath.has(descriptor.path)) byPath.set(descriptor.path, { descriptor, kind });
      }
    }
    // Array#sort is stable, so equally specific patterns keep declaration order.
    if (this.patterns) for (const list of this.patterns.values()) list.sort((a, b) => compareSpecificity(a.compiled, b.compiled));
  }

  /** Resolve a concrete, already validated path. */
  resolve(method: EndpointMethod, path: string): ResolvedTarget | undefined {
    // A static pattern can lose to a parameter pattern only if that one is more specific further
    // left, which cannot happen: static is the highest rank in every segment. So exact wins.
    const exact = this.exact?.get(method)?.get(path);
    if (exact) return { descriptor: exact.descriptor, path, method, params: NO_PARAMS, kind: exact.kind };
    const list = this.patterns?.get(method);
    if (!list) return undefined;
    const segments = splitPath(path);
    for (const entry of list) {
      const params = matchPattern(entry.compiled, segments);
      if (params) return { descriptor: entry.descriptor, path, method, params, kind: entry.kind };
    }
    return undefined;
  }

  /** The skill this concrete path resolves to (GET), or `undefined` when it names no skill. */
  findSkill(path: string): ResolvedTarget | undefined {
    const target = this.resolve('GET', path);
    return target && target.kind === 'skill' ? target : undefined;
  }

  /**
   * The skill a skill route's path names (SPEC §8): the first of {@link skillPathCandidates} that
   * resolves to a skill. Only a name that is a valid static path (what a skill route accepts)
   * finds anything.
   *
   * Nothing is kept per name: a table of names built on a client's first read (as there once was)
   * is 3.5 KB per client of 20 skills that a server reading across 2,000 clients builds under load,
   * where every new table is promoted to the old generation (bench `catalog`, issue 37). Without GET
   * patterns a read is at most four lookups in the static paths, with no array and no match.
   */
  resolveSkillRead(name: string): ResolvedTarget | undefined {
    if (this.patterns?.has('GET')) {
      if (staticPathProblem(name) !== undefined) return undefined;
      for (const candidate of skillPathCandidates(name)) {
        const target = this.findSkill(candidate);
        if (target) return target;
      }
      return undefined;
    }
    const byPath = this.exact?.get('GET');
    if (byPath === undefined) return undefined;
    // skillPathCandidates, in its order: the name itself when it is a skill path, then the forms.
    let path = name;
    let entry = isSkillPath(name) ? skillEntry(byPath, path) : undefined;
    if (entry === undefined) entry = skillEntry(byPath, (path = `${name}/skill.md`));
    if (entry === undefined) entry = skillEntry(byPath, (path = `${name}/SKILL.md`));
    if (entry === undefined) entry = skillEntry(byPath, (path = `${name}.skill.md`));
    // A name the route refuses finds nothing (`/odd/` for `/odd/.skill.md`).
    if (entry === undefined || !isStaticName(name, path)) return undefined;
    return { descriptor: entry.descriptor, path, method: 'GET', params: NO_PARAMS, kind: 'skill' };
  }
}

/**
 * Whether `name` is a valid static path (`staticPathProblem`), given that `path`, one of its
 * candidates, is a registered static path: registration checked every segment of it (the
 * descriptor schema), so only what the name does not share with it is left to check, with no
 * split and no match on every read.
 */
function isStaticName(name: string, path: string): boolean {
  // The name itself.
  if (path.length === name.length) return true;
  // `<name>/skill.md`, `<name>/SKILL.md`: the name is the path's leading segments, at least one.
  if (path.charCodeAt(name.length) === 47 /* / */) return name.length > 0;
  // `<name>.skill.md`: the name's last segment is the start of the path's, and must be a segment.
  const start = name.lastIndexOf('/') + 1;
  const length = name.length - start;
  if (length === 0) return false;
  return length > 2 || name.charCodeAt(start) !== 46 /* . */ || (length === 2 && name.charCodeAt(start + 1) !== 46);
}

/** The entry of `path` when it is a skill: a GET endpoint declared there first shadows it. */
function skillEntry(byPath: Map<string, Entry>, path: string): Entry | undefined {
  const entry = byPath.get(path);
  return entry !== undefined && entry.kind === 'skill' ? entry : undefined;
}
