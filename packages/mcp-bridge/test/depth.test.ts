/**
 * MCP 2025-11-25 in depth (logging, completions, subscriptions, progress, cancellation, output
 * schemas), driven by the SDK's own Client over an in-memory transport, on a fake host and clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  EmptyResultSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { createMcpBridge, type McpBridge, type McpBridgeOptions } from '../src/bridge.js';
import { REFRESH_MIN_INTERVAL_MS } from '../src/catalog-driver.js';
import { CLIENT_EVENTS_MAX } from '../src/logging.js';
import { SERVER_GUIDE_URI } from '../src/resource-uri.js';
import { SUBSCRIPTIONS_MAX } from '../src/subscriptions.js';
import { PROGRESS_MAX_NOTIFICATIONS, progressDue } from '../src/progress.js';
import { endpoint, manualClock, prompt, settle, skill, type ManualClock } from '@mdp/test-kit';
import { FakeHost, listed } from './fakes.js';
import { obj } from './fixtures.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

interface Agent {
  client: Client;
  logs: LoggingMessageNotification['params'][];
}

interface Setup {
  host: FakeHost;
  clock: ManualClock;
  bridge: McpBridge;
  agent(): Promise<Agent>;
}

function setup(options: Partial<McpBridgeOptions> = {}, host = new FakeHost()): Setup {
  const clock = manualClock(0);
  const bridge = createMcpBridge({ host, clock, ...options });
  open.push(bridge);
  return {
    host,
    clock,
    bridge,
    async agent() {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await bridge.connect(serverSide);
      const client = new Client({ name: 'test-agent', version: '1.0.0' });
      const logs: Agent['logs'] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (note) => void logs.push(note.params));
      await client.connect(clientSide);
      open.push(client);
      return { client, logs };
    },
  };
}

/** Change the host's clients and let the bridge list them. */
async function change(s: Setup, clients: ReturnType<typeof listed>[]): Promise<void> {
  s.host.set(clients);
  await s.clock.advanceSettled(REFRESH_MIN_INTERVAL_MS);
}

const todo = listed('todo', [
  endpoint('/todos/:id', 'GET'),
  prompt('/review/prompt.md', { inputSchema: obj({ tone: { type: 'string', enum: ['kind', 'blunt', 'keen'] } }) }),
  skill('/docs/skill.md'),
  skill('/topics/:topic/skill.md'),
]);
const notes = listed('notes', [skill('/notes/skill.md')], { name: 'Notes' });

describe('logging', () => {
  it('declares logging; logging/setLevel takes the eight levels and refuses others as invalid params', async () => {
    const s = setup();
    const { client } = await s.agent();
    expect(client.getServerCapabilities()?.logging).toEqual({});
    await expect(client.setLoggingLevel('info')).resolves.toEqual({});
    await expect(client.request({ method: 'logging/setLevel', params: { level: 'banana' } } as never, EmptyResultSchema)).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('one of debug, info, notice, warning, error, critical, alert, emergency'),
    });
    await expect(client.request({ method: 'logging/setLevel', params: {} } as never, EmptyResultSchema)).rejects.toMatchObject({ code: -32602 });
  });

  it('a session that set a level hears clients come, change and leave, at or above its level; one that did not hears nothing', async () => {
    const s = setup();
    const quiet = await s.agent();
    const info = await s.agent();
    const debug = await s.agent();
    await info.client.setLoggingLevel('info');
    await debug.client.setLoggingLevel('debug');
    await change(s, [todo]);
    await change(s, [todo, notes]);
    await change(s, [todo, { ...notes, paths: [skill('/notes/skill.md'), skill('/more/skill.md')] }]);
    await change(s, [todo]);
    await settle();
    const events = (agent: Agent) =>
      agent.logs.map((log) => [log.level, log.logger, (log.data as { event: string; clientId: string }).event, (log.data as { clientId: string }).clientId]);
    expect(quiet.logs).toEqual([]);
    expect(events(info)).toEqual([
      ['info', 'mdp.clients', 'client_connected', 'todo'],
      ['info', 'mdp.clients', 'client_connected', 'notes'],
      ['info', 'mdp.clients', 'client_disconnected', 'notes'],
    ]);
    expect(events(debug)).toEqual([
      ['info', 'mdp.clients', 'client_connected', 'todo'],
      ['info', 'mdp.clients', 'client_connected', 'notes'],
      ['debug', 'mdp.clients', 'client_changed', 'notes'],
      ['info', 'mdp.clients', 'client_disconnected', 'notes'],
    ]);
    expect(info.logs[1]!.data).toEqual({ event: 'client_connected', clientId: 'notes', name: 'Notes' });
  });

  it('a client registering again is a change; many clients at once are one message', async () => {
    const s = setup();
    const agent = await s.agent();
    await change(s, [todo]);
    await agent.client.setLoggingLevel('debug');
    const again = { ...todo, connectedAt: '2025-01-01T00:00:09.000Z' };
    await change(s, [again]);
    const many = Array.from({ length: CLIENT_EVENTS_MAX + 1 }, (_, i) => listed(`c${i}`, []));
    await change(s, [again, ...many]);
    await settle();
    expect(agent.logs.map((log) => log.data)).toEqual([
      { event: 'client_changed', clientId: 'todo', name: 'Client todo' },
      { event: 'clients_connected', count: CLIENT_EVENTS_MAX + 1, clientIds: many.slice(0, CLIENT_EVENTS_MAX).map((c) => c.id) },
    ]);
  });

  it('a failed call is a warning to the session that made it only; a level above warning hides it', async () => {
    const s = setup();
    const caller = await s.agent();
    const other = await s.agent();
    const strict = await s.agent();
    await change(s, [todo]);
    await caller.client.setLoggingLevel('warning');
    await other.client.setLoggingLevel('debug');
    await strict.client.setLoggingLevel('error');
    s.host.answer = () => ({ ok: false, error: { code: 'handler_error', message: 'the page refused' }, source: 'client' });
    const result = await caller.client.callTool({ name: 'todos', arguments: { id: '1' } });
    expect(result.isError).toBe(true);
    await strict.client.callTool({ name: 'todos', arguments: { id: '1' } });
    await expect(caller.client.readResource({ uri: 'mdp://todo/docs/skill.md' })).rejects.toThrow(/the page refused/);
    await settle();
    expect(caller.logs).toEqual([
      {
        level: 'warning',
        logger: 'mdp.calls',
        data: { event: 'call_failed', what: 'tool todos', error: { code: 'handler_error', message: 'the page refused' } },
      },
      {
        level: 'warning',
        logger: 'mdp.calls',
        data: { event: 'call_failed', what: 'resource mdp://todo/docs/skill.md', error: { code: 'handler_error', message: 'the page refused' } },
      },
    ]);
    expect(other.logs).toEqual([]);
    expect(strict.logs).toEqual([]);
  });
});

describe('completions', () => {
  const shop = listed('shop', [
    prompt('/review/prompt.md', { inputSchema: obj({ tone: { type: 'string', enum: ['kind', 'blunt', 'keen'] } }) }),
    skill('/docs/skill.md'),
  ]);
  const topics = listed('topics', [
    skill('/topics/:topic/skill.md'),
    skill('/topics/cats/skill.md'),
    endpoint('/topics/capybaras', 'GET'),
    endpoint('/topics/dogs/:id', 'DELETE'),
    endpoint('/topics/:topic/pages/:page', 'GET'),
    endpoint('/topics/cats/pages/one', 'GET'),
    endpoint('/topics/dogs/pages/two', 'GET'),
    endpoint('/topics/Bad Value', 'GET'),
    prompt('/topics/:topic/about/prompt.md'),
  ]);

  it('declares completions; offers a prompt argument its schema enum, matching what was typed', async () => {
    const s = setup();
    const { client } = await s.agent();
    await change(s, [todo]);
    expect(client.getServerCapabilities()?.completions).toEqual({});
    const tone = (value: string) => client.complete({ ref: { type: 'ref/prompt', name: 'review' }, argument: { name: 'tone', value } });
    expect((await tone('')).completion).toEqual({ values: ['kind', 'blunt', 'keen'], total: 3, hasMore: false });
    expect((await tone('K')).completion).toEqual({ values: ['kind', 'keen'], total: 2, hasMore: false });
  });

  it('offers the clients of a shared prompt for clientId, and the values clients publish for path parameters', async () => {
    const s = setup();
    const { client } = await s.agent();
    await change(s, [todo, shop, topics]);
    const shared = await client.complete({ ref: { type: 'ref/prompt', name: 'review' }, argument: { name: 'clientId', value: '' } });
    expect(shared.completion.values).toEqual(['todo', 'shop']);
    const template = (name: string, value: string, chosen?: Record<string, string>) =>
      client.complete({
        ref: { type: 'ref/resource', uri: 'mdp://topics/topics/{topic}/skill.md' },
        argument: { name, value },
        ...(chosen ? { context: { arguments: chosen } } : {}),
      });
    // Every value at that place in the client's paths; not parameters, not invalid ones.
    expect((await template('topic', '')).completion.values).toEqual(['cats', 'capybaras', 'dogs']);
    expect((await template('topic', 'ca')).completion.values).toEqual(['cats', 'capybaras']);
    const { prompts } = await client.listPrompts();
    const name = prompts.find((p) => p.description?.includes('/topics/:topic/about/prompt.md'))!.name;
    const about = await client.complete({ ref: { type: 'ref/prompt', name }, argument: { name: 'topic', value: 'd' } });
    expect(about.completion.values).toEqual(['dogs']);
  });

  it('narrows a later parameter by the ones chosen (context.arguments)', async () => {
    const { paramValues } = await import('../src/completion.js');
    const { catalogClient } = await import('../src/surface.js');
    const clients = [catalogClient(topics)];
    expect(paramValues('/topics/:topic/pages/:page', 'page', clients)).toEqual(['one', 'two']);
    expect(paramValues('/topics/:topic/pages/:page', 'page', clients, { topic: 'dogs' })).toEqual(['two']);
    expect(paramValues('/topics/:topic/pages/:page', 'nope', clients)).toEqual([]);
  });

  it('at most 100 values, with the total and hasMore', async () => {
    const s = setup();
    const { client } = await s.agent();
    const many = Array.from({ length: 150 }, (_, i) => `v${String(i).padStart(3, '0')}`);
    await change(s, [listed('big', [prompt('/pick/prompt.md', { inputSchema: obj({ which: { type: 'string', enum: many } }) })])]);
    const result = await client.complete({ ref: { type: 'ref/prompt', name: 'pick' }, argument: { name: 'which', value: 'v' } });
    expect(result.completion).toEqual({ values: many.slice(0, 100), total: 150, hasMore: true });
  });

  it('an unknown prompt, template or argument gets no values; malformed params are invalid params', async () => {
    const s = setup();
    const { client } = await s.agent();
    await change(s, [todo]);
    const empty = { values: [], total: 0, hasMore: false };
    expect(
      (await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'test' } })).completion,
    ).toEqual(empty);
    expect((await client.complete({ ref: { type: 'ref/prompt', name: 'review' }, argument: { name: 'nope', value: '' } })).completion).toEqual(empty);
    expect((await client.complete({ ref: { type: 'ref/resource', uri: 'mdp://ghost/{x}/skill.md' }, argument: { name: 'x', value: '' } })).completion).toEqual(
      empty,
    );
    await expect(
      client.request(
        { method: 'completion/complete', params: { ref: { type: 'ref/tool', name: 'x' }, argument: { name: 'a', value: '' } } } as never,
        EmptyResultSchema,
      ),
    ).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Invalid completion/complete params: ref'),
    });
    await expect(
      client.request({ method: 'completion/complete', params: { ref: { type: 'ref/prompt', name: 'review' } } } as never, EmptyResultSchema),
    ).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('argument'),
    });
  });
});

describe('resource subscriptions', () => {
  it('declares subscribe; a subscribed skill is updated when its client changes, registers again, leaves and comes back', async () => {
    const s = setup();
    const { client } = await s.agent();
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => void updated.push(note.params.uri));
    await change(s, [todo, notes]);
    expect(client.getServerCapabilities()?.resources).toEqual({ subscribe: true, listChanged: true });
    await client.subscribeResource({ uri: 'mdp://todo/docs/skill.md' });
    await client.subscribeResource({ uri: 'mdp://todo/topics/cats/skill.md' });
    // Another client changing touches neither.
    await change(s, [todo, { ...notes, paths: [] }]);
    await settle();
    expect(updated).toEqual([]);
    await change(s, [{ ...todo, paths: [...todo.paths, skill('/more/skill.md')] }, notes]);
    await settle();
    expect(updated.sort()).toEqual(['mdp://todo/docs/skill.md', 'mdp://todo/topics/cats/skill.md']);
    await client.unsubscribeResource({ uri: 'mdp://todo/topics/cats/skill.md' });
    updated.length = 0;
    await change(s, [{ ...todo, connectedAt: '2025-01-01T00:01:00.000Z' }, notes]);
    await change(s, [notes]);
    await change(s, [todo, notes]);
    await settle();
    expect(updated).toEqual(['mdp://todo/docs/skill.md', 'mdp://todo/docs/skill.md', 'mdp://todo/docs/skill.md']);
  });

  it('refuses a malformed URI (-32602), one of no client or no such skill (-32002), and past the per-session cap', async () => {
    const s = setup({ guide: () => '# guide' });
    const { client } = await s.agent();
    await change(s, [todo]);
    await expect(client.subscribeResource({ uri: 'https://example.com/x' })).rejects.toMatchObject({ code: -32602 });
    await expect(client.subscribeResource({ uri: 'mdp://todo/todos/1' })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('names no skill'),
    });
    await expect(client.subscribeResource({ uri: 'mdp://ghost/docs/skill.md' })).rejects.toMatchObject({
      code: -32002,
      message: expect.stringContaining('no client "ghost"'),
    });
    await expect(client.subscribeResource({ uri: 'mdp://todo/nope/skill.md' })).rejects.toMatchObject({
      code: -32002,
      message: expect.stringContaining('has no skill /nope/skill.md'),
    });
    await expect(client.subscribeResource({ uri: SERVER_GUIDE_URI })).resolves.toEqual({});
    for (let i = 1; i < SUBSCRIPTIONS_MAX; i += 1) await client.subscribeResource({ uri: `mdp://todo/topics/t${i}/skill.md` });
    await expect(client.subscribeResource({ uri: 'mdp://todo/docs/skill.md' })).rejects.toMatchObject({
      code: -32600,
      message: expect.stringContaining(`at most ${SUBSCRIPTIONS_MAX}`),
    });
    // Subscribing again to one held is no new subscription; unsubscribing makes room.
    await expect(client.subscribeResource({ uri: 'mdp://todo/topics/t1/skill.md' })).resolves.toEqual({});
    await client.unsubscribeResource({ uri: 'mdp://todo/topics/t1/skill.md' });
    await expect(client.subscribeResource({ uri: 'mdp://todo/docs/skill.md' })).resolves.toEqual({});
    // A client that left: its skills cannot be subscribed to.
    await change(s, []);
    await s.clock.advanceSettled(1000);
    await expect(client.subscribeResource({ uri: 'mdp://todo/topics/t1/skill.md' })).rejects.toMatchObject({ code: -32002 });
  });

  it('the guide is updated by any client change', async () => {
    const s = setup({ guide: () => '# guide' });
    const { client } = await s.agent();
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => void updated.push(note.params.uri));
    await client.subscribeResource({ uri: SERVER_GUIDE_URI });
    await change(s, [notes]);
    await settle();
    expect(updated).toEqual([SERVER_GUIDE_URI]);
  });
});

describe('progress', () => {
  it('callPaths with a progress token tells each answer as it comes; without one, nothing', async () => {
    const s = setup();
    const { client } = await s.agent();
    await change(s, [listed('a', [endpoint('/v', 'GET')]), listed('b', [endpoint('/v', 'GET')])]);
    const gates = new Map<string, () => void>();
    s.host.answer = (request) =>
      new Promise((resolve) =>
        gates.set(request.clientId, () =>
          resolve(request.clientId === 'a' ? { ok: true, data: 1 } : { ok: false, error: { code: 'timeout', message: 'late' }, source: 'server' }),
        ),
      );
    const heard: Array<{ progress: number; total?: number; message?: string }> = [];
    const call = client.callTool({ name: 'callPaths', arguments: { method: 'GET', path: '/v' } }, undefined, { onprogress: (p) => void heard.push(p) });
    await settle();
    gates.get('b')!();
    await settle();
    expect(heard).toEqual([{ progress: 1, total: 2, message: 'b failed (timeout)' }]);
    gates.get('a')!();
    expect((await call).isError).toBeFalsy();
    expect(heard).toEqual([
      { progress: 1, total: 2, message: 'b failed (timeout)' },
      { progress: 2, total: 2, message: 'a answered' },
    ]);
  });

  it('over many clients at most 100 notifications, the last one the whole', async () => {
    const s = setup();
    const { client } = await s.agent();
    const ids = Array.from({ length: 250 }, (_, i) => `c${i}`);
    const heard: number[] = [];
    const result = await client.callTool({ name: 'callPaths', arguments: { clientIds: ids, method: 'GET', path: '/v' } }, undefined, {
      onprogress: (p) => void heard.push(p.progress),
    });
    expect((result.structuredContent as { results: unknown[] }).results).toHaveLength(250);
    await settle();
    expect(heard.length).toBeLessThanOrEqual(PROGRESS_MAX_NOTIFICATIONS);
    expect(heard.at(-1)).toBe(250);
    expect(progressDue(3, 250)).toBe(true);
    expect(progressDue(4, 250)).toBe(false);
  });

  it('a catalog tool or a call without a token sends no progress', async () => {
    const s = setup();
    const notes: unknown[] = [];
    const { client } = await s.agent();
    client.setNotificationHandler(ProgressNotificationSchema, (note) => void notes.push(note));
    await change(s, [listed('a', [endpoint('/v', 'GET')])]);
    await client.callTool({ name: 'callPaths', arguments: { method: 'GET', path: '/v' } });
    expect((await client.callTool({ name: 'v', arguments: {} }, undefined, { onprogress: () => void notes.push('progress') })).isError).toBeFalsy();
    await settle();
    expect(notes).toEqual([]);
  });
});

describe('output schemas and server info', () => {
  const priced = obj({ price: { type: 'number' } });

  it('a tool whose endpoint declares an outputSchema lists it (as the result envelope) and answers structuredContent that validates', async () => {
    const s = setup();
    const { client } = await s.agent();
    await change(s, [
      listed('shop', [endpoint('/price', 'GET', { outputSchema: { ...priced, required: ['price'], $id: 'urn:x' } }), endpoint('/free', 'GET')]),
    ]);
    const { tools } = await client.listTools();
    const price = tools.find((t) => t.name === 'price')!;
    expect(price.outputSchema).toMatchObject({
      type: 'object',
      properties: { ok: { type: 'boolean' }, data: { ...priced, required: ['price'] } },
      required: ['ok'],
    });
    expect(JSON.stringify(price.outputSchema)).not.toContain('$id');
    expect(tools.find((t) => t.name === 'free')!.outputSchema).toBeUndefined();
    s.host.answer = () => ({ ok: true, data: { price: 3 } });
    // The SDK's client checks structuredContent against the schema it listed: this passes it.
    expect((await client.callTool({ name: 'price', arguments: {} })).structuredContent).toEqual({ ok: true, data: { price: 3 } });
    // A failure fits the envelope too (the SDK checks errors as well).
    s.host.answer = () => ({ ok: false, error: { code: 'timeout', message: 'late' }, source: 'server' });
    expect((await client.callTool({ name: 'price', arguments: {} })).isError).toBe(true);
  });

  it('an answer that does not fit the declared schema is a bad_output error, never structured content that lies', async () => {
    const s = setup();
    const { client } = await s.agent();
    await change(s, [listed('shop', [endpoint('/price', 'GET', { outputSchema: { ...priced, required: ['price'] } })])]);
    await client.listTools();
    s.host.answer = () => ({ ok: true, data: { price: 'three' } });
    const result = await client.callTool({ name: 'price', arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: { ok: false, error: { code: 'bad_output', message: expect.stringContaining('outputSchema it declares for GET /price') } },
    });
  });

  it('a schema that does not compile is left out of the list, which the SDK client still takes', async () => {
    const s = setup();
    const { client } = await s.agent();
    await change(s, [listed('shop', [endpoint('/odd', 'GET', { outputSchema: { type: 'nonsense' } })])]);
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'odd')!.outputSchema).toBeUndefined();
    expect((await client.callTool({ name: 'odd', arguments: {} })).structuredContent).toEqual({ ok: true, data: 'done' });
  });

  it('initialize carries the title, icons and website given', async () => {
    const s = setup({
      serverInfo: {
        name: 'mdp-server',
        version: '1.2.3',
        title: 'MDP server',
        websiteUrl: 'http://127.0.0.1:1/mdp/inspector',
        icons: [{ src: 'data:image/svg+xml;base64,PHN2Zy8+', mimeType: 'image/svg+xml' }],
      },
    });
    const { client } = await s.agent();
    expect(client.getServerVersion()).toEqual({
      name: 'mdp-server',
      version: '1.2.3',
      title: 'MDP server',
      websiteUrl: 'http://127.0.0.1:1/mdp/inspector',
      icons: [{ src: 'data:image/svg+xml;base64,PHN2Zy8+', mimeType: 'image/svg+xml' }],
    });
  });
});
