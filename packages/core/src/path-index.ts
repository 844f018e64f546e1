/**
 * Per-client path index. Static patterns resolve with one map lookup; patterns with parameters are
 * kept per method in specificity order so the first match is the most specific one (SPEC §4).
 * Cost depends only on this client's catalog, never on how many clients are connected.
 */
import {
  compareSpecificity,
  compilePattern,
  matchPattern,
  splitPath,
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
  readonly compiled: CompiledPattern;
  readonly kind: CallKind;
}

function methodOf(descriptor: PathDescriptor): EndpointMethod {
  return descriptor.type === 'endpoint' ? descriptor.method : 'GET';
}

function kindOf(descriptor: PathDescriptor): CallKind {
  return descriptor.type === 'endpoint' ? 'tool' : descriptor.type;
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export class PathIndex {
  readonly descriptors: readonly PathDescriptor[];
  private readonly exact = new Map<string, Entry>();
  private readonly patterns = new Map<EndpointMethod, Entry[]>();

  constructor(descriptors: readonly PathDescriptor[]) {
    this.descriptors = descriptors;
    for (const descriptor of descriptors) {
      const method = methodOf(descriptor);
      const entry: Entry = { descriptor, compiled: compilePattern(descriptor.path), kind: kindOf(descriptor) };
      if (entry.compiled.isStatic) {
        const key = `${method} ${descriptor.path}`;
        // The first declaration of a method+path wins.
        if (!this.exact.has(key)) this.exact.set(key, entry);
      } else {
        let list = this.patterns.get(method);
        if (!list) this.patterns.set(method, (list = []));
        list.push(entry);
      }
    }
    // Array#sort is stable, so equally specific patterns keep declaration order.
    for (const list of this.patterns.values()) list.sort((a, b) => compareSpecificity(a.compiled, b.compiled));
  }

  /** Resolve a concrete, already validated path. */
  resolve(method: EndpointMethod, path: string): ResolvedTarget | undefined {
    const exact = this.exact.get(`${method} ${path}`);
    const list = this.patterns.get(method);
    if (!list) return exact && { descriptor: exact.descriptor, path, method, params: NO_PARAMS, kind: exact.kind };
    // A static pattern can lose to a parameter pattern only if that one is more specific further
    // left, which cannot happen: static is the highest rank in every segment. So exact wins.
    if (exact) return { descriptor: exact.descriptor, path, method, params: NO_PARAMS, kind: exact.kind };
    const segments = splitPath(path);
    for (const entry of list) {
      const params = matchPattern(entry.compiled, segments);
      if (params) return { descriptor: entry.descriptor, path, method, params, kind: entry.kind };
    }
    return undefined;
  }

  /** True when some descriptor of kind `skill` is declared at exactly this pattern or matches it. */
  findSkill(path: string): ResolvedTarget | undefined {
    const target = this.resolve('GET', path);
    return target && target.kind === 'skill' ? target : undefined;
  }
}
