/**
 * The packages whose node handler is the production path and whose Hono routes are a second entry
 * (`<package>/hono`), as a user meets them: the main entry runs where Hono is not installed, its
 * declarations name no Hono type, and Hono is an optional peer (the embedder's own copy), never a
 * dependency every user installs. Reads the built `dist` of each package.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPO, output, publishedPackages, run, type WorkspacePackage } from './helpers.js';

type Exports = Record<string, { types: string; default: string } | undefined>;

const withHonoEntry = publishedPackages().filter((p) => (p.manifest.exports as Exports)['./hono'] !== undefined);

/** Hono and its companion packages (`hono`, `hono/cors`, `@hono/node-server`, …). */
const HONO = /^(hono|@hono\/[^/]+)(\/|$)/;

/**
 * Resolve hooks for a child node process: every Hono specifier fails as it would where Hono is not
 * installed. Registered before the entries are imported, so it sees every module they reach.
 */
const NO_HONO_HOOKS = `
export async function resolve(specifier, context, next) {
  if (${HONO}.test(specifier)) {
    throw Object.assign(new Error('Cannot find package ' + JSON.stringify(specifier) + ': hono is not installed'), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return next(specifier, context);
}`;

/** Import `main`, then `hono`, in a node process without Hono; prints what each gave. */
function importWithoutHono(main: string, hono: string): string {
  return `
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(NO_HONO_HOOKS)}));
const loaded = await import(${JSON.stringify(pathToFileURL(main).href)});
console.log('main: ' + Object.keys(loaded).sort().join(' '));
try {
  await import(${JSON.stringify(pathToFileURL(hono).href)});
  console.log('hono: loaded');
} catch (error) {
  console.log('hono: ' + error.message);
}`;
}

/** Every module specifier of the declaration files reached from `entry` through relative imports. */
function declaredSpecifiers(entry: string): Set<string> {
  const specifiers = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)) {
      specifiers.add(specifier!);
      if (specifier!.startsWith('.')) visit(resolve(dirname(file), specifier!.replace(/\.js$/, '.d.ts')));
    }
  };
  visit(entry);
  return specifiers;
}

it('covers the packages that ship Hono routes as a second entry', () => {
  expect(withHonoEntry.map((p) => p.manifest.name)).toEqual(expect.arrayContaining(['@mdp/host-api', '@mdp/skills-gateway', '@mdp/transport-http-loop']));
});

describe.each(withHonoEntry.map((p) => [p.manifest.name, p] as const))('%s', (_name, { dir, manifest }: WorkspacePackage) => {
  const exported = manifest.exports as Exports;
  const at = (file: string): string => join(REPO, dir, file);

  it('declares hono an optional peer (and a dev dependency to build and test with), not a dependency', () => {
    const field = (name: string): Record<string, unknown> => (manifest[name] as Record<string, unknown> | undefined) ?? {};
    expect(field('dependencies')).not.toHaveProperty('hono');
    expect(field('peerDependencies')).toHaveProperty('hono');
    expect(field('peerDependenciesMeta')).toEqual(expect.objectContaining({ hono: { optional: true } }));
    expect(field('devDependencies').hono).toBe(field('peerDependencies').hono);
  });

  it('runs its main entry where hono is not installed; its ./hono entry needs hono', async () => {
    const script = importWithoutHono(at(exported['.']!.default), at(exported['./hono']!.default));
    const result = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: at('.') });
    expect(result.code, output(result)).toBe(0);
    expect(result.stdout, output(result)).toMatch(/^main: \S/m);
    // The hooks were in force: the Hono entry could not load.
    expect(result.stdout, output(result)).toMatch(/^hono: Cannot find package "hono": hono is not installed$/m);
  });

  it('names no hono module in the declarations of its main entry', () => {
    const specifiers = [...declaredSpecifiers(at(exported['.']!.types))];
    expect(specifiers.length).toBeGreaterThan(0);
    expect(specifiers.filter((specifier) => HONO.test(specifier))).toEqual([]);
    expect([...declaredSpecifiers(at(exported['./hono']!.types))].some((specifier) => HONO.test(specifier))).toBe(true);
  });
});
