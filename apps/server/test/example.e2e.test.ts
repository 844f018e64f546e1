/** The README walk-through: the example client registers a skill that curl-like reads get. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { clientChange, startServer, stopAll } from './harness.js';

const EXAMPLE = fileURLToPath(new URL('../examples/hello-client.mjs', import.meta.url));

afterEach(stopAll);

it('the README example client serves its skill through both routes', async () => {
  const t = await startServer();
  const listed = clientChange(t.server, 'hello', true);
  const child = spawn(process.execPath, [EXAMPLE, t.ws], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await listed;
    const direct = await fetch(`${t.http}/skills/hello/greeting?name=reader`);
    expect(direct.status).toBe(200);
    expect(direct.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(await direct.text()).toBe('# Hello, reader!\n');
    expect(await (await fetch(`${t.http}/hello/skills/greeting`)).text()).toBe('# Hello, world!\n');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
