/**
 * A release as `changeset version` and `pnpm -r publish` would make it, on a scratch copy of the
 * repository (the version bumps never touch the checkout): the publish dry run succeeds for every
 * published package, and the packed manifests name each other by the new real versions.
 */
import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REPO, output, publishedPackages, readJson, removeScratch, run, scratch, type Manifest } from './helpers.js';

afterAll(removeScratch);

const SKIPPED = new Set(['node_modules', '.git', '.turbo']);

it('changeset version, then pnpm -r publish --dry-run, ships real versions of internal dependencies', async () => {
  const copy = scratch('release-copy');
  // The working tree as it is (built dist included), without installed or cached state.
  cpSync(REPO, copy, { recursive: true, filter: (source) => !SKIPPED.has(basename(source)) || relative(REPO, source) === '' });
  const installed = await run('pnpm', ['install', '--offline', '--frozen-lockfile'], { cwd: copy });
  expect(installed.code, output(installed)).toBe(0);

  const before = new Map(publishedPackages().map((p) => [p.manifest.name, p.manifest.version]));
  // A patch for every package, so each gets a new version even when no other changeset is pending.
  const bumps = [...before.keys()].map((name) => `"${name}": patch`).join('\n');
  writeFileSync(join(copy, '.changeset/release-test.md'), `---\n${bumps}\n---\n\nA release made by the publish test.\n`);
  const versioned = await run(process.execPath, [join(copy, 'node_modules/@changesets/cli/bin.js'), 'version'], { cwd: copy });
  expect(versioned.code, output(versioned)).toBe(0);
  const after = new Map(publishedPackages().map((p) => [p.manifest.name, readJson<Manifest>(join(copy, p.dir, 'package.json')).version]));
  // The checkout keeps its own versions.
  for (const [name, version] of after) expect(version, name).not.toBe(before.get(name));
  expect(new Map(publishedPackages().map((p) => [p.manifest.name, p.manifest.version]))).toEqual(before);

  const published = await run('pnpm', ['-r', 'publish', '--dry-run', '--no-git-checks'], { cwd: copy });
  expect(published.code, output(published)).toBe(0);
  for (const [name, version] of after) expect(published.stdout).toContain(`+ ${name}@${version}`);

  const packs = join(copy, '.packs');
  mkdirSync(packs);
  const packed = await run('pnpm', ['-r', 'pack', '--pack-destination', packs], { cwd: copy });
  expect(packed.code, output(packed)).toBe(0);
  for (const [name, version] of after) {
    const tarball = `${name.replace('@', '').replace('/', '-')}-${version}.tgz`;
    expect(readdirSync(packs)).toContain(tarball);
    const into = join(packs, name.replace('/', '__'));
    mkdirSync(into);
    const extracted = await run('tar', ['-xzf', join(packs, tarball), '-C', into, 'package/package.json']);
    expect(extracted.code, output(extracted)).toBe(0);
    const manifest = readJson<Manifest & { dependencies?: Record<string, string> }>(join(into, 'package/package.json'));
    expect(manifest.version).toBe(version);
    for (const [dependency, spec] of Object.entries(manifest.dependencies ?? {})) {
      expect(spec, `${name} -> ${dependency}`).not.toMatch(/^(workspace|link|file):/);
      if (after.has(dependency)) expect(spec, `${name} -> ${dependency}`).toBe(after.get(dependency));
    }
  }
});
