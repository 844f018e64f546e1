/**
 * The bridge under tenancy by principal (`perViewer`), on a real router's host: each viewer's
 * sessions get the catalog of the clients that viewer sees, hear list_changed for those alone, and
 * reach no other client, by tool, resource or generic call.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Router, createLocalHost, createTenancy, type Viewer } from '@mdp/core';
import type { PathDescriptor } from '@mdp/protocol';
import { endpoint, manualClock, skill } from '@mdp/test-kit';
import { createMcpBridge, type McpBridge } from '../src/bridge.js';
import { REFRESH_MIN_INTERVAL_MS } from '../src/catalog-driver.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

function register(router: Router, id: string, principal: string, paths: PathDescriptor[]): void {
  const session = router.openSession({ kind: 'fake', send: () => undefined, close: () => undefined }, undefined, principal);
  session.handle({ type: 'registerClient', client: { id, name: id, paths } });
}

async function agent(bridge: McpBridge, viewer: Viewer): Promise<{ client: Client; changes: string[] }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await bridge.connect(serverSide, { viewer });
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  const changes: string[] = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.push('tools'));
  return { client, changes };
}

describe('perViewer', () => {
  it('gives each principal its own catalog, list_changed and reach', async () => {
    const router = new Router({ invocationTimeoutMs: 1000 });
    open.push(router);
    const clock = manualClock(0);
    const host = createLocalHost(router, { tenancy: createTenancy({ mode: 'principal', sharedClients: ['lobby'] }) });
    register(router, 'alice-ide', 'token:a', [endpoint('/editor/open', 'POST'), skill('/docs/skill.md')]);
    register(router, 'bob-ide', 'token:b', [endpoint('/terminal/run', 'POST'), skill('/notes/skill.md')]);
    register(router, 'lobby', 'token:b', [endpoint('/lobby/post', 'POST')]);
    const bridge = createMcpBridge({ host, clock, perViewer: true });
    open.push(bridge);
    const a = await agent(bridge, { principal: 'token:a' });
    const b = await agent(bridge, { principal: 'token:b' });
    const toolNames = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);
    expect(await toolNames(a.client)).toEqual(['listClients', 'listPaths', 'callPath', 'callPaths', 'editor_open', 'lobby_post']);
    expect(await toolNames(b.client)).toEqual(['listClients', 'listPaths', 'callPath', 'callPaths', 'terminal_run', 'lobby_post']);
    expect((await a.client.listResources()).resources.map((r) => r.uri)).not.toContain('mdp://bob-ide/notes/skill.md');
    expect((await b.client.listResources()).resources.map((r) => r.uri)).toContain('mdp://bob-ide/notes/skill.md');

    // Generic tools: another's client is unknown, and listings leave it out.
    const listing = await a.client.callTool({ name: 'listClients', arguments: {} });
    expect((listing.structuredContent as { clients: { id: string }[] }).clients.map((c) => c.id)).toEqual(['alice-ide', 'lobby']);
    const call = await a.client.callTool({ name: 'callPath', arguments: { clientId: 'bob-ide', method: 'POST', path: '/terminal/run' } });
    expect(call.isError).toBe(true);
    expect(call.structuredContent).toMatchObject({ error: { code: 'not_found', message: 'No client "bob-ide" is connected' } });
    await expect(a.client.readResource({ uri: 'mdp://bob-ide/notes/skill.md' })).rejects.toThrow(/not_found|No client/);

    // A change to Bob's clients is Bob's news only (once the first catalogs' news is out).
    await clock.advanceSettled(1000);
    a.changes.length = 0;
    b.changes.length = 0;
    register(router, 'bob-cli', 'token:b', [endpoint('/cli/run', 'POST')]);
    await clock.advanceSettled(REFRESH_MIN_INTERVAL_MS);
    await clock.advanceSettled(1000);
    expect(b.changes).toContain('tools');
    expect(a.changes).toEqual([]);
    expect(await toolNames(a.client)).not.toContain('cli_run');
    expect(bridge.sessions).toBe(2);
  });

  it('without perViewer, one catalog as the host shows it to itself', async () => {
    const router = new Router({ invocationTimeoutMs: 1000 });
    open.push(router);
    const host = createLocalHost(router, { tenancy: createTenancy({ mode: 'principal' }) });
    register(router, 'alice-ide', 'token:a', [endpoint('/editor/open', 'POST')]);
    register(router, 'bob-ide', 'token:b', [endpoint('/terminal/run', 'POST')]);
    const bridge = createMcpBridge({ host, clock: manualClock(0) });
    open.push(bridge);
    const a = await agent(bridge, { principal: 'token:a' });
    expect((await a.client.listTools()).tools.map((t) => t.name)).toEqual(['listClients', 'listPaths', 'callPath', 'callPaths', 'editor_open', 'terminal_run']);
  });
});
