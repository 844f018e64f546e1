/**
 * The deployable server (docs/production.md): `pnpm --filter @mdp/server deploy --prod DIR` as a
 * user types it, the folder moved elsewhere, then run the ways the guide runs it — the binary, the
 * systemd unit's ExecStart, the container's ENTRYPOINT — and probed. And the binary alone
 * (`pnpm --filter @mdp/server run deploy-binary DIR`): the bundle, with no node_modules.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REPO, output, removeScratch, run, scratch, serverEnv, startServer, stopServers } from './helpers.js';

const DEPLOY_COMMAND = ['--filter', '@mdp/server', 'deploy', '--prod'];
/** The bounds the guide states for the folders' sizes (bytes of their files). */
const MAX_BYTES = 48 * 1024 * 1024;
const MAX_BINARY_BYTES = 15 * 1024 * 1024;

let deployed = '';

beforeAll(async () => {
  const made = join(scratch('deploy'), 'made');
  const deploy = await run('pnpm', [...DEPLOY_COMMAND, made]);
  expect(deploy.code, output(deploy)).toBe(0);
  // Somewhere else entirely: nothing may point back at the checkout or the first location.
  deployed = join(scratch('deploy-moved'), 'opt', 'mdp-server');
  mkdirSync(dirname(deployed), { recursive: true });
  renameSync(made, deployed);
}, 120_000);
afterEach(stopServers);
afterAll(removeScratch);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? [path, ...walk(path)] : [path];
  });
}

/** Bytes of the files under `dir`; every symbolic link in it must be relative. */
function bytesOf(dir: string): number {
  let bytes = 0;
  for (const path of walk(dir)) {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) expect(readlinkSync(path), path).not.toMatch(/^\//);
    else if (stat.isFile()) bytes += stat.size;
  }
  return bytes;
}

async function servesAndProbes(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const server = await startServer(command, args, { env, cwd: dirname(deployed) });
  const probe = await run(process.execPath, [join(REPO, 'apps/probe/dist/cli.js'), server.url]);
  expect(probe.code, output(probe)).toBe(0);
  expect(probe.stdout).toContain(new URL(server.url).host);
}

describe('pnpm --filter @mdp/server deploy --prod DIR', () => {
  it('serves with plain node from wherever the folder was moved, and a probe of it exits 0', async () => {
    await servesAndProbes(process.execPath, [join(deployed, 'bin/mdp-server.js'), '--host', '127.0.0.1', '--port', '0'], serverEnv(scratch('deploy-state')));
  });

  it('holds the server, its production dependencies and nothing else', () => {
    const manifest = readFileSync(join(deployed, 'package.json'), 'utf8');
    expect(manifest).not.toContain('workspace:');
    for (const file of ['bin/mdp-server.js', 'dist/cli.js', 'dist/index.js', 'README.md', 'LICENSE']) {
      expect(existsSync(join(deployed, file)), file).toBe(true);
    }
    const store = readdirSync(join(deployed, 'node_modules/.pnpm'));
    for (const unwanted of [/^typescript@/, /^@types\+/, /^vitest@/, /^vite@/, /^turbo@/, /^playwright-core@/, /^@changesets\+/]) {
      expect(store.filter((entry) => unwanted.test(entry))).toEqual([]);
    }
    expect(store).toEqual(expect.arrayContaining([expect.stringMatching(/^hono@/), expect.stringMatching(/^valibot@/), expect.stringMatching(/^ws@/)]));

    expect(bytesOf(deployed)).toBeLessThan(MAX_BYTES);
  });

  describe('the systemd unit (docs/deploy/mdp-server.service)', () => {
    const unit = readFileSync(join(REPO, 'docs/deploy/mdp-server.service'), 'utf8');
    const setting = (key: string): string => new RegExp(`^${key}=(.*)$`, 'm').exec(unit)?.[1] ?? '';

    it.skipIf(!existsSync('/usr/bin/systemd-analyze'))('passes systemd-analyze verify', async () => {
      const dir = scratch('unit');
      writeFileSync(join(dir, 'mdp-server.service'), unit.replaceAll('/opt/mdp-server', deployed));
      const verified = await run('/usr/bin/systemd-analyze', ['verify', join(dir, 'mdp-server.service')]);
      expect(verified.code, output(verified)).toBe(0);
    });

    it('runs its ExecStart against the deployed folder, with its environment', async () => {
      const [command, script, ...args] = setting('ExecStart').split(/\s+/);
      expect(command).toBe('node');
      expect(script).toBe('/opt/mdp-server/bin/mdp-server.js');
      expect(setting('Environment')).toBe('XDG_STATE_HOME=/var/lib');
      expect(setting('StateDirectory')).toBe('mdp-server');
      expect(setting('KillSignal')).toBe('SIGTERM');
      const local = args.map((arg) => (arg === '47372' ? '0' : arg));
      expect(local).toContain('127.0.0.1');
      await servesAndProbes(process.execPath, [script!.replace('/opt/mdp-server', deployed), ...local], serverEnv(scratch('unit-state')));
    });
  });

  describe('the container recipe (docs/deploy/Dockerfile; docker itself does not run here)', () => {
    const dockerfile = readFileSync(join(REPO, 'docs/deploy/Dockerfile'), 'utf8');

    it('builds /app with the tested deploy command from a frozen lockfile', async () => {
      const build = /^RUN (.*pnpm install.*)$/m.exec(dockerfile)?.[1] ?? '';
      expect(build).toContain(`pnpm ${DEPLOY_COMMAND.join(' ')} /app`);
      expect(build).toContain('pnpm install --frozen-lockfile');
      expect(dockerfile).toMatch(/^COPY --from=build \/app \/app$/m);
      const frozen = await run('pnpm', ['install', '--frozen-lockfile', '--lockfile-only', '--offline']);
      expect(frozen.code, output(frozen)).toBe(0);
      const ignored = readFileSync(join(REPO, 'docs/deploy/Dockerfile.dockerignore'), 'utf8');
      expect(ignored).toMatch(/^\*\*\/node_modules$/m);
    });

    it('runs its ENTRYPOINT against the deployed folder', async () => {
      const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1] ?? '[]') as string[];
      const [command, script, ...args] = entrypoint;
      expect(command).toBe('node');
      expect(script).toBe('/app/bin/mdp-server.js');
      expect(dockerfile).toMatch(/^ENV .*XDG_STATE_HOME=\/var\/lib/m);
      // The container listens on its own interface; here, loopback and any free port.
      const local = args.map((arg) => (arg === '0.0.0.0' ? '127.0.0.1' : arg === '47372' ? '0' : arg));
      await servesAndProbes(process.execPath, [script!.replace('/app', deployed), ...local], serverEnv(scratch('container-state')));
    });
  });
});

describe('pnpm --filter @mdp/server run deploy-binary DIR', () => {
  let binary = '';

  beforeAll(async () => {
    const made = join(scratch('binary'), 'made');
    const deploy = await run('pnpm', ['--filter', '@mdp/server', 'run', 'deploy-binary', made]);
    expect(deploy.code, output(deploy)).toBe(0);
    binary = join(scratch('binary-moved'), 'opt', 'mdp-server');
    mkdirSync(dirname(binary), { recursive: true });
    renameSync(made, binary);
  }, 120_000);

  it('holds the bundle and no node_modules, in under 15 MiB', () => {
    for (const file of [
      'bin/mdp-server.js',
      'dist/cli.js',
      'dist/cli.js.map',
      'dist/bundle/server.js',
      'dist/bundle/mcp-bridge.js',
      'package.json',
      'LICENSE',
    ]) {
      expect(existsSync(join(binary, file)), file).toBe(true);
    }
    expect(existsSync(join(binary, 'node_modules'))).toBe(false);
    const manifest = JSON.parse(readFileSync(join(binary, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.dependencies).toBeUndefined();
    expect(bytesOf(binary)).toBeLessThan(MAX_BINARY_BYTES);
  });

  it('serves with plain node from wherever the folder was moved, and a probe of it exits 0', async () => {
    await servesAndProbes(process.execPath, [join(binary, 'bin/mdp-server.js'), '--host', '127.0.0.1', '--port', '0'], serverEnv(scratch('binary-state')));
  });

  it('refuses a folder that is not empty', async () => {
    const refused = await run('pnpm', ['--filter', '@mdp/server', 'run', 'deploy-binary', binary]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('is not empty');
  });
});
