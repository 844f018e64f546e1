/**
 * MCP tasks (2025-11-25): task-augmented `callPath` and catalog tools, answered by the SDK's own
 * `tasks/*` handlers from the bridge's bounded store; driven by the SDK's Client over an in-memory
 * transport, on a fake host and a manual clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  LoggingMessageNotificationSchema,
  ResultSchema,
  TaskStatusNotificationSchema,
  type CallToolResult,
  type LoggingMessageNotification,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import type { CallPathRequest, CallResult } from '@mdp/protocol';
import type { CallOptions } from '@mdp/core';
import { silentLogger } from '@mdp/core';
import { endpoint, manualClock, settle, type ManualClock } from '@mdp/test-kit';
import { createMcpBridge, type McpBridge, type McpBridgeOptions } from '../src/bridge.js';
import { REFRESH_MIN_INTERVAL_MS } from '../src/catalog-driver.js';
import { MCP_TASK_DEFAULTS } from '../src/lite.js';
import { TASKS_PAGE_SIZE, TaskBook, taskLimits, taskTtl } from '../src/tasks.js';
import { FakeHost, listed } from './fakes.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

/** Wait for `check`, a turn of the event loop at a time (everything it waits on is queued work here). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setImmediate(resolve));
}

/** Poll `taskId` until it has `status`. */
async function reach(client: Client, taskId: string, status: Task['status']): Promise<void> {
  while ((await client.experimental.tasks.getTask(taskId)).status !== status) await settle();
}

interface Agent {
  client: Client;
  statuses: Task[];
  logs: LoggingMessageNotification['params'][];
}

/** A host whose calls wait until the test answers them, or until their signal aborts (as the router ends them). */
class GatedHost extends FakeHost {
  readonly gates: Array<{ request: CallPathRequest; options: CallOptions; answer: (result: CallResult) => void }> = [];

  override async callPath(request: CallPathRequest, options: CallOptions = {}): Promise<CallResult> {
    this.calls.push({ request, options });
    return new Promise((resolve) => {
      this.gates.push({ request, options, answer: resolve });
      options.signal?.addEventListener('abort', () => resolve({ ok: false, source: 'server', error: { code: 'transport_error', message: 'caller gone' } }), {
        once: true,
      });
    });
  }
}

interface Setup {
  host: GatedHost;
  clock: ManualClock;
  bridge: McpBridge;
  agent(principal?: string): Promise<Agent>;
}

// A short poll interval: the SDK's client and its tasks/result wait on real timers of that length.
function setup(options: Partial<McpBridgeOptions> = {}): Setup {
  const host = new GatedHost();
  host.clients = [listed('todo', [endpoint('/slow', 'GET'), endpoint('/todos', 'POST')])];
  const clock = manualClock(0);
  const bridge = createMcpBridge({ host, clock, ...options, tasks: { pollIntervalMs: 5, ...options.tasks } });
  open.push(bridge);
  return {
    host,
    clock,
    bridge,
    async agent(principal) {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await bridge.connect(serverSide, principal === undefined ? {} : { viewer: { principal } });
      const client = new Client({ name: 'test-agent', version: '1.0.0' });
      const statuses: Task[] = [];
      const logs: Agent['logs'] = [];
      client.setNotificationHandler(TaskStatusNotificationSchema, (note) => void statuses.push(note.params));
      client.setNotificationHandler(LoggingMessageNotificationSchema, (note) => void logs.push(note.params));
      await client.connect(clientSide);
      open.push(client);
      return { client, statuses, logs };
    },
  };
}

const slow = { clientId: 'todo', method: 'GET', path: '/slow' };

/** Start `callPath` (or `name`) as a task; resolves with the task the server made. */
async function startTask(client: Client, args: Record<string, unknown> = slow, name = 'callPath', ttl?: number): Promise<Task> {
  const { task } = await client.request(
    { method: 'tools/call', params: { name, arguments: args, task: ttl === undefined ? {} : { ttl } } },
    CreateTaskResultSchema,
  );
  return task;
}

describe('task-augmented calls', () => {
  it('declares tasks; callPath and the catalog tools may run as tasks, the listings and callPaths not', async () => {
    const s = setup();
    const { client } = await s.agent();
    expect(client.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    await s.clock.advanceSettled(REFRESH_MIN_INTERVAL_MS);
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    expect(support).toEqual({ listClients: undefined, listPaths: undefined, callPath: 'optional', callPaths: undefined, slow: 'optional', todos: 'optional' });
  });

  it('a task is answered at once; its call has the task time-out; polled, it completes and tasks/result gives the tool result', async () => {
    const s = setup();
    const agent = await s.agent();
    const task = await startTask(agent.client);
    expect(task).toEqual({
      taskId: expect.any(String),
      status: 'working',
      ttl: MCP_TASK_DEFAULTS.timeoutMs + MCP_TASK_DEFAULTS.keepMs,
      createdAt: new Date(s.clock.wallNow()).toISOString(),
      lastUpdatedAt: new Date(s.clock.wallNow()).toISOString(),
      pollInterval: 5,
    });
    await until(() => s.host.gates.length === 1);
    expect(s.host.gates[0]!.options).toMatchObject({ route: 'mcp', timeoutMs: MCP_TASK_DEFAULTS.timeoutMs });
    expect(await agent.client.experimental.tasks.getTask(task.taskId)).toMatchObject({ taskId: task.taskId, status: 'working' });
    expect((await agent.client.experimental.tasks.listTasks()).tasks.map((t) => [t.taskId, t.status])).toEqual([[task.taskId, 'working']]);

    s.clock.advance(1500);
    s.host.gates[0]!.answer({ ok: true, data: { done: 1 } });
    await until(() => agent.statuses.length === 1);
    // The SDK tells the agent (notifications/tasks/status), without the related-task metadata.
    expect(agent.statuses[0]).toMatchObject({ taskId: task.taskId, status: 'completed', lastUpdatedAt: new Date(s.clock.wallNow()).toISOString() });
    expect(await agent.client.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
    const result = await agent.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toEqual({ ok: true, data: { done: 1 } });
    expect(result._meta).toEqual({ 'io.modelcontextprotocol/related-task': { taskId: task.taskId } });
    // Fetched again: the same result, until it expires.
    expect((await agent.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).structuredContent).toEqual({ ok: true, data: { done: 1 } });
  });

  it("the SDK client's callToolStream: task created, polled, result", async () => {
    const s = setup();
    const { client } = await s.agent();
    await s.clock.advanceSettled(REFRESH_MIN_INTERVAL_MS);
    await client.listTools();
    s.host.answer = () => ({ ok: true, data: 'added' });
    const seen: string[] = [];
    const answering = until(() => s.host.gates.length === 1).then(() => s.host.gates[0]!.answer({ ok: true, data: 'added' }));
    let result: CallToolResult | undefined;
    for await (const message of client.experimental.tasks.callToolStream({ name: 'todos', arguments: { title: 'milk' } }, CallToolResultSchema, {
      task: { ttl: 60_000 },
    })) {
      seen.push(message.type);
      if (message.type === 'result') result = message.result as CallToolResult;
      if (message.type === 'error') throw message.error;
    }
    await answering;
    expect(seen[0]).toBe('taskCreated');
    expect(seen.at(-1)).toBe('result');
    expect(result?.structuredContent).toEqual({ ok: true, data: 'added' });
    expect(s.host.gates[0]!.request).toMatchObject({ clientId: 'todo', method: 'POST', path: '/todos', body: { title: 'milk' } });
  });

  it("tasks/result waits for a working task's end", async () => {
    const s = setup();
    const { client } = await s.agent();
    const task = await startTask(client);
    await until(() => s.host.gates.length === 1);
    let settled = false;
    const waiting = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).finally(() => (settled = true));
    await settle();
    expect(settled).toBe(false);
    s.host.gates[0]!.answer({ ok: true, data: 'late but fine' });
    expect((await waiting).structuredContent).toEqual({ ok: true, data: 'late but fine' });
  });

  it('a tool error makes the task failed; tasks/result gives the error result; the session hears call_failed', async () => {
    const s = setup();
    const agent = await s.agent();
    await agent.client.setLoggingLevel('warning');
    const task = await startTask(agent.client);
    await until(() => s.host.gates.length === 1);
    s.host.gates[0]!.answer({ ok: false, source: 'client', error: { code: 'handler_error', message: 'the page refused' } });
    await until(() => agent.statuses.length === 1);
    expect(agent.statuses[0]!.status).toBe('failed');
    const result = await agent.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ ok: false, error: { code: 'handler_error' } });
    await until(() => agent.logs.length === 1);
    expect(agent.logs[0]).toMatchObject({ level: 'warning', logger: 'mdp.calls', data: { event: 'call_failed', what: 'tool callPath' } });
  });

  it('bad arguments and an unknown tool are failed tasks too (as their calls would be tool errors)', async () => {
    const s = setup();
    const { client } = await s.agent();
    const bad = await startTask(client, { clientId: 'todo' });
    const unknown = await startTask(client, {}, 'no_such_tool');
    for (const task of [bad, unknown]) await reach(client, task.taskId, 'failed');
    expect((await client.experimental.tasks.getTaskResult(bad.taskId, CallToolResultSchema)).structuredContent).toMatchObject({
      error: { code: 'bad_request' },
    });
    expect((await client.experimental.tasks.getTaskResult(unknown.taskId, CallToolResultSchema)).structuredContent).toMatchObject({
      error: { code: 'not_found' },
    });
    expect(s.host.calls).toEqual([]);
  });

  it('the listings and callPaths refuse task augmentation with -32601', async () => {
    const s = setup();
    const { client } = await s.agent();
    for (const name of ['listClients', 'listPaths', 'callPaths']) {
      await expect(startTask(client, { method: 'GET', path: '/slow' }, name)).rejects.toMatchObject({ code: -32601 });
    }
    expect((await client.experimental.tasks.listTasks()).tasks).toEqual([]);
  });

  it('an unknown task id is -32602 for tasks/get, tasks/result and tasks/cancel', async () => {
    const s = setup();
    const { client } = await s.agent();
    await expect(client.experimental.tasks.getTask('nope')).rejects.toMatchObject({ code: -32602 });
    await expect(client.experimental.tasks.getTaskResult('nope', CallToolResultSchema)).rejects.toMatchObject({ code: -32602 });
    await expect(client.experimental.tasks.cancelTask('nope')).rejects.toMatchObject({ code: -32602 });
  });

  it('malformed task params are -32602 naming the field, not an internal error', async () => {
    const s = setup();
    const { client } = await s.agent();
    const ask = (method: string, params: unknown) => client.request({ method, params } as never, ResultSchema);
    const cases: Array<[string, unknown, string]> = [
      ['tasks/get', { taskId: 5 }, 'taskId'],
      ['tasks/get', {}, 'taskId'],
      ['tasks/result', { taskId: null }, 'taskId'],
      ['tasks/cancel', { taskId: ['a'] }, 'taskId'],
      ['tasks/list', { cursor: 5 }, 'cursor'],
      ['tools/call', { name: 'callPath', arguments: slow, task: 'soon' }, 'task'],
      ['tools/call', { name: 'callPath', arguments: slow, task: { ttl: 'long' } }, 'task.ttl'],
      ['tools/call', { name: 'callPath', arguments: slow, task: { ttl: null } }, 'task.ttl'],
    ];
    for (const [method, params, field] of cases) {
      const refused = await ask(method, params).then(
        () => undefined,
        (error: { code?: number; message: string }) => error,
      );
      expect(refused, `${method} ${JSON.stringify(params)}`).toMatchObject({ code: -32602, message: expect.stringContaining(`${method} params: ${field}:`) });
    }
    // Nothing was started, and the session still answers.
    expect(s.host.gates).toEqual([]);
    expect((await client.experimental.tasks.listTasks()).tasks).toEqual([]);
  });
});

describe('cancelling a task', () => {
  it('ends its MDP call at once; the task stays cancelled, its late answer is dropped, tasks/result is -32602', async () => {
    const s = setup();
    const { client } = await s.agent();
    const task = await startTask(client);
    await until(() => s.host.gates.length === 1);
    const signal = s.host.gates[0]!.options.signal!;
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    expect(signal.aborted).toBe(true);
    await settle();
    s.host.gates[0]!.answer({ ok: true, data: 'too late' });
    await settle();
    expect(await client.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'cancelled' });
    await expect(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/was cancelled/),
    });
    // A task in a terminal status cannot be cancelled (MCP: -32602).
    await expect(client.experimental.tasks.cancelTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
  });

  it("another session cannot see, fetch or cancel a session's task", async () => {
    const s = setup();
    const mine = await s.agent();
    const theirs = await s.agent();
    const task = await startTask(mine.client);
    await expect(theirs.client.experimental.tasks.getTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
    await expect(theirs.client.experimental.tasks.cancelTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
    expect((await theirs.client.experimental.tasks.listTasks()).tasks).toEqual([]);
    expect(await mine.client.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'working' });
  });
});

describe('task lifetime and bounds', () => {
  it('ttl: at least the time-out plus keepMs, at most maxTtlMs; a task is dropped when it has passed', async () => {
    const limits = taskLimits({ timeoutMs: 1000, keepMs: 500, maxTtlMs: 10_000 });
    expect(taskTtl(undefined, limits)).toBe(1500);
    expect(taskTtl(null, limits)).toBe(1500);
    expect(taskTtl(10, limits)).toBe(1500);
    expect(taskTtl(5000.4, limits)).toBe(5000);
    expect(taskTtl(1e12, limits)).toBe(10_000);
    expect(taskTtl(1e12, taskLimits({ timeoutMs: 2_147_480_000, maxTtlMs: 1000 }))).toBe(2_147_483_647);

    const s = setup({ tasks: { timeoutMs: 1000, keepMs: 500, maxTtlMs: 10_000 } });
    const { client } = await s.agent();
    const task = await startTask(client, slow, 'callPath', 3000);
    expect(task.ttl).toBe(3000);
    await until(() => s.host.gates.length === 1);
    s.host.gates[0]!.answer({ ok: true, data: 1 });
    await s.clock.advanceSettled(2999);
    expect(await client.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
    await s.clock.advanceSettled(1);
    await expect(client.experimental.tasks.getTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
  });

  it('a task still working when its ttl passes is dropped and its call ended', async () => {
    const s = setup({ tasks: { timeoutMs: 1000, keepMs: 0 } });
    const { client } = await s.agent();
    const task = await startTask(client);
    await until(() => s.host.gates.length === 1);
    await s.clock.advanceSettled(1000);
    expect(s.host.gates[0]!.options.signal!.aborted).toBe(true);
    await expect(client.experimental.tasks.getTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
    expect(s.clock.pending()).toBe(0);
  });

  it('per session: past maxPerSession a new task takes the place of one done with, else it is refused with -32600', async () => {
    const s = setup({ tasks: { maxPerSession: 2 } });
    const { client } = await s.agent();
    const first = await startTask(client);
    const second = await startTask(client);
    await until(() => s.host.gates.length === 2);
    await expect(startTask(client)).rejects.toMatchObject({ code: -32600, message: expect.stringMatching(/the most one session may \(2\)/) });
    // Finished but not fetched: still not done with.
    s.host.gates[0]!.answer({ ok: true, data: 1 });
    await reach(client, first.taskId, 'completed');
    await expect(startTask(client)).rejects.toMatchObject({ code: -32600 });
    await client.experimental.tasks.getTaskResult(first.taskId, CallToolResultSchema);
    const third = await startTask(client);
    await expect(client.experimental.tasks.getTask(first.taskId)).rejects.toMatchObject({ code: -32602 });
    // A cancelled task is done with too.
    await client.experimental.tasks.cancelTask(second.taskId);
    const fourth = await startTask(client);
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([third.taskId, fourth.taskId]);
    // A plain call is never refused.
    s.host.callPath = FakeHost.prototype.callPath;
    expect((await client.callTool({ name: 'callPath', arguments: slow })).isError).toBeFalsy();
  });

  it("per principal: a principal's sessions together hold at most maxPerPrincipal; another principal is not counted", async () => {
    const s = setup({ tasks: { maxPerSession: 10, maxPerPrincipal: 3 } });
    const a1 = await s.agent('alice');
    const a2 = await s.agent('alice');
    const bob = await s.agent('bob');
    const anonymous = await s.agent();
    const first = await startTask(a1.client);
    await startTask(a1.client);
    await startTask(a2.client);
    await expect(startTask(a2.client)).rejects.toMatchObject({ code: -32600, message: expect.stringMatching(/the most one principal may \(3\)/) });
    for (let i = 0; i < 3; i += 1) await startTask(bob.client);
    await startTask(anonymous.client);
    // One of alice's tasks done with (in her other session) makes room.
    await a1.client.experimental.tasks.cancelTask(first.taskId);
    await startTask(a2.client);
    await expect(a1.client.experimental.tasks.getTask(first.taskId)).rejects.toMatchObject({ code: -32602 });
  });

  it("a session's end ends its tasks: their calls end at once, the principal's count frees", async () => {
    const s = setup({ tasks: { maxPerPrincipal: 2 } });
    const { client } = await s.agent('carol');
    await startTask(client);
    await startTask(client);
    await until(() => s.host.gates.length === 2);
    await client.close();
    await until(() => s.host.gates.every((gate) => gate.options.signal!.aborted));
    expect(s.bridge.sessions).toBe(0);
    expect(s.clock.pending()).toBe(0);
    // Carol's next session starts with her whole quota.
    const again = await s.agent('carol');
    await startTask(again.client);
    await startTask(again.client);
  });

  it('the book counts per principal and forgets a closed session; a closed store starts no task', async () => {
    const clock = manualClock(0);
    let n = 0;
    const book = new TaskBook({ clock, logger: silentLogger, newId: () => `t${(n += 1)}` });
    const one = book.open('p');
    const two = book.open('p');
    await one.createTask({});
    await two.createTask({ ttl: 1 });
    expect(book.held('p')).toBe(2);
    expect(book.held('q')).toBe(0);
    const signal = one.signal('t1')!;
    one.close();
    one.close();
    expect(signal.aborted).toBe(true);
    expect(book.held('p')).toBe(1);
    await expect(one.createTask({})).rejects.toThrow(/closing/);
    two.close();
    expect(clock.pending()).toBe(0);
  });

  it('tasks/list pages by the last task sent; a cursor it did not make is -32602', async () => {
    const s = setup({ tasks: { maxPerSession: TASKS_PAGE_SIZE + 5, maxPerPrincipal: 1000 } });
    const { client } = await s.agent();
    const ids: string[] = [];
    for (let i = 0; i < TASKS_PAGE_SIZE + 5; i += 1) ids.push((await startTask(client)).taskId);
    const first = await client.experimental.tasks.listTasks();
    expect(first.tasks.map((t) => t.taskId)).toEqual(ids.slice(0, TASKS_PAGE_SIZE));
    expect(first.nextCursor).toBeDefined();
    const second = await client.experimental.tasks.listTasks(first.nextCursor);
    expect(second.tasks.map((t) => t.taskId)).toEqual(ids.slice(TASKS_PAGE_SIZE));
    expect(second.nextCursor).toBeUndefined();
    await expect(client.experimental.tasks.listTasks('made-up')).rejects.toMatchObject({ code: -32602 });
  });

  it('limits are checked', () => {
    expect(() => taskLimits({ maxPerSession: 0 })).toThrow(/tasks.maxPerSession/);
    expect(() => taskLimits({ timeoutMs: 1.5 })).toThrow(RangeError);
    expect(() => createMcpBridge({ host: new FakeHost(), tasks: { maxPerPrincipal: -1 } })).toThrow(/maxPerPrincipal/);
    expect(taskLimits({ keepMs: 0 }).keepMs).toBe(0);
  });
});
