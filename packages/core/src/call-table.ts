/**
 * The calls in flight: each `callClient` sent and not yet answered, with its time-out, its caller's
 * abort signal and its session. A call ends exactly once, whichever comes first:
 *
 *   dispatch ──▶ pending ──┬─ answer (callClientResult from its session) ─▶ ok / client error
 *                          ├─ deadline (Deadlines, on the clock) ─────────▶ timeout
 *                          ├─ caller gone (cancel, abort signal) ─────────▶ transport_error
 *                          ├─ session ended, client removed ──────────────▶ transport_error
 *                          └─ transport refused it (Session.refuseCall) ───▶ not_ready
 *
 * A call that ended without its session's answer is remembered by the session for a while: a late
 * answer still shows the peer reads (Session.takeLate). `drain()` refuses new calls and waits for
 * the table to empty.
 */
import type { AuthContext, CallClientMessage, CallClientResultMessage, EndpointMethod, SerializedError } from '@mdp/protocol';
import type { Clock } from './clock.js';
import { Deadlines } from './deadlines.js';
import { IdTable } from './id-table.js';
import type { Logger } from './logger.js';
import type { ResolvedTarget } from './path-index.js';
import type { RouterLimits } from './router-options.js';
import { PendingCall, deliver, type Session } from './session.js';
import { randomUuid } from './uuid.js';

/** How an invocation ended. `source` tells whether the client answered or the server gave up. */
export type InvokeOutcome =
  | { readonly ok: true; readonly data: unknown }
  | { readonly ok: false; readonly error: SerializedError; readonly source: 'client' | 'server' };

/**
 * A call in flight, as `Router.dispatch` returns it: hand it to `Router.cancel` when the caller
 * goes away. Opaque; holding one after the call ended is harmless.
 */
export interface CallHandle {
  readonly requestId: string;
}

/**
 * The surface a call came through: a skill route, the host API, the MCP bridge, a cluster peer, or
 * another node of the fleet calling this node's client for one of its callers (SPEC §16).
 */
export type InvokeRoute = 'skill' | 'host' | 'mcp' | 'cluster' | 'bus';

/** A call that ended, as `RouterOptions.onCallEnd` sees it. */
export interface CallRecord {
  readonly route: InvokeRoute;
  readonly clientId: string;
  readonly method: EndpointMethod;
  /** The concrete path called. */
  readonly path: string;
  /** Who asked (the caller's transport auth), if known. */
  readonly caller: AuthContext | undefined;
  readonly outcome: InvokeOutcome;
  /** From the call's start to its outcome, ms (fractional). */
  readonly durationMs: number;
}

export interface InvokeOptions {
  query?: Record<string, string>;
  body?: unknown;
  headers?: Record<string, string>;
  auth?: AuthContext;
  /** Overrides the router's invocation time-out for this call, ms. */
  timeoutMs?: number;
  /**
   * The caller went away (an aborted HTTP request, a cancelled MCP call): the call ends at once and
   * is not delivered later (a queued HTTP loop message whose call ended is dropped).
   */
  signal?: CallSignal;
  /** The surface the call came through, for the call-end observer. Default `host`. */
  route?: InvokeRoute;
  /** Who asked, when it is not `auth` (a host call may forward another credential to the client). Default `auth`. */
  caller?: AuthContext;
}

/**
 * What tells a call that its caller went away: an `AbortSignal`, or any object with the part of
 * its API used here (an HTTP edge can answer it from its response's 'close' event, which costs far
 * less per call than an AbortController).
 */
export interface CallSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * The outcome of a call refused because its client is behind (too many calls waiting, or
 * `Session.refuseCall`): `not_ready`, to be tried again in a second (HTTP edges: 503 + Retry-After).
 */
function busy(message: string): InvokeOutcome {
  return { ok: false, source: 'server', error: { code: 'not_ready', message, details: { retryAfterMs: 1000 } } };
}

/** The outcome of a call whose caller went away before it was answered. */
const CALLER_GONE: InvokeOutcome = Object.freeze({
  ok: false,
  source: 'server',
  error: Object.freeze({ code: 'transport_error', message: 'The caller went away before the client answered' }),
});

export interface CallTableOptions {
  readonly limits: Pick<RouterLimits, 'invocationTimeoutMs' | 'maxPendingCalls'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly onCallEnd: ((record: CallRecord) => void) | undefined;
}

export class CallTable {
  private readonly pending = new IdTable<PendingCall>();
  private readonly deadlines: Deadlines<PendingCall>;
  private readonly limits: CallTableOptions['limits'];
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly onCallEnd: CallTableOptions['onCallEnd'];
  /** Set by `drain()`: new calls fail with `not_ready`; these resolve once no call is pending. */
  private drained: (() => void)[] | undefined;

  constructor(options: CallTableOptions) {
    ({ limits: this.limits, clock: this.clock, logger: this.logger, onCallEnd: this.onCallEnd } = options);
    this.deadlines = new Deadlines<PendingCall>((call) => {
      const message = `Client ${JSON.stringify(call.clientId)} did not answer within ${call.timeoutMs} ms`;
      this.finish(call, { ok: false, source: 'server', error: { code: 'timeout', message } });
    }, this.clock);
  }

  get size(): number {
    return this.pending.size;
  }

  has(requestId: string): boolean {
    return this.pending.has(requestId);
  }

  /** The outcome of a call whose target did not resolve (`not_found`), seen by the observer. */
  notFound(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions): InvokeOutcome {
    const message = `No ${method} ${path} on client ${JSON.stringify(clientId)}`;
    const outcome: InvokeOutcome = { ok: false, source: 'server', error: { code: 'not_found', message } };
    if (this.onCallEnd) this.observe(clientId, method, path, options, outcome, 0);
    return outcome;
  }

  /**
   * Send a call to `session` (the session of `clientId`'s client, `undefined` when it is not
   * connected). `done` is called exactly once, possibly before this returns; returns the call in
   * flight, or `undefined` when it already ended.
   */
  dispatch(
    clientId: string,
    session: Session | undefined,
    target: ResolvedTarget,
    options: InvokeOptions,
    done: (outcome: InvokeOutcome) => void,
  ): CallHandle | undefined {
    // Timed only when observed: without an observer a call allocates nothing for it.
    if (this.onCallEnd) done = this.timed(clientId, target, options, done);
    if (options.signal?.aborted) {
      done(CALLER_GONE);
      return undefined;
    }
    if (this.drained) {
      done({ ok: false, source: 'server', error: { code: 'not_ready', message: 'Server is shutting down' } });
      return undefined;
    }
    if (!session) {
      done({ ok: false, source: 'server', error: { code: 'not_found', message: `Client ${JSON.stringify(clientId)} is not connected` } });
      return undefined;
    }
    const limit = this.limits.maxPendingCalls;
    if (session.pendingCount >= limit) {
      // Refused before anything is queued or sent: a client that stopped answering holds at most
      // `limit` calls, whatever the readers do.
      done(busy(`Client ${JSON.stringify(clientId)} has ${limit} calls waiting for an answer; try again later`));
      return undefined;
    }
    const requestId = randomUuid();
    const { query, body, headers, auth, signal } = options;
    const { method, path, params, kind } = target;
    const args = { params, query, body, headers };
    const message: CallClientMessage = { type: 'callClient', requestId, clientId, method, path, params, query, body, headers, auth, kind, name: path, args };
    const call = new PendingCall(requestId, session, clientId, options.timeoutMs ?? this.limits.invocationTimeoutMs, done);
    this.deadlines.add(call.timeoutMs, call);
    this.pending.set(requestId, call);
    call.sessionPrev = session.lastCall;
    if (session.lastCall) session.lastCall.sessionNext = call;
    session.lastCall = call;
    session.pendingCount++;
    if (signal) {
      const onAbort = (): void => this.finish(call, CALLER_GONE);
      signal.addEventListener('abort', onAbort, { once: true });
      call.unwatch = () => signal.removeEventListener('abort', onAbort);
    }
    if (!deliver(session, message, this.logger)) {
      this.finish(call, { ok: false, source: 'server', error: { code: 'transport_error', message: 'Could not deliver the call' } });
    }
    // A transport may fail the call while delivering it (or a client answer at once, in tests).
    return call.ended ? undefined : call;
  }

  /** The caller went away: the call ends with `transport_error`. A call that already ended is left alone. */
  cancel(call: CallHandle): void {
    if (call instanceof PendingCall) this.finish(call, CALLER_GONE);
  }

  /** A `callClientResult` from `session`: it settles the call it answers, if that call was sent there. */
  answer(session: Session, message: CallClientResultMessage): void {
    const call = this.pending.get(message.requestId);
    // A result for an unknown call, or from a session the call was not sent to, settles nothing.
    const mine = call !== undefined && call.session === session ? call : undefined;
    // An answer to one of its pending calls shows the client reads and answers. One to an id
    // that waits for nothing shows nothing: a peer that reads nothing can send it.
    if (mine !== undefined || session.takeLate(message.requestId, this.clock.now())) {
      session.unansweredCalls = 0;
      session.answers++;
    }
    if (mine === undefined) {
      this.logger.debug('result.ignored', { requestId: message.requestId, sessionId: session.id });
    } else if (message.ok) {
      this.finish(mine, { ok: true, data: message.data });
    } else {
      const error = message.error ?? { code: 'handler_error', message: 'Client reported a failure without details' };
      this.finish(mine, { ok: false, source: 'client', error });
    }
  }

  /** See `Session.refuseCall`. */
  refuse(session: Session, requestId: string, reason: string): void {
    const call = this.pending.get(requestId);
    if (!call || call.session !== session) return;
    this.logger.debug('call.refused_busy', { requestId, sessionId: session.id, clientId: call.clientId });
    this.finish(call, busy(reason), false);
  }

  /** Fail the pending calls of `session` (only those to `clientId`, when given), oldest first. */
  failSession(session: Session, clientId: string | undefined, reason: string): void {
    const calls: PendingCall[] = [];
    for (let call = session.lastCall; call; call = call.sessionPrev) {
      if (clientId === undefined || call.clientId === clientId) calls.push(call);
    }
    // Oldest first, as they were made; finish() unlinks each one.
    for (let i = calls.length - 1; i >= 0; i--) {
      this.finish(calls[i] as PendingCall, { ok: false, source: 'server', error: { code: 'transport_error', message: reason } });
    }
  }

  /** From now on new calls fail with `not_ready`; resolves once none is pending. Idempotent. */
  drain(): Promise<void> {
    this.drained ??= [];
    const waiting = this.drained;
    return new Promise((resolve) => {
      waiting.push(resolve);
      if (this.pending.size === 0) this.settleDrain();
    });
  }

  /** Let go of the time-out timers kept for reuse (no session is left, so no call is). */
  releaseTimers(): void {
    this.deadlines.clear();
  }

  /** After every session was closed: no timer is left, and `drain()` resolves. */
  close(): void {
    this.drained ??= [];
    this.deadlines.clear();
    this.settleDrain();
  }

  private settleDrain(): void {
    if (!this.drained || this.pending.size > 0) return;
    for (const resolve of this.drained.splice(0)) resolve();
  }

  /** `unanswered`: the outcome counts towards the session's `unansweredCalls` when it is a server-side failure. */
  private finish(call: PendingCall, outcome: InvokeOutcome, unanswered = true): void {
    if (this.pending.get(call.requestId) !== call) return;
    this.pending.delete(call.requestId);
    if (this.drained && this.pending.size === 0) queueMicrotask(() => this.settleDrain());
    call.ended = true;
    const { session, sessionPrev, sessionNext } = call;
    if (sessionPrev) sessionPrev.sessionNext = sessionNext;
    if (sessionNext) sessionNext.sessionPrev = sessionPrev;
    else session.lastCall = sessionPrev;
    call.sessionPrev = call.sessionNext = undefined;
    session.pendingCount--;
    if (unanswered && !outcome.ok && outcome.source === 'server') {
      session.unansweredCalls++;
      if (!session.closed) session.noteUnanswered(call.requestId, this.clock.now());
    }
    this.deadlines.remove(call);
    if (call.unwatch) {
      call.unwatch();
      call.unwatch = undefined;
    }
    try {
      call.done(outcome);
    } catch (error) {
      // A caller's callback must not break the router (a result would be left half-applied).
      this.logger.error('call.callback_failed', { requestId: call.requestId, error });
    }
  }

  /** `done`, then the call-end observer with the call's duration (the caller's answer goes first). */
  private timed(clientId: string, target: ResolvedTarget, options: InvokeOptions, done: (outcome: InvokeOutcome) => void): (outcome: InvokeOutcome) => void {
    const startedAt = this.clock.now();
    return (outcome) => {
      const durationMs = this.clock.now() - startedAt;
      try {
        done(outcome);
      } finally {
        this.observe(clientId, target.method, target.path, options, outcome, durationMs);
      }
    };
  }

  private observe(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions, outcome: InvokeOutcome, durationMs: number): void {
    try {
      this.onCallEnd?.({ route: options.route ?? 'host', clientId, method, path, caller: options.caller ?? options.auth, outcome, durationMs });
    } catch (error) {
      // An observer must not keep the caller from its answer.
      this.logger.error('call.observer_failed', { clientId, path, error });
    }
  }
}
