/**
 * MCP 2025-11-25 in depth (logging, completions, subscriptions, progress, cancellation, output
 * schemas), driven by the SDK's own Client over an in-memory transport, on a fake host and clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { EmptyResultSchema, LoggingMessageNotificationSchema, type LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import { createMcpBridge, type McpBridge, type McpBridgeOptions } from '../src/bridge.js';
import { REFRESH_MIN_INTERVAL_MS } from '../src/catalog-driver.js';
import { CLIENT_EVENTS_MAX } from '../src/logging.js';
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
    const events = (agent: Agent) => agent.logs.map((log) => [log.level, log.logger, (log.data as { event: string; clientId: string }).event, (log.data as { clientId: string }).clientId]);
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
      { level: 'warning', logger: 'mdp.calls', data: { event: 'call_failed', what: 'tool todos', error: { code: 'handler_error', message: 'the page refused' } } },
      { level: 'warning', logger: 'mdp.calls', data: { event: 'call_failed', what: 'resource mdp://todo/docs/skill.md', error: { code: 'handler_error', message: 'the page refused' } } },
    ]);
    expect(other.logs).toEqual([]);
    expect(strict.logs).toEqual([]);
  });
});
