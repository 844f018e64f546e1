/**
 * MCP tasks (2025-11-25) end to end on both transports: the SDK's own Client drives a real server
 * (the built binary over stdio; in process over Streamable HTTP) whose MDP clients are real ones,
 * "todo" on the websocket and "notes" on the HTTP loop. A task's call outlives the invocation
 * time-out; tasks are polled, fetched, cancelled, refused past their bound, and end with the MDP
 * client that leaves or the agent that does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, TaskStatusNotificationSchema, type Task } from '@modelcontextprotocol/sdk/types.js';
import type { CallClientMessage, ClientDescriptor, PathDescriptor } from '@mdp/protocol';
import { MCP_TASK_DEFAULTS } from '@mdp/mcp-bridge/lite';
import { Inbox, LoopTestClient, NO_ANSWER, TestClient, stopAll, track } from '@mdp/test-kit';
import { httpAgent, stdioAgent, type Agent } from './mcp-harness.js';

afterEach(stopAll);

// A plain call's time: long enough for a quick answer on a busy machine, short enough to wait out once.
const INVOCATION_MS = 2000;

const todo: ClientDescriptor = {
  id: 'todo',
  name: 'Todo app',
  paths: [
    { type: 'endpoint', method: 'GET', path: '/slow' },
    { type: 'endpoint', method: 'GET', path: '/status' },
  ] as PathDescriptor[],
};
const notes: ClientDescriptor = { id: 'notes', name: 'Notes', paths: [{ type: 'endpoint', method: 'GET', path: '/slow' }] as PathDescriptor[] };

interface World extends Agent {
  socket: TestClient;
  loop: LoopTestClient;
  /** Calls the todo page got. */
  calls: Inbox<CallClientMessage>;
  /** The agent's notifications/tasks/status. */
  statuses: Inbox<Task>;
}

/** Both MDP clients registered (each answers /slow never), and listed to the agent. */
async function world(agent: Agent): Promise<World> {
  const statuses = new Inbox<Task>();
  agent.client.setNotificationHandler(TaskStatusNotificationSchema, (note) => statuses.push(note.params));
  const calls = new Inbox<CallClientMessage>();
  const socket = await TestClient.connect(agent.ws);
  socket.handler = (call) => {
    calls.push(call);
    return call.path === '/slow' ? NO_ANSWER : 'todo ok';
  };
  socket.send({ type: 'registerClient', client: todo });
  const loop = await LoopTestClient.register(`${agent.http}/mdp/http-loop`, notes);
  loop.handler = () => NO_ANSWER;
  for (;;) {
    const { tools } = await agent.client.listTools();
    const slow = tools.find((t) => t.name === 'slow');
    if ((slow?.inputSchema.properties?.clientId as { enum?: string[] } | undefined)?.enum?.length === 2) break;
    await agent.notes.reach('tools', agent.notes.counts.tools + 1);
  }
  return { ...agent, socket, loop, calls, statuses };
}

/** Start tool `name` as a task. */
async function startTask(client: Client, name: string, args: Record<string, unknown>): Promise<Task> {
  return (await client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } }, CreateTaskResultSchema)).task;
}

/** The task once the server said it left `working` (notifications/tasks/status), as tasks/get tells it. */
async function ended(w: World, taskId: string): Promise<Task> {
  const note = await w.statuses.seen((task) => task.taskId === taskId && task.status !== 'working');
  const task = await w.client.experimental.tasks.getTask(taskId);
  expect(task).toMatchObject({ status: note.status });
  return task;
}

const todoSlow = { clientId: 'todo', method: 'GET', path: '/slow' };
const todoStatus = { clientId: 'todo', method: 'GET', path: '/status' };

describe.each([
  [
    'stdio',
    (taskTimeoutMs?: number) =>
      stdioAgent([
        '--invocation-timeout-ms',
        String(INVOCATION_MS),
        '--max-pending-calls',
        '1',
        ...(taskTimeoutMs === undefined ? [] : ['--mcp-task-timeout-ms', String(taskTimeoutMs)]),
      ]),
  ],
  [
    'Streamable HTTP',
    (taskTimeoutMs?: number) =>
      httpAgent({ invocationTimeoutMs: INVOCATION_MS, maxPendingCalls: 1, ...(taskTimeoutMs === undefined ? {} : { mcp: { taskTimeoutMs } }) }),
  ],
] as const)('MCP tasks over %s', (transport, start) => {
  it('a task outlives the invocation time-out: created at once, polled while working, its result fetched once the client answers', async () => {
    const w = await world(await start());
    const task = await startTask(w.client, 'callPath', todoSlow);
    expect(task).toMatchObject({
      status: 'working',
      ttl: MCP_TASK_DEFAULTS.timeoutMs + MCP_TASK_DEFAULTS.keepMs,
      pollInterval: MCP_TASK_DEFAULTS.pollIntervalMs,
    });
    const sent = await w.calls.seen((c) => c.path === '/slow');
    // A plain call, made after the task's, times out at the invocation time-out…
    const plain = await w.client.callTool({ name: 'callPath', arguments: { clientId: 'notes', method: 'GET', path: '/slow' } });
    expect(plain.structuredContent).toMatchObject({ ok: false, error: { code: 'timeout' } });
    // …while the task's call is still waiting for its client.
    expect(await w.client.experimental.tasks.getTask(task.taskId)).toMatchObject({ taskId: task.taskId, status: 'working' });
    expect((await w.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
    w.socket.send({ type: 'callClientResult', requestId: sent.requestId, ok: true, data: { done: true } });
    expect(await ended(w, task.taskId)).toMatchObject({ status: 'completed' });
    const result = await w.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toEqual({ ok: true, data: { done: true } });
    expect(result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId: task.taskId });
  });

  it('an unknown task id is invalid params for tasks/get, tasks/result and tasks/cancel; callPaths does not run as a task', async () => {
    const w = await world(await start());
    await expect(w.client.experimental.tasks.getTask('no-such-task')).rejects.toMatchObject({ code: -32602 });
    await expect(w.client.experimental.tasks.getTaskResult('no-such-task', CallToolResultSchema)).rejects.toMatchObject({ code: -32602 });
    await expect(w.client.experimental.tasks.cancelTask('no-such-task')).rejects.toMatchObject({ code: -32602 });
    await expect(startTask(w.client, 'callPaths', { method: 'GET', path: '/slow' })).rejects.toMatchObject({ code: -32601 });
  });

  it("a cancelled task ends its MDP call at once (its pending slot is free), stays cancelled, and has no result; the client's late answer is dropped", async () => {
    const w = await world(await start());
    const task = await startTask(w.client, 'slow', { clientId: 'todo' });
    const sent = await w.calls.seen((c) => c.path === '/slow');
    // One call may wait per client (--max-pending-calls 1): the task's holds it.
    expect((await w.client.callTool({ name: 'callPath', arguments: todoStatus })).structuredContent).toMatchObject({ ok: false, error: { code: 'not_ready' } });
    expect(await w.client.experimental.tasks.cancelTask(task.taskId)).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    expect((await w.client.callTool({ name: 'callPath', arguments: todoStatus })).structuredContent).toEqual({ ok: true, data: 'todo ok' });
    w.socket.send({ type: 'callClientResult', requestId: sent.requestId, ok: true, data: 'too late' });
    expect((await w.client.callTool({ name: 'callPath', arguments: todoStatus })).structuredContent).toEqual({ ok: true, data: 'todo ok' });
    expect(await w.client.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'cancelled' });
    await expect(w.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).rejects.toMatchObject({ code: -32602 });
    await expect(w.client.experimental.tasks.cancelTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
  });

  it(`a session holds at most ${MCP_TASK_DEFAULTS.maxPerSession} tasks: past it -32600, until one is done with`, async () => {
    const w = await world(await start());
    const tasks: Task[] = [];
    // The first holds todo's one pending slot; the others fail at once (not_ready) and count until fetched.
    for (let i = 0; i < MCP_TASK_DEFAULTS.maxPerSession; i += 1) tasks.push(await startTask(w.client, 'callPath', todoSlow));
    await expect(startTask(w.client, 'callPath', todoSlow)).rejects.toMatchObject({
      code: -32600,
      message: expect.stringContaining(`the most one session may (${MCP_TASK_DEFAULTS.maxPerSession})`),
    });
    const last = tasks.at(-1)!;
    expect(await ended(w, last.taskId)).toMatchObject({ status: 'failed' });
    expect((await w.client.experimental.tasks.getTaskResult(last.taskId, CallToolResultSchema)).structuredContent).toMatchObject({
      ok: false,
      error: { code: 'not_ready' },
    });
    // Fetched, it is done with: the next task takes its place.
    const next = await startTask(w.client, 'callPath', { clientId: 'notes', method: 'GET', path: '/slow' });
    expect(next.status).toBe('working');
    await expect(w.client.experimental.tasks.getTask(last.taskId)).rejects.toMatchObject({ code: -32602 });
  });

  it('the MDP client leaving during a task fails the task with transport_error', async () => {
    const w = await world(await start());
    const task = await startTask(w.client, 'callPath', todoSlow);
    await w.calls.seen((c) => c.path === '/slow');
    await w.socket.close();
    expect(await ended(w, task.taskId)).toMatchObject({ status: 'failed' });
    const result = await w.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ ok: false, error: { code: 'transport_error' } });
  });

  it('--mcp-task-timeout-ms bounds a task: its call ends with timeout', async () => {
    const w = await world(await start(INVOCATION_MS + 500));
    const task = await startTask(w.client, 'callPath', todoSlow);
    expect(await ended(w, task.taskId)).toMatchObject({ status: 'failed' });
    expect((await w.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).structuredContent).toMatchObject({
      ok: false,
      error: { code: 'timeout', message: expect.stringContaining(`${INVOCATION_MS + 500} ms`) },
    });
  });

  it.runIf(transport === 'Streamable HTTP')('the agent leaving (its session ended) ends its tasks: their MDP calls end, their slots free', async () => {
    const w = await world(await start());
    await startTask(w.client, 'callPath', todoSlow);
    await w.calls.seen((c) => c.path === '/slow');
    const other = new Client({ name: 'other-agent', version: '1.0.0' });
    await other.connect(new StreamableHTTPClientTransport(new URL(`${w.http}/mcp`)));
    track({ close: () => other.close().catch(() => undefined) });
    expect((await other.callTool({ name: 'callPath', arguments: todoStatus })).structuredContent).toMatchObject({ ok: false, error: { code: 'not_ready' } });
    await (w.client.transport as StreamableHTTPClientTransport).terminateSession();
    await w.client.close();
    expect((await other.callTool({ name: 'callPath', arguments: todoStatus })).structuredContent).toEqual({ ok: true, data: 'todo ok' });
  });
});

describe('MCP tasks per principal', () => {
  it("the sessions of one credential share its bound; another credential's are its own", async () => {
    const agent = await httpAgent(
      { authTokens: ['alice-token', 'bob-token'], mcp: { maxTasksPerSession: 10, maxTasksPerPrincipal: 3 } },
      { headers: { authorization: 'Bearer alice-token' } },
    );
    const connect = async (token: string) => {
      const client = new Client({ name: `agent-${token}`, version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${agent.http}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      track({ close: () => client.close().catch(() => undefined) });
      return client;
    };
    const alice2 = await connect('alice-token');
    const bob = await connect('bob-token');
    // No MDP client is needed to count: a task whose call fails at once (not_found) is held until fetched.
    const nobody = { clientId: 'nobody', method: 'GET', path: '/x' };
    await startTask(agent.client, 'callPath', nobody);
    await startTask(agent.client, 'callPath', nobody);
    await startTask(alice2, 'callPath', nobody);
    await expect(startTask(alice2, 'callPath', nobody)).rejects.toMatchObject({
      code: -32600,
      message: expect.stringContaining('the most one principal may (3)'),
    });
    expect((await startTask(bob, 'callPath', nobody)).status).toBe('working');
    // Each session sees its own tasks only.
    expect((await bob.experimental.tasks.listTasks()).tasks).toHaveLength(1);
    expect((await alice2.experimental.tasks.listTasks()).tasks).toHaveLength(1);
  });
});
