/**
 * No runtime import cycle inside a package's sources: a module that imports (for its values) a
 * module that imports it back depends on the order node evaluates them in, and reads `undefined`
 * the day that order changes. Type-only imports are left out: they are erased.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The `src` folders of every package and app. */
function sourceRoots(): string[] {
  const roots: string[] = [];
  for (const parent of ['packages', 'apps']) {
    for (const name of readdirSync(join(REPO, parent))) {
      const src = join(REPO, parent, name, 'src');
      if (existsSync(src)) roots.push(src);
    }
  }
  return roots;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !/\.d\.ts$/.test(entry.name) ? [path] : [];
  });
}

/**
 * The relative modules `source` imports or re-exports for their values. `import type` and
 * `export type` are erased; so is an import whose every name is marked `type`.
 */
export function valueImports(source: string): string[] {
  const specifiers: string[] = [];
  const statement = /(?:^|\n)\s*(import|export)\s+(type\s+)?([^;]*?)\s*from\s*['"](\.[^'"]+)['"]/g;
  for (const match of source.matchAll(statement)) {
    const [, , typeOnly, clause, specifier] = match;
    if (typeOnly) continue;
    const braces = /^\{([^}]*)\}$/.exec(clause!.trim());
    if (braces) {
      const names = braces[1]!
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean);
      if (names.length > 0 && names.every((name) => name.startsWith('type '))) continue;
    }
    specifiers.push(specifier!);
  }
  // Side-effect imports: `import './x.js'`.
  for (const match of source.matchAll(/(?:^|\n)\s*import\s*['"](\.[^'"]+)['"]/g)) specifiers.push(match[1]!);
  return specifiers;
}

function resolveSpecifier(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base.replace(/\.js$/, '.ts'), base.replace(/\.js$/, '.tsx'), `${base}.ts`, join(base, 'index.ts')]) {
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Every cycle of the graph, each once, as the list of its modules. */
export function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = [];
  const seen = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') {
        const cycle = stack.slice(stack.indexOf(next));
        const key = [...cycle].sort().join('\n');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(cycle);
        }
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

describe('runtime import cycles', () => {
  it('finds a value import and ignores type-only ones', () => {
    const source = [
      "import { a, type B } from './a.js';",
      "import type { C } from './c.js';",
      "import { type D, type E } from './d.js';",
      "export { f } from './f.js';",
      "export type { G } from './g.js';",
      "import './side.js';",
      "import { h } from '@mdp/core';",
    ].join('\n');
    expect(valueImports(source)).toEqual(['./a.js', './f.js', './side.js']);
    expect(
      cyclesOf(
        new Map([
          ['x', ['y']],
          ['y', ['z']],
          ['z', ['x']],
          ['w', ['x']],
        ]),
      ),
    ).toEqual([['x', 'y', 'z']]);
    expect(
      cyclesOf(
        new Map([
          ['x', ['y']],
          ['y', []],
        ]),
      ),
    ).toEqual([]);
  });

  for (const root of sourceRoots()) {
    const name = relative(REPO, dirname(root));
    it(`${name} has none`, () => {
      const graph = new Map<string, string[]>();
      for (const file of sourceFiles(root)) {
        const imports = valueImports(readFileSync(file, 'utf8'))
          .map((specifier) => resolveSpecifier(file, specifier))
          .filter((path): path is string => path !== undefined);
        graph.set(file, imports);
      }
      const cycles = cyclesOf(graph).map((cycle) => cycle.map((file) => relative(root, file)).join(' → '));
      expect(cycles).toEqual([]);
    });
  }
});
