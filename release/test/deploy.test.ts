/**
 * The deployable server (docs/production.md): `pnpm --filter @mdp/server deploy --prod DIR` as a
 * user types it, the folder moved elsewhere, then run the ways the guide runs it — the binary, the
 * systemd unit's ExecStart, the container's ENTRYPOINT — and probed.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REPO, output, removeScratch, run, scratch, serverEnv, startServer, stopServers } from './helpers.js';

const DEPLOY_COMMAND = ['--filter', '@mdp/server', 'deploy', '--prod'];
/** The bound the guide states for the folder's size (bytes of its files). */
const MAX_BYTES = 32 * 1024 * 1024;

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

    let bytes = 0;
    for (const path of walk(deployed)) {
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) expect(readlinkSync(path), path).not.toMatch(/^\//);
      else if (stat.isFile()) bytes += stat.size;
    }
    expect(bytes).toBeLessThan(MAX_BYTES);
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
