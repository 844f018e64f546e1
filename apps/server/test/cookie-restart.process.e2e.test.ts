/**
 * The mdp_auth cookie across real `mdp-server` processes (SPEC §7 *beyond*): its keys live in the
 * state directory, so a cookie outlives a restart, works on every member that shares the directory,
 * and keeps working through a rotation made with `mdp-server rotate-cookie-key` while they run;
 * servers of another state directory refuse it.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, expect, it } from 'vitest';
import { freePorts, removeScratch, scratchDir } from '@mdp/test-kit';
import { FAST_CLUSTER, agreedLeader, killAll, logged, printed, spawnServer, terminate, type Proc } from './processes.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const TOKEN = 'process-token';
/** How long a process may take to start (and say so) on a loaded machine, ms. */
const STARTUP_MS = 30_000;

afterEach(() => killAll());
afterAll(() => removeScratch());

/** A cookie minted by the server on `port` for the token. */
async function mint(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/mdp/auth`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(204);
  const value = /mdp_auth=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1];
  if (!value) throw new Error('no cookie');
  return value;
}

/** The status of an HTTP loop connect on `port` that carries only the cookie. */
async function connectWith(port: number, cookie: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/mdp/http-loop/connect`, { method: 'POST', headers: { cookie: `mdp_auth=${cookie}` } });
  await res.body?.cancel();
  return res.status;
}

/** `mdp-server rotate-cookie-key …`, run to its end. */
function rotate(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, 'rotate-cookie-key', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const keyId = (cookie: string): string => cookie.split('.')[0] ?? '';

it('a cookie outlives a restart, works on every member of the state directory and through a rotation, and nowhere else', { timeout: 150_000 }, async () => {
  const [start, portA, portB, portC] = (await freePorts(4)) as [number, number, number, number];
  const state = scratchDir('mdp-cookie-state-');
  const clusterId = `cookie-${start}`;
  const member = (port: number): Proc =>
    spawnServer({ port, rangeStart: start, rangeSize: 3, stateDir: state, clusterId, extra: [...FAST_CLUSTER, '--auth-token', TOKEN] });

  const a = member(portA);
  const b = member(portB);
  await agreedLeader([a, b], STARTUP_MS);
  const cookie = await mint(portA);
  expect(await connectWith(portA, cookie)).toBe(200);
  // Another member of the cluster (same state directory) takes it.
  expect(await connectWith(portB, cookie)).toBe(200);

  // A restart of the server that issued it.
  expect(await terminate(a)).toEqual({ code: 0, signal: null });
  const again = member(portA);
  await printed(again, /listening on/, STARTUP_MS);
  expect(await connectWith(portA, cookie)).toBe(200);

  // A server of another state directory, with the same token, refuses it.
  const stranger = spawnServer({
    port: portC,
    rangeStart: portC,
    rangeSize: 1,
    stateDir: scratchDir('mdp-cookie-other-'),
    clusterId: `other-${portC}`,
    extra: ['--auth-token', TOKEN, '--cluster-mode', 'standalone'],
  });
  await printed(stranger, /listening on/, STARTUP_MS);
  expect(await connectWith(portC, cookie)).toBe(401);
  expect(await connectWith(portC, await mint(portC))).toBe(200);

  // A forged or tampered cookie is still refused.
  const tampered = `${cookie.slice(0, -2)}${cookie.endsWith('AA') ? 'BB' : 'AA'}`;
  for (const bad of [tampered, `${keyId(cookie)}.${'A'.repeat(80)}`, 'garbage']) expect(await connectWith(portB, bad)).toBe(401);

  // Rotation while both members run: new cookies get the new key on each, and every cookie
  // issued before or after is taken by both, with no restart.
  const rotated = await rotate(['--cluster-state-dir', state]);
  expect(rotated).toMatchObject({ code: 0, stderr: '' });
  expect(rotated.stdout).toMatch(
    /^mdp-server: rotated the mdp_auth cookie key in .*cookie-keys: new cookies are sealed with the new key; cookies sealed before stay valid until \S+ at the latest \(1 retired key kept\)\n$/,
  );
  const fromB = await mint(portB);
  expect(keyId(fromB)).not.toBe(keyId(cookie));
  await logged(b, 'auth.cookie_keys_loaded', { sealing: keyId(fromB) }, STARTUP_MS);
  expect(await connectWith(portA, fromB)).toBe(200);
  expect(keyId(await mint(portA))).toBe(keyId(fromB));
  for (const port of [portA, portB]) expect(await connectWith(port, cookie)).toBe(200);

  for (const proc of [again, b, stranger]) expect(await terminate(proc)).toEqual({ code: 0, signal: null });
});
