/**
 * The MCP SDK is loaded when an agent first comes, not at start: its schemas are a heap every major
 * GC walks, which cost a server no agent talks to a third more CPU per host call (bench
 * `host-call`). A load hook in the real binary records every module of the SDK it loads: a file of
 * the SDK itself, or a file of the bundled binary (`dist/cli.js` and its chunks) that holds one, as
 * esbuild names each bundled module in a comment with its path.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { TestClient, descriptor, freePorts, skill, stopAll } from '@mdp/test-kit';
import { killAll, printed, spawnServer, terminate } from './processes.js';

let dir: string | undefined;
afterEach(async () => {
  killAll();
  await stopAll();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** An `--import` module that registers a load hook appending every SDK module loaded (path per line) to `log`. */
function recorderSource(log: string): string {
  const hooks = `
import { appendFileSync } from 'node:fs';
const SDK = /[^\\s'"]*\\/@modelcontextprotocol\\/sdk\\/[^\\s'"]+/g;
export async function load(url, context, next) {
  const loaded = await next(url, context);
  const found = url.includes('/@modelcontextprotocol/sdk/') ? [url] : String(loaded.source ?? '').match(SDK) ?? [];
  if (found.length > 0) appendFileSync(${JSON.stringify(log)}, found.join('\\n') + '\\n');
  return loaded;
}`;
  return `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));\n`;
}

const sdkModules = async (log: string): Promise<string[]> => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);

it('a server loads no MCP module until the first /mcp request, then answers it', async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdp-mcp-lazy-'));
  const log = join(dir, 'sdk-modules.txt');
  const recorder = join(dir, 'recorder.mjs');
  await writeFile(recorder, recorderSource(log));
  const [port, rangeStart] = await freePorts(2);
  const proc = spawnServer({
    port: port!,
    rangeStart: rangeStart!,
    rangeSize: 1,
    stateDir: join(dir, 'state'),
    clusterId: 'lazy',
    extra: ['--cluster-mode', 'standalone'],
    nodeArgs: ['--import', pathToFileURL(recorder).href],
  });
  await printed(proc, /listening on/);
  const base = `http://127.0.0.1:${port}`;

  // A client, a skill read and a host call: all served without the SDK.
  const client = await TestClient.register(`ws://127.0.0.1:${port}`, descriptor('app', [skill('/s/skill.md')]));
  expect(await (await fetch(`${base}/skills/app/s/skill.md`)).text()).toBe('ok');
  const call = await fetch(`${base}/mdp/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 'app', method: 'GET', path: '/s/skill.md' }),
  });
  expect(await call.json()).toEqual({ ok: true, data: 'ok' });
  expect(await sdkModules(log)).toEqual([]);

  // The first agent: the bridge and the SDK load, and the initialize is answered.
  const init = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  expect(init.status).toBe(200);
  expect(init.headers.get('mcp-session-id')).toBeTruthy();
  expect(((await init.json()) as { result: { serverInfo: { name: string } } }).result.serverInfo.name).toBe('mdp-server');
  expect((await sdkModules(log)).some((url) => url.includes('/server/'))).toBe(true);

  client.socket.close();
  expect((await terminate(proc)).code).toBe(0);
});
