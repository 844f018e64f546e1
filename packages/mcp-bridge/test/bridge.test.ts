/** The bridge driven by the SDK's own Client over an in-memory transport, on a fake host and clock. */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { PassThrough } from 'node:stream';
import { createMcpBridge, type McpBridge, type McpBridgeOptions } from '../src/bridge.js';
import { SERVER_GUIDE_URI } from '../src/resource-uri.js';
import { connectStdio } from '../src/stdio.js';
import { CALL_MANY_BUDGET_BYTES } from '../src/generic-tools.js';
import { REFRESH_MIN_INTERVAL_MS } from '../src/catalog-driver.js';
import { endpoint, manualClock, prompt, settle, skill, type ManualClock } from '@mdp/test-kit';
import { FakeHost, listed } from './fakes.js';
import { obj } from './fixtures.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

interface Setup {
  host: FakeHost;
  clock: ManualClock;
  bridge: McpBridge;
  client: Client;
  changes: string[];
}

async function setup(options: Partial<McpBridgeOptions> = {}, host = new FakeHost()): Promise<Setup> {
  const clock = manualClock(0);
  const bridge = createMcpBridge({ host, clock, ...options });
  open.push(bridge);
  const client = await connectClient(bridge);
  const changes: string[] = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.push('tools'));
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => void changes.push('prompts'));
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void changes.push('resources'));
  return { host, clock, bridge, client, changes };
}

async function connectClient(bridge: McpBridge): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await bridge.connect(serverSide);
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  return client;
}

/** Change the host's clients and let the bridge list them (a refresh waits at most REFRESH_MIN_INTERVAL_MS). */
async function change(s: Setup, clients: ReturnType<typeof listed>[]): Promise<void> {
  s.host.set(clients);
  await s.clock.advanceSettled(REFRESH_MIN_INTERVAL_MS);
}

const todo = listed('todo', [
  endpoint('/page/click', 'POST', { description: 'Click an element', inputSchema: obj({ selector: { type: 'string' } }) }),
  endpoint('/todos/:id', 'GET'),
  prompt('/review/prompt.md', { inputSchema: obj({ tone: { type: 'string' } }) }),
  skill('/docs/skill.md'),
  skill('/topics/:topic/skill.md', { contentType: 'text/plain' }),
]);

describe('generic tools', () => {
  it('lists the four generic tools first, then the catalog', async () => {
    const s = await setup();
    const { client } = s;
    await change(s, [todo]);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['listClients', 'listPaths', 'callPath', 'callPaths', 'page_click', 'todos']);
  });

  it('listClients and listPaths answer with structuredContent and the same JSON as text', async () => {
    const s = await setup();
    const { client } = s;
    await change(s, [todo]);
    const result = await client.callTool({ name: 'listClients', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ clients: [todo] });
    expect(JSON.parse((result.content as Array<{ text: string }>)[0]!.text)).toEqual(result.structuredContent);
    const paths = await client.callTool({ name: 'listPaths', arguments: { clientId: 'todo' } });
    expect((paths.structuredContent as { paths: unknown[] }).paths).toHaveLength(5);
  });

  it('callPath passes the request to the host and answers {ok, data}', async () => {
    const { host, client } = await setup();
    host.answer = () => ({ ok: true, data: { clicked: true } });
    const result = await client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'POST', path: '/page/click', body: { selector: '#go' } } });
    expect(result.structuredContent).toEqual({ ok: true, data: { clicked: true } });
    expect(host.calls[0]!.request).toEqual({ clientId: 'todo', method: 'POST', path: '/page/click', body: { selector: '#go' } });
    expect(host.calls[0]!.options.signal).toBeInstanceOf(AbortSignal);
  });

  it('a failed call is an isError result with the error, never a protocol error', async () => {
    const { host, client } = await setup();
    host.answer = () => ({ ok: false, error: { code: 'timeout', message: 'Client did not answer within 15000 ms' }, source: 'server' });
    const result = await client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'GET', path: '/x' } });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({ ok: false, error: { code: 'timeout', message: 'Client did not answer within 15000 ms' }, source: 'server' });
  });

  it('host refusals (unknown client, nobody has the path) are isError results too', async () => {
    const { client } = await setup();
    const paths = await client.callTool({ name: 'listPaths', arguments: { clientId: 'ghost' } });
    expect(paths).toMatchObject({ isError: true, structuredContent: { ok: false, error: { code: 'not_found', message: 'No client "ghost" is connected' } } });
    const many = await client.callTool({ name: 'callPaths', arguments: { method: 'GET', path: '/none' } });
    expect(many).toMatchObject({ isError: true, structuredContent: { ok: false, error: { code: 'not_found' } } });
  });

  it('callPaths answers per client; isError only when none succeeded', async () => {
    const { host, client } = await setup();
    host.set([listed('a', [endpoint('/v', 'GET')]), listed('b', [endpoint('/v', 'GET')])]);
    host.answer = (r) => (r.clientId === 'a' ? { ok: true, data: 1 } : { ok: false, error: { code: 'handler_error', message: 'boom' }, source: 'client' });
    const result = await client.callTool({ name: 'callPaths', arguments: { method: 'GET', path: '/v' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({
      results: [
        { clientId: 'a', ok: true, data: 1 },
        { clientId: 'b', ok: false, error: { code: 'handler_error', message: 'boom' }, source: 'client' },
      ],
    });
  });

  it('callPaths gives the host its fan-out bound: the budget over one copy of the payload', async () => {
    const { host, client } = await setup();
    host.set([listed('a', [endpoint('/v', 'POST')])]);
    await client.callTool({ name: 'callPaths', arguments: { method: 'POST', path: '/v', body: 'x'.repeat(100_000) } });
    const copy = Buffer.byteLength(JSON.stringify([undefined, 'x'.repeat(100_000), undefined, undefined]));
    expect(host.calls[0]?.options.maxTargets).toBe(Math.floor(CALL_MANY_BUDGET_BYTES / copy));
  });

  it.each([
    ['callPath', { method: 'GET', path: '/x' }, 'Invalid arguments for callPath: clientId: '],
    ['callPath', { clientId: 'c', method: 'FETCH', path: '/x' }, 'method must be one of GET, POST, PUT, PATCH, DELETE'],
    ['callPath', { clientId: 'c', method: 'GET', path: 'x' }, 'path: path '],
    ['listPaths', { depth: 0 }, 'depth: must be at least 1'],
    ['callPaths', { clientIds: [], method: 'GET', path: '/x' }, 'clientIds: must name at least one client'],
    ['callPaths', { clientIds: ['a', 'a'], method: 'GET', path: '/x' }, 'clientIds: must not name a client twice'],
  ])('%s with bad arguments %j is a bad_request result naming the field', async (name, args, message) => {
    const { client, host } = await setup();
    const result = await client.callTool({ name, arguments: args });
    expect(result.isError).toBe(true);
    expect((result.structuredContent as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'bad_request',
      message: expect.stringContaining(message),
    });
    expect(host.calls).toHaveLength(0);
  });

  it('an unknown tool is an isError result that says what to do', async () => {
    const { client } = await setup();
    const result = await client.callTool({ name: 'nope', arguments: {} });
    expect(result.isError).toBe(true);
    expect((result.structuredContent as { error: { message: string } }).error.message).toContain('list the tools again, or reach any path with callPath');
  });
});

describe('catalog tools, prompts and resources', () => {
  it('an endpoint tool builds the call from its arguments', async () => {
    const s = await setup();
    const { host, client } = s;
    await change(s, [todo]);
    host.answer = () => ({ ok: true, data: 'clicked' });
    const result = await client.callTool({ name: 'page_click', arguments: { selector: '#go' } });
    expect(result.structuredContent).toEqual({ ok: true, data: 'clicked' });
    expect(host.calls[0]!.request).toEqual({ clientId: 'todo', method: 'POST', path: '/page/click', body: { selector: '#go' } });
    await client.callTool({ name: 'todos', arguments: { id: '42' } });
    expect(host.calls[1]!.request).toEqual({ clientId: 'todo', method: 'GET', path: '/todos/42' });
  });

  it('bad arguments of an endpoint tool are a bad_request result', async () => {
    const s = await setup();
    const { client } = s;
    await change(s, [todo]);
    const result = await client.callTool({ name: 'todos', arguments: { id: 'Not Valid' } });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'bad_request', message: expect.stringContaining('Invalid arguments for todos: Argument "id"') } },
    });
  });

  it('prompts/get is a GET with the arguments as query; a string is one user message', async () => {
    const s = await setup();
    const { host, client } = s;
    await change(s, [todo]);
    host.answer = () => ({ ok: true, data: 'Review this kindly' });
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(['review']);
    const result = await client.getPrompt({ name: 'review', arguments: { tone: 'kind' } });
    expect(result.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Review this kindly' } }]);
    expect(host.calls[0]!.request).toEqual({ clientId: 'todo', method: 'GET', path: '/review/prompt.md', query: { tone: 'kind' } });
  });

  it('a prompt answered with MCP messages passes them on; other data as JSON text', async () => {
    const s = await setup();
    const { host, client } = s;
    await change(s, [todo]);
    host.answer = () => ({ ok: true, data: { messages: [{ role: 'assistant', content: { type: 'text', text: 'hi' } }] } });
    expect((await client.getPrompt({ name: 'review' })).messages).toEqual([{ role: 'assistant', content: { type: 'text', text: 'hi' } }]);
    host.answer = () => ({ ok: true, data: { n: 1 } });
    expect((await client.getPrompt({ name: 'review' })).messages).toEqual([{ role: 'user', content: { type: 'text', text: '{"n":1}' } }]);
  });

  it('an unknown prompt, bad prompt arguments and a failing prompt are JSON-RPC errors with a clear message', async () => {
    const s = await setup();
    const { host, client } = s;
    await change(s, [todo]);
    await expect(client.getPrompt({ name: 'ghost' })).rejects.toThrow(/-32602.*No prompt named "ghost"/);
    host.answer = () => ({ ok: false, error: { code: 'handler_error', message: 'boom' }, source: 'client' });
    await expect(client.getPrompt({ name: 'review' })).rejects.toThrow(/-32603.*Prompt review failed: handler_error: boom/);
  });

  it('skills are resources and templates; resources/read GETs the skill', async () => {
    const s = await setup();
    const { host, client } = s;
    await change(s, [todo]);
    host.answer = () => ({ ok: true, data: '# Topic' });
    expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(['mdp://todo/docs/skill.md']);
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual(['mdp://todo/topics/{topic}/skill.md']);
    const read = await client.readResource({ uri: 'mdp://todo/topics/cats/skill.md' });
    expect(read.contents).toEqual([{ uri: 'mdp://todo/topics/cats/skill.md', mimeType: 'text/plain', text: '# Topic' }]);
    expect(host.calls[0]!.request).toEqual({ clientId: 'todo', method: 'GET', path: '/topics/cats/skill.md' });
  });

  it('reading a resource: bad URIs, non-skills and unknown ones are clear JSON-RPC errors', async () => {
    const { host, client } = await setup();
    await expect(client.readResource({ uri: 'file:///etc/passwd' })).rejects.toThrow(/-32602.*is not an MDP resource/);
    await expect(client.readResource({ uri: 'mdp://todo/page/click' })).rejects.toThrow(/-32602.*names no skill/);
    host.answer = () => ({ ok: false, error: { code: 'not_found', message: 'No client "ghost" is connected' }, source: 'server' });
    await expect(client.readResource({ uri: 'mdp://ghost/docs/skill.md' })).rejects.toThrow(/-32002.*No client "ghost"/);
  });

  it("the server's guide is listed first, in either surface, and read from the function on each read", async () => {
    let calls = 0;
    const guide = () => `# Guide ${++calls}`;
    for (const surface of ['catalog', 'generic'] as const) {
      const s = await setup({ guide, surface });
      await change(s, [todo]);
      const uris = (await s.client.listResources()).resources.map((r) => r.uri);
      expect(uris).toEqual(surface === 'catalog' ? [SERVER_GUIDE_URI, 'mdp://todo/docs/skill.md'] : [SERVER_GUIDE_URI]);
      const first = await s.client.readResource({ uri: SERVER_GUIDE_URI });
      const second = await s.client.readResource({ uri: SERVER_GUIDE_URI });
      expect(first.contents).toEqual([{ uri: 'mdp:///SKILL.md', mimeType: 'text/markdown', text: `# Guide ${calls - 1}` }]);
      expect((second.contents[0] as { text: string }).text).toBe(`# Guide ${calls}`);
      // A client's skill /SKILL.md is another resource: its URI names the client.
      expect(s.host.calls).toEqual([]);
    }
  });

  it('without a guide, nothing is listed for it and its URI is refused', async () => {
    const s = await setup();
    await change(s, [todo]);
    expect((await s.client.listResources()).resources.map((r) => r.uri)).toEqual(['mdp://todo/docs/skill.md']);
    await expect(s.client.readResource({ uri: SERVER_GUIDE_URI })).rejects.toThrow(/-32602/);
  });

  it('a guide that fails is an internal error, and the session goes on', async () => {
    const s = await setup({
      guide: () => {
        throw new Error('disk on fire');
      },
    });
    await expect(s.client.readResource({ uri: SERVER_GUIDE_URI })).rejects.toThrow(/-32603/);
    expect((await s.client.listTools()).tools.length).toBeGreaterThan(0);
  });
});

describe('stdio', () => {
  it('serves one session on the streams and ends it when stdin ends', async () => {
    const bridge = createMcpBridge({ host: new FakeHost() });
    open.push(bridge);
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const lines: string[] = [];
    stdout.setEncoding('utf8').on('data', (chunk: string) => lines.push(...chunk.trim().split('\n')));
    const session = await connectStdio(bridge, stdin, stdout);
    stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } })}\n`,
    );
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
    await settle();
    expect(lines.map((line) => JSON.parse(line).id)).toEqual([1, 2]);
    expect(bridge.sessions).toBe(1);
    stdin.end();
    await session.closed;
    expect(bridge.sessions).toBe(0);
  });
});

describe('list_changed', () => {
  it('one notification per changed kind, after the debounce', async () => {
    const s = await setup();
    const { clock, changes } = s;
    await clock.advanceSettled(1000); // quiet: a change is listed at once
    s.host.set([todo]);
    await clock.advanceSettled(299);
    expect(changes).toEqual([]);
    await clock.advanceSettled(1);
    expect(changes.sort()).toEqual(['prompts', 'resources', 'tools']);
    s.host.set([todo, listed('shop', [endpoint('/cart', 'GET')])]);
    await clock.advanceSettled(1000);
    expect(changes.filter((c) => c === 'tools')).toHaveLength(2);
    expect(changes).toHaveLength(4);
  });

  it('a client that drops and comes back at once does not flap the lists', async () => {
    const s = await setup();
    await change(s, [todo]);
    await s.clock.advanceSettled(1000);
    expect(s.changes).toHaveLength(3);
    await change(s, []);
    await change(s, [todo]);
    await s.clock.advanceSettled(5000);
    expect(s.changes).toHaveLength(3);
    // Gone for good: announced, once per kind.
    await change(s, []);
    await s.clock.advanceSettled(5000);
    expect(s.changes).toHaveLength(6);
  });

  it('follows the host only while a session is open, and leaves no timer behind', async () => {
    const host = new FakeHost();
    const { clock, bridge, client } = await setup({}, host);
    expect(host.listening).toBe(1);
    host.set([todo]);
    await client.close();
    await settle();
    expect(bridge.sessions).toBe(0);
    expect(host.listening).toBe(0);
    expect(clock.pending()).toBe(0);
  });

  it('a listing that fails keeps the catalog and is tried again', async () => {
    const { host, clock, client } = await setup();
    host.set([todo]);
    await clock.advanceSettled(1000);
    host.failListing = true;
    host.set([]);
    await clock.advanceSettled(5000);
    expect((await client.listTools()).tools).toHaveLength(6);
    host.failListing = false;
    await clock.advanceSettled(2000);
    expect((await client.listTools()).tools).toHaveLength(4);
  });

  it('close ends every session', async () => {
    const { bridge, client } = await setup();
    const closed = new Promise<void>((resolve) => (client.onclose = resolve));
    await bridge.close();
    await closed;
    expect(bridge.sessions).toBe(0);
    await expect(bridge.connect(InMemoryTransport.createLinkedPair()[1])).rejects.toThrow('closed');
  });
});
