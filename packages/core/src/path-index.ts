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
  skillPathCandidates,
  skillReadNames,
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
  // Skill-route name → skill, built on the first read (most clients are never read).
  private skillReads: Map<string, ResolvedTarget> | undefined;

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
   * finds anything. Without GET patterns every answer is known up front, so the names are
   * computed once and a read is one map lookup.
   */
  resolveSkillRead(name: string): ResolvedTarget | undefined {
    if (!this.patterns?.has('GET')) return (this.skillReads ??= this.collectSkillReads()).get(name);
    if (staticPathProblem(name) !== undefined) return undefined;
    for (const candidate of skillPathCandidates(name)) {
      const target = this.findSkill(candidate);
      if (target) return target;
    }
    return undefined;
  }

  private collectSkillReads(): Map<string, ResolvedTarget> {
    const reads = new Map<string, ResolvedTarget>();
    const ranks = new Map<string, number>();
    for (const [path, entry] of this.exact?.get('GET') ?? []) {
      if (entry.kind !== 'skill') continue;
      const target: ResolvedTarget = { descriptor: entry.descriptor, path, method: 'GET', params: NO_PARAMS, kind: 'skill' };
      for (const { name, rank } of skillReadNames(path)) {
        // Only names a skill route can carry: the route refuses anything else with 400 first.
        if (staticPathProblem(name) !== undefined) continue;
        if ((ranks.get(name) ?? Infinity) <= rank) continue;
        ranks.set(name, rank);
        reads.set(name, target);
      }
    }
    return reads;
  }
}
