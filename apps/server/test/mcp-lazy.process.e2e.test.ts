/**
 * The MCP SDK is loaded when an agent first comes, not at start: its schemas are a heap every major
 * GC walks, which cost a server no agent talks to a third more CPU per host call (bench
 * `host-call`). The real binary's load hook records every module of the SDK it loads
 * (load-recorder.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { TestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import { serverRecordingLoads } from './load-recorder.js';
import { killAll, terminate } from './processes.js';

let dir: string | undefined;
afterEach(async () => {
  killAll();
  await stopAll();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

it('a server loads no MCP module until the first /mcp request, then answers it', async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdp-mcp-lazy-'));
  const { proc, port, base, loaded: sdkModules } = await serverRecordingLoads(dir, '@modelcontextprotocol/sdk', 'lazy');

  // A client, a skill read and a host call: all served without the SDK.
  const client = await TestClient.register(`ws://127.0.0.1:${port}`, descriptor('app', [skill('/s/skill.md')]));
  expect(await (await fetch(`${base}/skills/app/s/skill.md`)).text()).toBe('ok');
  const call = await fetch(`${base}/mdp/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 'app', method: 'GET', path: '/s/skill.md' }),
  });
  expect(await call.json()).toEqual({ ok: true, data: 'ok' });
  expect(await sdkModules()).toEqual([]);

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
  expect((await sdkModules()).some((url) => url.includes('/server/'))).toBe(true);

  client.socket.close();
  expect((await terminate(proc)).code).toBe(0);
});
