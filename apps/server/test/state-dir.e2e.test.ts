/** Where the real `mdp-server` keeps its cluster state by default: a per-user directory, 0700. */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

it.each([
  ['XDG_STATE_HOME', (home: string) => ({ XDG_STATE_HOME: join(home, 'xdg') }), (home: string) => join(home, 'xdg', 'mdp-server')],
  ['HOME without XDG_STATE_HOME', (home: string) => ({ HOME: home, XDG_STATE_HOME: '' }), (home: string) => join(home, '.local', 'state', 'mdp-server')],
])('keeps term and vote under %s, created for the owner only', async (_name, envOf, expected) => {
  const home = mkdtempSync(join(tmpdir(), 'mdp-state-home-'));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  const fast = [
    '--discover-attempts',
    '0',
    '--cluster-heartbeat-interval-ms',
    '100',
    '--lease-duration-ms',
    '800',
    '--election-timeout-min-ms',
    '200',
    '--election-timeout-max-ms',
    '400',
  ];
  const child = spawn(process.execPath, [CLI, '--host', '127.0.0.1', '--port', '0', '--cluster-id', 'state-test', ...fast], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...envOf(home) },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  cleanups.push(() => child.kill('SIGKILL'));
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  // A node that wins an election has written its term and vote before it says it leads.
  await expect.poll(() => stdout, { timeout: 10_000 }).toMatch(/this node is the leader/);
  const dir = expected(home);
  expect(statSync(dir).mode & 0o777).toBe(0o700);
  expect(readdirSync(join(dir, 'state-test'))).toEqual([expect.stringMatching(/^127\.0\.0\.1_\d+\.json$/)]);
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(existsSync(join(tmpdir(), 'mdp-server-cluster', 'state-test'))).toBe(false);
});

// Node's recursive mkdir tried forever under /proc (ENOENT for a directory whose parent exists): the
// server hung at full CPU before it listened.
it.skipIf(!existsSync('/proc/self'))('exits with a clear error for a state directory that cannot be made', async () => {
  const child = spawn(process.execPath, [CLI, '--host', '127.0.0.1', '--port', '0', '--cluster-state-dir', '/proc/nope/state'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(1);
  expect(stderr).toMatch(/cannot create \/proc\/nope\/state: ENOENT/);
});
