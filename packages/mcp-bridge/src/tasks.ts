/**
 * MCP tasks (2025-11-25, SPEC §13.6) for the bridge: the store behind the SDK's own `tasks/get`,
 * `tasks/result`, `tasks/list` and `tasks/cancel` handlers (its experimental `TaskStore`), held in
 * memory and bounded.
 *
 * - One store per session (`SessionTasks`): a task is found only by the session that made it, and
 *   ends with it (its call is ended at once, its state dropped).
 * - Bounds: `maxPerSession` tasks per session and `maxPerPrincipal` for the sessions of one
 *   principal together (the `TaskBook` counts them). A task counts from its creation until it
 *   expires. A new one past either bound first takes the place of the oldest task that is done with
 *   (cancelled, or finished and its result fetched); with none such it is refused with `-32600`.
 * - `ttl`: what the requestor asks for, but never less than the call's time-out plus `keepMs` (a
 *   task is never dropped while its call may still answer, and its result is kept a while after)
 *   nor more than `maxTtlMs`. When it has passed, the task is dropped whatever its status.
 * - Cancelling (`tasks/cancel` sets `cancelled`) aborts the task's signal: the MDP call ends at once,
 *   its pending slot is freed and the client's late answer dropped. The task keeps no result;
 *   `tasks/result` of it is `-32602`.
 *
 * Timers are the injected clock's (STYLE §6): expiry in tests is driven by a manual clock.
 */
import { randomUUID } from 'node:crypto';
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { isTerminal } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { ErrorCode, McpError, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import { MAX_TIMER_MS, TimerSet, type Clock, type Logger } from '@mdp/core';
import { MCP_TASK_DEFAULTS } from './lite.js';

export interface TaskLimits {
  /** Time the client has to answer a call made as a task, ms. */
  readonly timeoutMs: number;
  /** Tasks one session holds at once (working, or finished and not expired). */
  readonly maxPerSession: number;
  /** Tasks the sessions of one principal hold at once, together. */
  readonly maxPerPrincipal: number;
  /** The `pollInterval` tasks suggest, ms. */
  readonly pollIntervalMs: number;
  /** A task is kept at least this long past the latest its call can end, ms. */
  readonly keepMs: number;
  /** The longest `ttl` a requestor may ask for, ms (never below `timeoutMs + keepMs`). */
  readonly maxTtlMs: number;
}

/** Most tasks in one page of `tasks/list`. */
export const TASKS_PAGE_SIZE = 100;

/** `limits` with the defaults filled in, checked (a bad value is a RangeError naming it). */
export function taskLimits(limits: Partial<TaskLimits> = {}): TaskLimits {
  const full = { ...MCP_TASK_DEFAULTS, ...limits };
  for (const [name, value] of Object.entries(full)) {
    const least = name === 'keepMs' ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < least || value > MAX_TIMER_MS) {
      throw new RangeError(`tasks.${name} must be a whole number from ${least} to ${MAX_TIMER_MS}, not ${String(value)}`);
    }
  }
  return full;
}

/** The `ttl` a task gets when `requested` is asked for: within [timeoutMs + keepMs, max(that, maxTtlMs)], and a timer's range. */
export function taskTtl(requested: number | null | undefined, limits: TaskLimits): number {
  const least = Math.min(MAX_TIMER_MS, limits.timeoutMs + limits.keepMs);
  const most = Math.min(MAX_TIMER_MS, Math.max(least, limits.maxTtlMs));
  if (typeof requested !== 'number' || !Number.isFinite(requested)) return least;
  return Math.min(most, Math.max(least, Math.round(requested)));
}

interface Held {
  readonly task: Task;
  /** Monotonic time of creation (the eviction order). */
  readonly created: number;
  result?: Result;
  /** `tasks/result` has been answered with its result. */
  fetched: boolean;
  readonly abort: AbortController;
  /** Clears its expiry timer. */
  readonly unschedule: () => void;
}

export interface TaskBookOptions {
  readonly limits?: Partial<TaskLimits>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** A new task id (default a random UUID). */
  readonly newId?: () => string;
}

/** Every session's tasks, counted per principal. */
export class TaskBook {
  readonly limits: TaskLimits;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly newId: () => string;
  private readonly principals = new Map<string, Set<SessionTasks>>();

  constructor(options: TaskBookOptions) {
    this.limits = taskLimits(options.limits);
    this.clock = options.clock;
    this.logger = options.logger;
    this.newId = options.newId ?? randomUUID;
  }

  /** The store of a new session of `principal` ('' for none). */
  open(principal: string): SessionTasks {
    const session = new SessionTasks(this, principal);
    let sessions = this.principals.get(principal);
    if (!sessions) this.principals.set(principal, (sessions = new Set()));
    sessions.add(session);
    return session;
  }

  /** Tasks the sessions of `principal` hold. */
  held(principal: string): number {
    let count = 0;
    for (const session of this.principals.get(principal) ?? []) count += session.size;
    return count;
  }

  /** @internal The session ended. */
  forget(session: SessionTasks): void {
    const sessions = this.principals.get(session.principal);
    if (!sessions?.delete(session)) return;
    if (sessions.size === 0) this.principals.delete(session.principal);
  }

  /** @internal Room for one more task of `session`, by dropping tasks done with; else the refusal. */
  makeRoom(session: SessionTasks): void {
    const { maxPerSession, maxPerPrincipal } = this.limits;
    if (session.size >= maxPerSession && !session.dropOldestDone()) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        `This session holds ${session.size} tasks, the most one session may (${maxPerSession}): none of them is done with. ` +
          'Fetch the results of finished ones (tasks/result), cancel one (tasks/cancel), or call without "task"',
      );
    }
    const sessions = this.principals.get(session.principal) ?? new Set<SessionTasks>();
    while (this.held(session.principal) >= maxPerPrincipal) {
      let oldest: { session: SessionTasks; created: number } | undefined;
      for (const other of sessions) {
        const created = other.oldestDone();
        if (created !== undefined && (oldest === undefined || created < oldest.created)) oldest = { session: other, created };
      }
      if (!oldest) {
        throw new McpError(
          ErrorCode.InvalidRequest,
          `Your sessions hold ${this.held(session.principal)} tasks, the most one principal may (${maxPerPrincipal}): none of them is done with. ` +
            'Fetch the results of finished ones (tasks/result), cancel one (tasks/cancel), or call without "task"',
        );
      }
      oldest.session.dropOldestDone();
    }
  }
}

/**
 * One session's tasks: the SDK's `TaskStore` (its `sessionId` arguments are ignored: the store is
 * the session's own), plus the signal each task's call runs under.
 */
export class SessionTasks implements TaskStore {
  private readonly held = new Map<string, Held>();
  private readonly timers: TimerSet;
  private closed = false;

  constructor(
    private readonly book: TaskBook,
    readonly principal: string,
  ) {
    this.timers = new TimerSet(book.clock, (error) => book.logger.error('mcp.timer_failed', { error }));
  }

  get limits(): TaskLimits {
    return this.book.limits;
  }

  /** Tasks held. */
  get size(): number {
    return this.held.size;
  }

  /** The signal a task's call runs under: aborted when it is cancelled, expires or its session ends. */
  signal(taskId: string): AbortSignal | undefined {
    return this.held.get(taskId)?.abort.signal;
  }

  async createTask(params: CreateTaskOptions): Promise<Task> {
    if (this.closed) throw new McpError(ErrorCode.InvalidRequest, 'The session is closing: no task can start');
    this.book.makeRoom(this);
    const { clock, limits, logger } = this.book;
    const taskId = this.book.newId();
    const now = new Date(clock.wallNow()).toISOString();
    const ttl = taskTtl(params.ttl, limits);
    const task: Task = { taskId, status: 'working', ttl, createdAt: now, lastUpdatedAt: now, pollInterval: limits.pollIntervalMs };
    const unschedule = this.timers.after(ttl, () => this.drop(taskId, 'expired'));
    this.held.set(taskId, { task, created: clock.now(), fetched: false, abort: new AbortController(), unschedule });
    logger.debug('mcp.task_created', { taskId, ttl });
    return { ...task };
  }

  async getTask(taskId: string): Promise<Task | null> {
    const held = this.held.get(taskId);
    return held ? { ...held.task } : null;
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    const held = this.found(taskId);
    if (isTerminal(held.task.status)) throw new Error(`Task ${taskId} is ${held.task.status} already: its result cannot change`);
    held.result = result;
    this.update(held, status);
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const held = this.found(taskId);
    if (held.task.status === 'cancelled') {
      throw new McpError(ErrorCode.InvalidParams, `Task ${taskId} was cancelled (tasks/cancel): its call was ended, and it has no result`);
    }
    if (held.result === undefined) throw new Error(`Task ${taskId} has no result yet`);
    held.fetched = true;
    return held.result;
  }

  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    const held = this.found(taskId);
    if (isTerminal(held.task.status)) throw new Error(`Task ${taskId} is ${held.task.status} already: it cannot become ${status}`);
    this.update(held, status, statusMessage);
    if (status !== 'cancelled') return;
    // The call ends at once (the router frees its pending slot and drops the client's late answer).
    held.abort.abort(new Error('The task was cancelled'));
    this.book.logger.debug('mcp.task_cancelled', { taskId });
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const ids = [...this.held.keys()];
    let start = 0;
    if (cursor !== undefined) {
      const at = ids.indexOf(cursor);
      // A cursor names the last task of the page before; that task may have expired since.
      if (at < 0) throw new Error(`Unknown cursor ${JSON.stringify(cursor.slice(0, 100))}: list the tasks again without one`);
      start = at + 1;
    }
    const page = ids.slice(start, start + TASKS_PAGE_SIZE);
    const tasks = page.map((id) => ({ ...this.held.get(id)!.task }));
    return start + TASKS_PAGE_SIZE < ids.length ? { tasks, nextCursor: page[page.length - 1]! } : { tasks };
  }

  /** @internal Monotonic creation time of the oldest task done with (cancelled, or result fetched). */
  oldestDone(): number | undefined {
    for (const held of this.held.values()) if (done(held)) return held.created;
    return undefined;
  }

  /** @internal Drop the oldest task done with; false when there is none. */
  dropOldestDone(): boolean {
    for (const [taskId, held] of this.held) {
      if (!done(held)) continue;
      this.drop(taskId, 'evicted');
      return true;
    }
    return false;
  }

  /** The session ended: every task's call ends, every task goes. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const working = [...this.held.values()].filter((held) => !isTerminal(held.task.status)).length;
    for (const held of this.held.values()) held.abort.abort(new Error('The MCP session ended'));
    this.held.clear();
    this.timers.close();
    this.book.forget(this);
    if (working > 0) this.book.logger.debug('mcp.tasks_ended', { working });
  }

  private found(taskId: string): Held {
    const held = this.held.get(taskId);
    if (!held)
      throw new McpError(
        ErrorCode.InvalidParams,
        `Task ${JSON.stringify(taskId.slice(0, 100))} not found: it expired, ended with its session, or never existed`,
      );
    return held;
  }

  private update(held: Held, status: Task['status'], statusMessage?: string): void {
    held.task.status = status;
    if (statusMessage !== undefined) held.task.statusMessage = statusMessage;
    held.task.lastUpdatedAt = new Date(this.book.clock.wallNow()).toISOString();
  }

  private drop(taskId: string, why: 'expired' | 'evicted'): void {
    const held = this.held.get(taskId);
    if (!held) return;
    this.held.delete(taskId);
    held.unschedule();
    // Only expiry can find a call still running (its ttl outlasts the call's time-out).
    held.abort.abort(new Error(`The task ${why}`));
    this.book.logger.debug(`mcp.task_${why}`, { taskId, status: held.task.status });
  }
}

/** Done with: cancelled, or finished with its result fetched. */
function done(held: Held): boolean {
  return held.task.status === 'cancelled' || (isTerminal(held.task.status) && held.fetched);
}
