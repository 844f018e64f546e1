/**
 * `pnpm start` as a person or a service manager uses it: quiet until the server listens, stopped
 * by SIGTERM or SIGINT sent to the process it launched (or Ctrl-C to its terminal's process group),
 * and the server's exit status as its own, with the port free afterwards.
 */
import { createServer } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { removeScratch, scratch, serverEnv, startServer, stopServers, type Server } from './helpers.js';

afterEach(stopServers);
afterAll(removeScratch);

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** `pnpm start` in a process group of its own, so a test can play the terminal's Ctrl-C. */
function pnpmStart(separator: readonly string[] = []): Promise<Server> {
  return startServer('pnpm', ['start', ...separator, '--host', '127.0.0.1', '--port', '0'], {
    env: serverEnv(scratch('start-state')),
    detached: true,
  });
}

describe('pnpm start', () => {
  it.each([
    ['SIGTERM to the pid pnpm start launched', (pid: number) => process.kill(pid, 'SIGTERM')],
    ['SIGINT to the pid pnpm start launched', (pid: number) => process.kill(pid, 'SIGINT')],
    ['Ctrl-C (SIGINT to its process group)', (pid: number) => process.kill(-pid, 'SIGINT')],
  ])('stops the server on %s and exits 0 with the port free', async (_how, signal) => {
    const started = await pnpmStart();
    const port = Number(new URL(started.url).port);
    // Quiet: pnpm's own two-line banner, then the server; no build output.
    const before = started
      .stdout()
      .split('\n')
      .slice(
        0,
        started
          .stdout()
          .split('\n')
          .findIndex((l) => l.includes('listening on')),
      );
    expect(before.filter((line) => line.trim() !== '' && !line.startsWith('> '))).toEqual([]);
    expect(await portIsFree(port)).toBe(false);

    signal(started.child.pid!);
    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(started.stderr()).not.toMatch(/ELIFECYCLE|Command failed/);
    expect(started.stderr()).toMatch(/"event":"server\.closed"/);
    expect(await portIsFree(port)).toBe(true);
  });

  it('takes the options after an npm-style `--` as its own', async () => {
    const started = await pnpmStart(['--']);
    expect(Number(new URL(started.url).port)).toBeGreaterThan(0);
    process.kill(started.child.pid!, 'SIGTERM');
    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(started.stderr()).not.toMatch(/unexpected argument/);
  });
});
