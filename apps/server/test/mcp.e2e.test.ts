/**
 * The MCP bridge end to end, one suite for both transports: the SDK's own Client drives a real
 * server (the built binary over stdio; in process over Streamable HTTP), with an MDP client on the
 * websocket ("todo") and one on the HTTP loop ("notes").
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CallClientMessage, ClientDescriptor, PathDescriptor } from '@mdp/protocol';
import { ClientFailure, LoopTestClient, NO_ANSWER, TestClient, stopAll } from '@mdp/test-kit';
import { httpAgent, stdioAgent, type Agent } from './mcp-harness.js';

afterEach(stopAll);

const TIMEOUT_MS = 500;

const todoPaths: PathDescriptor[] = [
  {
    type: 'endpoint',
    method: 'POST',
    path: '/todos',
    description: 'Add a todo',
    inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
  },
  { type: 'endpoint', method: 'GET', path: '/todo/:id' },
  { type: 'endpoint', method: 'GET', path: '/status' },
  { type: 'endpoint', method: 'GET', path: '/fail' },
  { type: 'endpoint', method: 'GET', path: '/slow' },
  { type: 'endpoint', method: 'GET', path: '/vanish' },
  { type: 'prompt', path: '/review/prompt.md', inputSchema: { type: 'object', properties: { tone: { type: 'string' } } } },
  { type: 'skill', path: '/docs/skill.md', description: 'How the todo app works' },
  { type: 'skill', path: '/topics/:topic/skill.md' },
] as PathDescriptor[];
const todo: ClientDescriptor = { id: 'todo', name: 'Todo app', paths: todoPaths };
const notes: ClientDescriptor = {
  id: 'notes',
  name: 'Notes',
  paths: [
    { type: 'endpoint', method: 'GET', path: '/status' },
    { type: 'skill', path: '/notes/skill.md' },
  ] as PathDescriptor[],
};

function todoHandler(socket: TestClient) {
  return (call: CallClientMessage): unknown => {
    switch (`${call.method} ${call.path}`) {
      case 'POST /todos':
        return { created: (call.body as { title: string }).title };
      case 'GET /status':
        return 'todo ok';
      case 'GET /review/prompt.md':
        return `Review it in a ${call.query?.tone ?? 'plain'} tone`;
      case 'GET /docs/skill.md':
        return '# Todo docs';
      case 'GET /fail':
        return new ClientFailure({ code: 'handler_error', message: 'the page refused' });
      case 'GET /slow':
        return NO_ANSWER;
      case 'GET /vanish':
        setImmediate(() => void socket.close());
        return NO_ANSWER;
      default:
        return call.path.startsWith('/topics/') ? `# ${call.params?.topic}` : { id: call.params?.id };
    }
  };
}

interface World extends Agent {
  socket: TestClient;
  loop: LoopTestClient;
}

/** Both MDP clients registered, and the agent told (a list_changed of each kind). */
async function world(agent: Agent): Promise<World> {
  const socket = await TestClient.connect(agent.ws);
  socket.handler = todoHandler(socket);
  socket.send({ type: 'registerClient', client: todo });
  const loop = await LoopTestClient.register(`${agent.http}/mdp/http-loop`, notes);
  loop.handler = (call) => (call.path === '/notes/skill.md' ? '# Notes' : 'notes ok');
  await Promise.all([agent.notes.reach('tools', 1), agent.notes.reach('prompts', 1), agent.notes.reach('resources', 1)]);
  // Both clients may have come in one notification or two; wait until both are listed.
  for (;;) {
    const { tools } = await agent.client.listTools();
    const status = tools.find((t) => t.name === 'status');
    if ((status?.inputSchema.properties?.clientId as { enum?: string[] } | undefined)?.enum?.length === 2) break;
    await agent.notes.reach('tools', agent.notes.counts.tools + 1);
  }
  return { ...agent, socket, loop };
}

type Structured = {
  ok?: boolean;
  data?: unknown;
  error?: { code: string; message: string };
  results?: unknown[];
  clients?: Array<{ id: string }>;
  paths?: unknown[];
};
const structured = (result: unknown): Structured => (result as { structuredContent?: Structured }).structuredContent!;

describe.each([
  ['stdio', () => stdioAgent(['--invocation-timeout-ms', String(TIMEOUT_MS)])],
  ['Streamable HTTP', () => httpAgent({ invocationTimeoutMs: TIMEOUT_MS })],
] as const)('MCP over %s', (_transport, start) => {
  it('lists the clients of both transports, the generic tools and the catalog', async () => {
    const w = await world(await start());
    const clients = structured(await w.client.callTool({ name: 'listClients', arguments: {} })).clients!;
    expect(clients.map((c) => c.id).sort()).toEqual(['notes', 'todo']);
    const { tools } = await w.client.listTools();
    // The generic tools first; then the catalog's, in the order the bridge first saw their clients
    // (one listing may bring both clients at once, or todo's alone first).
    const names = tools.map((t) => t.name);
    expect(names.slice(0, 4)).toEqual(['listClients', 'listPaths', 'callPath', 'callPaths']);
    expect(names.slice(4).sort()).toEqual(['fail', 'slow', 'status', 'todo', 'todos', 'vanish']);
    expect(tools.find((t) => t.name === 'todos')!.description).toBe('Endpoint POST /todos of MDP client "todo" (Todo app). Its description: Add a todo');
    expect(tools.find((t) => t.name === 'todo')!.annotations).toMatchObject({ readOnlyHint: true });
    const paths = structured(await w.client.callTool({ name: 'listPaths', arguments: { clientId: 'notes' } })).paths;
    expect(paths).toEqual([
      { type: 'skill', path: '/notes/skill.md', clientId: 'notes', clientName: 'Notes' },
      { type: 'endpoint', method: 'GET', path: '/status', clientId: 'notes', clientName: 'Notes' },
    ]);
  });

  it('calls an endpoint with a body, as its own tool and through callPath', async () => {
    const w = await world(await start());
    const own = await w.client.callTool({ name: 'todos', arguments: { title: 'Buy milk' } });
    expect(own.isError).toBeFalsy();
    expect(own.structuredContent).toEqual({ ok: true, data: { created: 'Buy milk' } });
    expect(JSON.parse((own.content as Array<{ text: string }>)[0]!.text)).toEqual(own.structuredContent);
    const generic = await w.client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'POST', path: '/todos', body: { title: 'Walk' } } });
    expect(generic.structuredContent).toEqual({ ok: true, data: { created: 'Walk' } });
    const param = await w.client.callTool({ name: 'todo', arguments: { id: 'a1' } });
    expect(param.structuredContent).toEqual({ ok: true, data: { id: 'a1' } });
    const shared = await w.client.callTool({ name: 'status', arguments: { clientId: 'notes' } });
    expect(shared.structuredContent).toEqual({ ok: true, data: 'notes ok' });
  });

  it('gets a prompt and reads skills as resources', async () => {
    const w = await world(await start());
    expect((await w.client.listPrompts()).prompts.map((p) => p.name)).toEqual(['review']);
    const prompt = await w.client.getPrompt({ name: 'review', arguments: { tone: 'kind' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Review it in a kind tone' } }]);
    // The server's guide first, then by URI: the order MCP pages them in.
    expect((await w.client.listResources()).resources.map((r) => r.uri)).toEqual(['mdp:///SKILL.md', 'mdp://notes/notes/skill.md', 'mdp://todo/docs/skill.md']);
    expect((await w.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual(['mdp://todo/topics/{topic}/skill.md']);
    expect((await w.client.readResource({ uri: 'mdp://todo/docs/skill.md' })).contents).toEqual([
      { uri: 'mdp://todo/docs/skill.md', mimeType: 'text/markdown', text: '# Todo docs' },
    ]);
    expect((await w.client.readResource({ uri: 'mdp://notes/notes/skill.md' })).contents[0]).toMatchObject({ text: '# Notes' });
    expect((await w.client.readResource({ uri: 'mdp://todo/topics/cats/skill.md' })).contents[0]).toMatchObject({ text: '# cats' });
  });

  it('callPaths reaches every client that has the path', async () => {
    const w = await world(await start());
    const result = await w.client.callTool({ name: 'callPaths', arguments: { method: 'GET', path: '/status' } });
    const results = structured(result).results as Array<{ clientId: string; ok: boolean; data: unknown }>;
    expect(results.sort((a, b) => a.clientId.localeCompare(b.clientId))).toEqual([
      { clientId: 'notes', ok: true, data: 'notes ok' },
      { clientId: 'todo', ok: true, data: 'todo ok' },
    ]);
  });

  it('every failure is an isError result: unknown client, unknown path, client error, time-out, client gone', async () => {
    const w = await world(await start());
    const call = async (args: Record<string, unknown>) => {
      const result = await w.client.callTool({ name: 'callPath', arguments: { method: 'GET', ...args } });
      expect(result.isError).toBe(true);
      return structured(result).error!;
    };
    expect(await call({ clientId: 'ghost', path: '/status' })).toMatchObject({ code: 'not_found', message: expect.stringContaining('ghost') });
    expect(await call({ clientId: 'todo', path: '/nowhere' })).toMatchObject({ code: 'not_found' });
    expect(await call({ clientId: 'todo', path: '/fail' })).toEqual({ code: 'handler_error', message: 'the page refused' });
    expect(await call({ clientId: 'todo', path: '/slow' })).toMatchObject({ code: 'timeout' });
    const ownTool = await w.client.callTool({ name: 'fail', arguments: {} });
    expect(ownTool).toMatchObject({ isError: true, structuredContent: { ok: false, error: { code: 'handler_error' } } });
    expect(await call({ clientId: 'todo', path: '/vanish' })).toMatchObject({ code: 'transport_error' });
  });

  it('bad inputs: wrong tool arguments and unknown tools are isError results; unknown prompts and resources JSON-RPC errors', async () => {
    const w = await world(await start());
    const wrong = await w.client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'GET' } });
    expect(wrong).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'bad_request', message: expect.stringContaining('Invalid arguments for callPath: path') } },
    });
    const badParam = await w.client.callTool({ name: 'todo', arguments: { id: '../x' } });
    expect(badParam).toMatchObject({ isError: true, structuredContent: { error: { code: 'bad_request' } } });
    const unknown = await w.client.callTool({ name: 'no_such_tool', arguments: {} });
    expect(unknown).toMatchObject({ isError: true, structuredContent: { error: { code: 'not_found' } } });
    await expect(w.client.getPrompt({ name: 'nope' })).rejects.toThrow(/No prompt named "nope"/);
    await expect(w.client.readResource({ uri: 'mdp://ghost/docs/skill.md' })).rejects.toThrow(/-32002/);
    await expect(w.client.readResource({ uri: 'https://example.com/x' })).rejects.toThrow(/not an MDP resource/);
  });

  it('a client registering or leaving: one list_changed per kind it touches', async () => {
    const w = await world(await start());
    const before = { ...w.notes.counts };
    // A client with a skill only: resources change, tools and prompts do not.
    const extra = await TestClient.connect(w.ws);
    extra.send({ type: 'registerClient', client: { id: 'extra', name: 'Extra', paths: [{ type: 'skill', path: '/extra/skill.md' }] } });
    await w.notes.reach('resources', before.resources + 1);
    // The todo page leaves: every kind changes, once.
    await w.socket.close();
    await Promise.all([
      w.notes.reach('tools', before.tools + 1),
      w.notes.reach('prompts', before.prompts + 1),
      w.notes.reach('resources', before.resources + 2),
    ]);
    // A later change shows no duplicate came in between.
    await extra.close();
    await w.notes.reach('resources', before.resources + 3);
    expect(w.notes.counts).toEqual({ tools: before.tools + 1, prompts: before.prompts + 1, resources: before.resources + 3 });
    expect((await w.client.listTools()).tools.map((t) => t.name)).toEqual(['listClients', 'listPaths', 'callPath', 'callPaths', 'status']);
  });
});
