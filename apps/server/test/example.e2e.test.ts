/** The README walk-through: the example client registers a skill that curl-like reads get. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { stopAll } from '@mdp/test-kit';
import { startServer, type TestServer } from './harness.js';

const EXAMPLE = fileURLToPath(new URL('../examples/hello-client.mjs', import.meta.url));

afterEach(stopAll);

/**
 * Run the example against `t`; resolves once it prints that it registered (checking the server
 * lists the client by then) with the read command it printed and a way to stop it.
 */
async function example(t: TestServer, args: string[] = []): Promise<{ command: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [EXAMPLE, t.ws, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM');
    await exited;
  };
  let out = '';
  const command = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', function onData(d: string) {
      out += d;
      const match = /registered client "hello"; read its skill with:\n {2}(curl .*)\n/.exec(out);
      if (!match) return;
      child.stdout!.off('data', onData);
      // Printed only after the server's answer: the registration is in place by then.
      expect(t.server.router.getClient('hello')).toBeDefined();
      resolve(match[1]!);
    });
    child.once('exit', () => reject(new Error(`example exited: ${out}`)));
  });
  return { command, stop };
}

/** Run a printed `curl [-H 'h: v'] 'url'` line with fetch. */
async function curl(command: string): Promise<Response> {
  const match = /^curl(?: -H '([^']*)')? '([^']*)'$/.exec(command);
  if (!match) throw new Error(`not a read command: ${command}`);
  const [name, value] = match[1]?.split(': ') ?? [];
  return fetch(match[2]!, { headers: name && value ? { [name]: value } : {} });
}

it('the README example client serves its skill through both routes', async () => {
  const t = await startServer();
  const { command, stop } = await example(t);
  try {
    expect(command).toBe(`curl '${t.http}/skills/hello/greeting?name=you'`);
    const direct = await curl(command);
    expect(direct.status).toBe(200);
    expect(direct.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(await direct.text()).toBe('# Hello, you!\n');
    expect(await (await fetch(`${t.http}/hello/skills/greeting`)).text()).toBe('# Hello, world!\n');
    // A trailing slash is tolerated, as the reference server does.
    expect(await (await fetch(`${t.http}/skills/hello/greeting/`)).text()).toBe('# Hello, world!\n');
  } finally {
    await stop();
  }
});

it('takes --token for a server that requires one, and prints a read command that carries it', async () => {
  const t = await startServer({ authTokens: ['tok'] });
  const { command, stop } = await example(t, ['--token', 'tok']);
  try {
    expect(command).toBe(`curl -H 'Authorization: Bearer tok' '${t.http}/skills/hello/greeting?name=you'`);
    const read = await curl(command);
    expect(read.status).toBe(200);
    expect(await read.text()).toBe('# Hello, you!\n');
  } finally {
    await stop();
  }
});

it('exits non-zero without printing "registered" when the server refuses it', async () => {
  const t = await startServer({ authTokens: ['tok'] });
  const child = spawn(process.execPath, [EXAMPLE, t.ws], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect(code).toBe(1);
  expect(out).not.toContain('registered');
  expect(out).toContain('closed: 4401');
});
