/**
 * The rule every published workspace package follows (a new package must too): what npm shows
 * about it, what it ships, and that its source maps resolve inside what it ships. The dev workflow
 * check sits here too: workspace dependencies stay symlinks, so a build is seen everywhere at once.
 */
import { existsSync, lstatSync, readFileSync, readdirSync, realpathSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, publishedPackages, readJson, workspacePackages, type Manifest } from './helpers.js';

const root = readJson<Manifest & { engines: { node: string }; repository: { url: string } }>(join(REPO, 'package.json'));
const license = readFileSync(join(REPO, 'LICENSE'), 'utf8');
const packages = publishedPackages();

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)]));
}

function dependencyNames(manifest: Manifest): string[] {
  const fields = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'] as const;
  return fields.flatMap((field) => Object.keys((manifest[field] as Record<string, string> | undefined) ?? {}));
}

describe('the root', () => {
  it('has the MIT LICENSE, a repository and the node versions every package supports', () => {
    expect(license).toMatch(/^MIT License/);
    expect(root.repository.url).toMatch(/^git\+https:\/\//);
    expect(root.engines.node).toMatch(/^>=\d+\.\d+/);
  });
});

describe.each(packages.map((p) => [p.manifest.name, p] as const))('%s', (_name, { dir, manifest }) => {
  const at = (...parts: string[]): string => join(REPO, dir, ...parts);

  it('is MIT licensed and ships the LICENSE file', () => {
    expect(manifest.license).toBe('MIT');
    expect(readFileSync(at('LICENSE'), 'utf8')).toBe(license);
  });

  it('names the repository, its own directory in it, and the supported node versions', () => {
    expect(manifest.repository).toEqual({ type: 'git', url: root.repository.url, directory: dir });
    expect(manifest.engines).toEqual({ node: root.engines.node });
  });

  it('is published publicly, with dist and src (for the source maps), and declares its side effects', () => {
    expect(manifest.publishConfig).toEqual({ access: 'public' });
    const files = manifest.files as string[];
    expect(files).toEqual(expect.arrayContaining(['dist', 'src']));
    if (manifest.bin) expect(files).toContain('bin');
    // Libraries have none; an app names the modules that act on import (its CLI and launchers).
    if (manifest.bin) expect(manifest.sideEffects).toEqual(expect.arrayContaining([expect.stringMatching(/^\.\/(bin|dist)\//)]));
    else expect(manifest.sideEffects).toBe(false);
  });

  it('exports typed ESM from dist by name', () => {
    const exported = (manifest.exports as Record<string, { types: string; default: string }>)['.'];
    expect(exported?.types).toMatch(/^\.\/dist\/.*\.d\.ts$/);
    expect(exported?.default).toMatch(/^\.\/dist\/.*\.js$/);
    expect(manifest.type).toBe('module');
  });

  it('depends on other workspace packages through workspace: (publishing writes real versions)', () => {
    const internal = new Set(workspacePackages().map((p) => p.manifest.name));
    for (const field of ['dependencies', 'devDependencies', 'peerDependencies'] as const) {
      for (const [name, spec] of Object.entries((manifest[field] as Record<string, string> | undefined) ?? {})) {
        if (internal.has(name)) expect(spec, `${field}.${name}`).toMatch(/^workspace:/);
      }
    }
  });

  it('depends at run time on published packages only (a private one, like the test kit, is a dev dependency at most)', () => {
    const privates = new Set(
      workspacePackages()
        .filter((p) => p.manifest.private === true)
        .map((p) => p.manifest.name),
    );
    for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies'] as const) {
      for (const name of Object.keys((manifest[field] as Record<string, string> | undefined) ?? {})) expect(privates.has(name), `${field}.${name}`).toBe(false);
    }
  });

  it('has a README that stands on its own (no SPEC file outside this repository)', () => {
    const readme = readFileSync(at('README.md'), 'utf8');
    expect(readme).not.toMatch(/\bSPEC\b/);
    for (const [, target] of readme.matchAll(/\]\((?!https?:|#)([^)#\s]+)/g)) {
      expect(existsSync(resolve(at(), target!)), `README link ${target}`).toBe(true);
    }
  });

  it('builds into an emptied dist (files of deleted sources would be published with the rest)', () => {
    expect((manifest.scripts as Record<string, string>).build).toMatch(/^rm -rf dist && tsc /);
  });

  it('has source maps whose sources are files it ships, or carried in the map', () => {
    expect(existsSync(at('dist')), 'built').toBe(true);
    const shipped = (manifest.files as string[]).map((f) => at(f));
    const maps = filesUnder(at('dist')).filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(0);
    for (const map of maps) {
      const { sources, sourcesContent } = readJson<{ sources: string[]; sourcesContent?: Array<string | null> }>(map);
      for (const [i, source] of sources.entries()) {
        // A bundle's map (the server's dist/cli.js and dist/bundle/) names the sources of other
        // packages and of dependencies, and holds their text.
        if (typeof sourcesContent?.[i] === 'string') continue;
        const file = resolve(dirname(map), source);
        expect(existsSync(file), `${relative(REPO, map)} -> ${source}`).toBe(true);
        expect(
          shipped.some((top) => file.startsWith(`${top}/`)),
          `${source} is shipped`,
        ).toBe(true);
      }
    }
  });
});

describe('the dev workflow', () => {
  it('links every workspace dependency to its package (a build is seen at once, not a copy made at install)', () => {
    const byName = new Map(workspacePackages().map((p) => [p.manifest.name, p.dir]));
    const links = [{ dir: '.', manifest: root }, ...workspacePackages()].flatMap(({ dir, manifest }) =>
      dependencyNames(manifest)
        .filter((name) => byName.has(name))
        .map((name) => ({ from: join(REPO, dir, 'node_modules', name), to: join(REPO, byName.get(name)!) })),
    );
    expect(links.length).toBeGreaterThan(10);
    for (const { from, to } of links) {
      expect(lstatSync(from).isSymbolicLink(), relative(REPO, from)).toBe(true);
      expect(realpathSync(from)).toBe(realpathSync(to));
    }
  });
});
