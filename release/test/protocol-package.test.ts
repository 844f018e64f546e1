/**
 * @mdp/protocol as a client project gets it: packed like a publish, installed with npm into a fresh
 * project outside this workspace, compiled by strict TypeScript as ESM and as CommonJS, and run
 * against a real mdp-server.
 */
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { REPO, output, readJson, removeScratch, run, scratch, serverEnv, startServer, stopServers } from './helpers.js';

afterEach(stopServers);
afterAll(removeScratch);

it('installs from its tarball, compiles strictly as ESM and CommonJS, and talks to a server', async () => {
  const packs = scratch('protocol-pack');
  const packed = await run('pnpm', ['pack', '--pack-destination', packs], { cwd: join(REPO, 'packages/protocol') });
  expect(packed.code, output(packed)).toBe(0);
  const tarball = join(packs, readdirSync(packs).find((f) => f.endsWith('.tgz'))!);

  const project = scratch('protocol-client');
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'protocol-client', private: true }, null, 2)}\n`);
  // The registry serves valibot (the package's one dependency); npm's cache stays in the scratch dir.
  const installed = await run('npm', ['install', tarball, '--no-audit', '--no-fund', '--cache', join(project, '.npm-cache')], { cwd: project });
  expect(installed.code, output(installed)).toBe(0);
  const manifest = readJson<{ dependencies: Record<string, string> }>(join(project, 'node_modules/@mdp/protocol/package.json'));
  expect(Object.keys(manifest.dependencies)).toEqual(['valibot']);

  const source = join(REPO, 'release/fixtures/protocol-client/client.ts');
  copyFileSync(source, join(project, 'client.mts'));
  copyFileSync(source, join(project, 'client.cts'));
  const tsconfig = {
    compilerOptions: {
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      module: 'nodenext',
      target: 'es2022',
      lib: ['es2023'],
      // Node's types come from this workspace (a client project would install @types/node).
      typeRoots: [join(REPO, 'node_modules/@types')],
      types: ['node'],
      outDir: 'out',
    },
    files: ['client.mts', 'client.cts'],
  };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  const compiled = await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project });
  expect(compiled.code, output(compiled)).toBe(0);

  const server = await startServer(
    process.execPath,
    [join(REPO, 'apps/server/dist/cli.js'), '--host', '127.0.0.1', '--port', '0', '--cluster-mode', 'standalone'],
    {
      env: serverEnv(scratch('protocol-state')),
    },
  );
  for (const [file, clientId] of [
    ['out/client.mjs', 'esm-client'],
    ['out/client.cjs', 'cjs-client'],
  ] as const) {
    const ran = await run(process.execPath, [join(project, file), server.url, clientId], { cwd: project });
    expect(ran.code, output(ran)).toBe(0);
    expect(ran.stdout).toMatch(/^protocol \d+\.\d+\.\d+, server 127\.0\.0\.1:\d+ speaks \d+\.\d+\.\d+; skill read 200: # Hello, package!$/m);
  }
});
