/**
 * MCP 2025-11-25 in depth, end to end on both transports: the SDK's own Client drives a real server
 * (the built binary over stdio; in process over Streamable HTTP), with an MDP client on the
 * websocket ("todo") and one on the HTTP loop ("notes").
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  EmptyResultSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js';
import type { CallClientMessage, ClientDescriptor, PathDescriptor } from '@mdp/protocol';
import { ClientFailure, Inbox, LoopTestClient, NO_ANSWER, TestClient, stopAll } from '@mdp/test-kit';

/** Ask `check` again until it holds: for a server-side effect that follows a closed socket, which no event reports. */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setImmediate(resolve));
}
import { httpAgent, stdioAgent, type Agent } from './mcp-harness.js';

afterEach(stopAll);

// Long: a cancelled call that was not ended would hold its slot past any test's time.
const TIMEOUT_MS = 60_000;

const todo: ClientDescriptor = {
  id: 'todo',
  name: 'Todo app',
  paths: [
    { type: 'endpoint', method: 'GET', path: '/todo/:id' },
    { type: 'endpoint', method: 'GET', path: '/fail' },
    { type: 'endpoint', method: 'GET', path: '/slow' },
    { type: 'endpoint', method: 'GET', path: '/status' },
    { type: 'endpoint', method: 'GET', path: '/count', outputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } },
    { type: 'endpoint', method: 'GET', path: '/liar', outputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } },
    { type: 'prompt', path: '/review/prompt.md', inputSchema: { type: 'object', properties: { tone: { type: 'string', enum: ['kind', 'keen', 'blunt'] } } } },
    { type: 'skill', path: '/docs/skill.md' },
    { type: 'skill', path: '/topics/:topic/skill.md' },
    { type: 'skill', path: '/topics/cats/skill.md' },
  ] as PathDescriptor[],
};
const notes: ClientDescriptor = {
  id: 'notes',
  name: 'Notes',
  paths: [
    { type: 'endpoint', method: 'GET', path: '/status' },
    { type: 'skill', path: '/notes/skill.md' },
  ] as PathDescriptor[],
};

/** Calls the todo page got, to wait on. */
type Calls = Inbox<CallClientMessage>;

function todoHandler(calls: Calls) {
  return (call: CallClientMessage): unknown => {
    calls.push(call);
    switch (`${call.method} ${call.path}`) {
      case 'GET /fail':
        return new ClientFailure({ code: 'handler_error', message: 'the page refused' });
      case 'GET /slow':
        return NO_ANSWER;
      case 'GET /status':
        return 'todo ok';
      case 'GET /count':
        return { n: 2 };
      case 'GET /liar':
        return { n: 'two' };
      case 'GET /docs/skill.md':
        return '# Todo docs';
      default:
        return call.path.startsWith('/topics/') ? `# ${call.params?.topic ?? 'cats'}` : { id: call.params?.id };
    }
  };
}

type Log = LoggingMessageNotification['params'];

interface World extends Agent {
  socket: TestClient;
  loop: LoopTestClient;
  calls: Calls;
  logs: Inbox<Log>;
}

/** Both MDP clients registered, and listed to the agent. */
async function world(agent: Agent): Promise<World> {
  const logs = new Inbox<Log>();
  agent.client.setNotificationHandler(LoggingMessageNotificationSchema, (note) => logs.push(note.params));
  const calls: Calls = new Inbox();
  const socket = await TestClient.connect(agent.ws);
  socket.handler = todoHandler(calls);
  socket.send({ type: 'registerClient', client: todo });
  const loop = await LoopTestClient.register(`${agent.http}/mdp/http-loop`, notes);
  loop.handler = (call) => (call.path === '/notes/skill.md' ? '# Notes' : 'notes ok');
  for (;;) {
    const { tools } = await agent.client.listTools();
    const status = tools.find((t) => t.name === 'status');
    if ((status?.inputSchema.properties?.clientId as { enum?: string[] } | undefined)?.enum?.length === 2) break;
    await agent.notes.reach('tools', agent.notes.counts.tools + 1);
  }
  return { ...agent, socket, loop, calls, logs };
}

const event = (name: string, clientId?: string) => (log: Log) =>
  (log.data as { event?: string }).event === name && (clientId === undefined || (log.data as { clientId?: string }).clientId === clientId);

describe.each([
  ['stdio', () => stdioAgent(['--invocation-timeout-ms', String(TIMEOUT_MS), '--max-pending-calls', '1'])],
  ['Streamable HTTP', () => httpAgent({ invocationTimeoutMs: TIMEOUT_MS, maxPendingCalls: 1 })],
] as const)('MCP in depth over %s', (transport, start) => {
  it('logging: setLevel, then clients coming and going and failed calls as log messages; a bad level is invalid params', async () => {
    const w = await world(await start());
    await expect(w.client.request({ method: 'logging/setLevel', params: { level: 'loud' } }, EmptyResultSchema)).rejects.toMatchObject({ code: -32602 });
    await w.client.setLoggingLevel('info');
    const extra = await TestClient.connect(w.ws);
    extra.send({ type: 'registerClient', client: { id: 'extra', name: 'Extra', paths: [{ type: 'skill', path: '/extra/skill.md' }] } });
    expect((await w.logs.seen(event('client_connected', 'extra'))).data).toEqual({ event: 'client_connected', clientId: 'extra', name: 'Extra' });
    await w.loop.close();
    expect(await w.logs.seen(event('client_disconnected', 'notes'))).toMatchObject({ level: 'info', logger: 'mdp.clients' });
    const failed = await w.client.callTool({ name: 'fail', arguments: {} });
    expect(failed.isError).toBe(true);
    expect(await w.logs.seen(event('call_failed'))).toEqual({
      level: 'warning',
      logger: 'mdp.calls',
      data: { event: 'call_failed', what: 'tool fail', error: { code: 'handler_error', message: 'the page refused' } },
    });
    // Above warning a failed call is not told; messages come in order, so the next one shows none came.
    await w.client.setLoggingLevel('error');
    await w.client.callTool({ name: 'fail', arguments: {} });
    await w.client.setLoggingLevel('info');
    await extra.close();
    await w.logs.seen(event('client_disconnected', 'extra'));
    expect(w.logs.items.filter(event('call_failed'))).toHaveLength(1);
  });

  it('completions: a prompt argument from its enum, a template variable from what the client lists; an unknown prompt nothing, a malformed ref -32602', async () => {
    const w = await world(await start());
    const tone = await w.client.complete({ ref: { type: 'ref/prompt', name: 'review' }, argument: { name: 'tone', value: 'k' } });
    expect(tone.completion).toEqual({ values: ['kind', 'keen'], total: 2, hasMore: false });
    const clients = await w.client.complete({ ref: { type: 'ref/prompt', name: 'status' }, argument: { name: 'clientId', value: '' } });
    // No prompt of that name (status is a tool): nothing, not an error.
    expect(clients.completion.values).toEqual([]);
    const topic = await w.client.complete({ ref: { type: 'ref/resource', uri: 'mdp://todo/topics/{topic}/skill.md' }, argument: { name: 'topic', value: '' } });
    expect(topic.completion.values).toEqual(['cats']);
    await expect(
      w.client.request({ method: 'completion/complete', params: { ref: { type: 'ref/prompt' }, argument: { name: 'tone', value: '' } } }, EmptyResultSchema),
    ).rejects.toMatchObject({ code: -32602 });
  });

  it('subscriptions: a skill is updated when its client changes its catalog and when it leaves; then it cannot be subscribed to', async () => {
    const w = await world(await start());
    const updated = new Inbox<string>();
    w.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => updated.push(note.params.uri));
    await expect(w.client.subscribeResource({ uri: 'mdp://todo/nope/skill.md' })).rejects.toMatchObject({ code: -32002 });
    await expect(w.client.subscribeResource({ uri: 'mdp://todo/status' })).rejects.toMatchObject({ code: -32602 });
    await w.client.subscribeResource({ uri: 'mdp://todo/docs/skill.md' });
    await w.client.subscribeResource({ uri: 'mdp://notes/notes/skill.md' });
    // The list_changed notifications may come before or after resources/updated: count from before the change.
    const resourcesBefore = w.notes.counts.resources;
    w.socket.send({ type: 'updateClientCatalog', clientId: 'todo', paths: [...todo.paths, { type: 'skill', path: '/more/skill.md' }] });
    expect(await updated.next()).toBe('mdp://todo/docs/skill.md');
    // Changed, not gone: its new skill is listed.
    await w.notes.reach('resources', resourcesBefore + 1);
    expect((await w.client.listResources()).resources.map((r) => r.uri)).toContain('mdp://todo/more/skill.md');
    const toolsBefore = w.notes.counts.tools;
    await w.loop.close();
    // Seen, not next: on a loaded machine the update may come before the close's answer does.
    expect(await updated.seen((uri) => uri === 'mdp://notes/notes/skill.md')).toBe('mdp://notes/notes/skill.md');
    // Once the listing no longer holds it (the tools list changes), its skills are not there to subscribe to.
    await w.notes.reach('tools', toolsBefore + 1);
    await expect(w.client.subscribeResource({ uri: 'mdp://notes/notes/skill.md' })).rejects.toMatchObject({
      code: -32002,
      message: expect.stringContaining('no client "notes"'),
    });
    expect(updated.items).toEqual(['mdp://todo/docs/skill.md', 'mdp://notes/notes/skill.md']);
  });

  it('progress: callPaths with a progress token tells each answer as it comes', async () => {
    const w = await world(await start());
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    w.loop.handler = async () => {
      await held;
      return 'notes ok';
    };
    const heard = new Inbox<{ progress: number; total?: number; message?: string }>();
    const call = w.client.callTool({ name: 'callPaths', arguments: { method: 'GET', path: '/status' } }, undefined, { onprogress: (p) => heard.push(p) });
    expect(await heard.next()).toEqual({ progress: 1, total: 2, message: 'todo answered' });
    release();
    const results = (await call).structuredContent as { results: Array<{ clientId: string; ok: boolean }> };
    expect(results.results.map((r) => [r.clientId, r.ok]).sort()).toEqual([
      ['notes', true],
      ['todo', true],
    ]);
  });

  it('cancellation: the SDK client aborting a call ends the MDP call at once, frees its slot, and drops its late answer', async () => {
    const w = await world(await start());
    const abort = new AbortController();
    const call = w.client.callTool({ name: 'slow', arguments: {} }, undefined, { signal: abort.signal });
    const sent = await w.calls.seen((c) => c.path === '/slow');
    abort.abort('the user pressed stop');
    await expect(call).rejects.toThrow(/the user pressed stop/);
    // One call may wait per client (--max-pending-calls 1): this one gets through only if the cancelled one ended.
    expect((await w.client.callTool({ name: 'status', arguments: { clientId: 'todo' } })).structuredContent).toEqual({ ok: true, data: 'todo ok' });
    // Its late answer is dropped: nothing reaches the agent, the session goes on.
    w.socket.send({ type: 'callClientResult', requestId: sent.requestId, ok: true, data: 'too late' });
    expect((await w.client.callTool({ name: 'status', arguments: { clientId: 'todo' } })).structuredContent).toEqual({ ok: true, data: 'todo ok' });
  });

  it.runIf(transport === 'Streamable HTTP')('cancellation: closing the HTTP request of a call ends the MDP call at once', async () => {
    const w = await world(await start());
    const sessionId = (w.client.transport as unknown as { sessionId: string }).sessionId;
    const closed = new AbortController();
    const request = fetch(`${w.http}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'raw-1', method: 'tools/call', params: { name: 'slow', arguments: {} } }),
      signal: closed.signal,
    });
    request.catch(() => undefined);
    await w.calls.seen((c) => c.path === '/slow');
    closed.abort();
    // The slot is free again at once, long before the invocation time-out.
    await until(async () => !(await w.client.callTool({ name: 'status', arguments: { clientId: 'todo' } })).isError);
  });

  it("output schemas: the endpoint's outputSchema listed, an answer that fits it is structuredContent, one that does not a bad_output error; initialize names the server", async () => {
    const w = await world(await start());
    const info = w.client.getServerVersion()!;
    expect(info).toMatchObject({
      name: 'mdp-server',
      title: 'MDP server',
      icons: [{ mimeType: 'image/svg+xml', src: expect.stringMatching(/^data:image\/svg\+xml;base64,/) }],
    });
    expect(info.websiteUrl).toBe(`${w.http}/mdp/inspector`);
    const { tools } = await w.client.listTools();
    expect(tools.find((t) => t.name === 'count')!.outputSchema).toMatchObject({ properties: { data: { required: ['n'] } } });
    expect((await w.client.callTool({ name: 'count', arguments: {} })).structuredContent).toEqual({ ok: true, data: { n: 2 } });
    expect(await w.client.callTool({ name: 'liar', arguments: {} })).toMatchObject({ isError: true, structuredContent: { error: { code: 'bad_output' } } });
  });
});
