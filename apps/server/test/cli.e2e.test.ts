/** The real `mdp-server` binary, spawned as a child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseMetaDocument } from '@mdp/protocol';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const children: ChildProcess[] = [];
const servers: Server[] = [];
// The servers' cluster state (auto mode keeps term and vote) goes here, not to the user's state dir.
const stateHome = mkdtempSync(join(tmpdir(), 'mdp-cli-state-'));
afterAll(() => rmSync(stateHome, { recursive: true, force: true }));

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function run(args: string[]): Run {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, XDG_STATE_HOME: stateHome } });
  children.push(child);
  const result: Run = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (result.stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (result.stderr += d));
  return result;
}

/** Resolves with the URL once the server prints that it listens. */
function listening(r: Run): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const match = /listening on (http:\/\/\S+)/.exec(r.stdout);
      if (match) resolve(match[1]!);
    };
    r.child.stdout!.on('data', check);
    r.child.once('exit', () => reject(new Error(`exited early: ${r.stderr}`)));
    check();
  });
}

describe('mdp-server CLI', () => {
  it('--help lists every flag and exits 0', async () => {
    const r = run(['--help']);
    expect((await r.exited).code).toBe(0);
    for (const flag of ['--host', '--port', '--server-id', '--invocation-timeout-ms', '--heartbeat-interval-ms', '--heartbeat-timeout-ms', '--max-message-bytes', '--long-poll-timeout-ms', '--log-level', '--help']) {
      expect(r.stdout).toContain(flag);
    }
  });

  it.each([
    [['--port', 'abc'], /--port must be a whole number/],
    [['--port', '70000'], /--port must be a whole number/],
    [['--invocation-timeout-ms', '-5'], /invocation-timeout-ms/],
    [['--log-level', 'loud'], /--log-level must be one of/],
    [['--bogus'], /Unknown option '--bogus'/],
    [['stray'], /positional/i],
  ])('refuses %j with one clear line and exit 1', async (args, message) => {
    const r = run(args);
    expect((await r.exited).code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 1 with one line when the port is taken', async () => {
    const blocker = createServer();
    servers.push(blocker);
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const r = run(['--port', String(port), '--log-level', 'silent']);
    expect((await r.exited).code).toBe(1);
    expect(r.stderr.trim()).toBe(`mdp-server: port already in use: 127.0.0.1:${port}`);
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('serves /mdp/meta and stops gracefully on %s with exit 0', async (signal) => {
    const r = run(['--port', '0', '--cluster-mode', 'standalone', '--server-id', 'cli-test', '--log-level', 'silent']);
    const url = await listening(r);
    const meta = parseMetaDocument(await (await fetch(`${url}/mdp/meta`)).json());
    expect(meta.ok && meta.value.serverId).toBe('cli-test');
    r.child.kill(signal);
    expect(await r.exited).toEqual({ code: 0, signal: null });
    await expect(fetch(`${url}/mdp/meta`)).rejects.toThrow();
  });

  it('logs structured JSON lines at debug level', async () => {
    const r = run(['--port', '0', '--cluster-mode', 'standalone', '--log-level', 'debug']);
    await listening(r);
    r.child.kill('SIGTERM');
    await r.exited;
    const lines = r.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.map((l) => (JSON.parse(l) as { event: string }).event)).toContain('server.listening');
  });
  it('keeps serving when whoever read its stdout and stderr went away', async () => {
    // A short election, so the leadership line is written to stdout after the pipe is gone;
    // debug logs write to stderr for every request below.
    const r = run(['--port', '0', '--log-level', 'debug', '--discover-attempts', '0', '--election-timeout-min-ms', '300', '--election-timeout-max-ms', '400']);
    const url = await listening(r);
    r.child.stdout!.destroy();
    r.child.stderr!.destroy();
    let role = '';
    for (let i = 0; i < 100 && role !== 'leader'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const meta = parseMetaDocument(await (await fetch(`${url}/mdp/meta`)).json());
      role = meta.ok ? meta.value.cluster.role : '';
    }
    expect(role).toBe('leader');
    for (let i = 0; i < 5; i++) expect((await fetch(`${url}/skills/nobody/x`)).status).toBe(404);
    // Past the write that failed: a crash would have ended the process by now.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(r.child.exitCode).toBeNull();
    expect((await fetch(`${url}/mdp/meta`)).status).toBe(200);
    r.child.kill('SIGTERM');
    expect(await r.exited).toEqual({ code: 0, signal: null });
  });
});
