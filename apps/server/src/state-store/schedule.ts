/**
 * When the state store writes its files: a pure transition `step(state, event, now)`, driven by
 * writer.ts. Every change is written, but at most one write runs at a time and writes start at
 * least `minIntervalMs` apart, so a burst of changes (a thousand clients registering) costs a few
 * writes, and the last one always comes after the last change.
 *
 *            change (may write now)               written (nothing new)
 *   idle ────────────────────────────▶ writing ─────────────────────────▶ idle
 *    │ change (too soon)                 ▲  │ change: dirty
 *    ▼                                   │  │ written, dirty, too soon
 *   waiting ─── due (timer) ─────────────┘  ▼
 *    ▲                                    waiting
 *    └────────────────────────────────────────┘
 *
 *   close: the last write, at once (after the one running, if any) ──▶ closed
 *
 * A failed write is owed again, after `retryMs`: the files catch up once the disk takes them again,
 * even if nothing changes meanwhile.
 *
 * A write that kept the event loop busy long (making the documents of a large catalog: the disk
 * work itself does not block) pushes the next one further away, `slowFactor` times that, so the
 * store never takes more than about 1/(slowFactor + 1) of the node's time.
 */

export interface ScheduleOptions {
  /** Least time between the starts of two writes, ms. */
  readonly minIntervalMs: number;
  /** The pause after a write is at least this many times the event-loop time it took. */
  readonly slowFactor: number;
  /** Wait before writing again after a failed write, ms. */
  readonly retryMs: number;
}

export const SCHEDULE_DEFAULTS: ScheduleOptions = { minIntervalMs: 250, slowFactor: 4, retryMs: 5000 };

export interface Schedule {
  readonly phase: 'idle' | 'waiting' | 'writing' | 'closed';
  /** A change came that no write started since has seen. */
  readonly dirty: boolean;
  /** Earliest start of the next write (ms, on the driver's clock). */
  readonly notBefore: number;
  /** When the running write started. */
  readonly startedAt: number;
  /** Closing: the next write is the last; `closed` follows it. */
  readonly closing: boolean;
}

export type ScheduleEvent =
  | { readonly type: 'change' }
  /** The timer set by a `wake` effect fired. */
  | { readonly type: 'due' }
  /** The running write ended; `ok` false: it failed. `busyMs`: the event-loop time it took. */
  | { readonly type: 'written'; readonly ok: boolean; readonly busyMs: number }
  | { readonly type: 'close' };

export type ScheduleEffect =
  | { readonly type: 'write' }
  /** Set the timer to fire `due` at `at`. */
  | { readonly type: 'wake'; readonly at: number }
  | { readonly type: 'cancel' }
  /** The last write is done. */
  | { readonly type: 'closed' };

export interface Step {
  readonly state: Schedule;
  readonly effects: readonly ScheduleEffect[];
}

/** The schedule while the first write, started at `startedAt`, runs: `written` follows it. */
export function firstWrite(startedAt: number): Schedule {
  return { phase: 'writing', dirty: false, notBefore: startedAt, startedAt, closing: false };
}

function nextStart(options: ScheduleOptions, startedAt: number, endedAt: number, busyMs: number): number {
  return Math.max(startedAt + options.minIntervalMs, endedAt + options.slowFactor * busyMs);
}

const write = (state: Schedule, now: number, effects: ScheduleEffect[] = []): Step => ({
  state: { ...state, phase: 'writing', dirty: false, startedAt: now },
  effects: [...effects, { type: 'write' }],
});

/** A write is owed: now if it may start, else at `notBefore`. */
const writeWhenAllowed = (state: Schedule, now: number): Step =>
  now >= state.notBefore ? write(state, now) : { state: { ...state, phase: 'waiting', dirty: true }, effects: [{ type: 'wake', at: state.notBefore }] };

export function step(options: ScheduleOptions, state: Schedule, event: ScheduleEvent, now: number): Step {
  const same: Step = { state, effects: [] };
  if (state.phase === 'closed') return same;
  switch (event.type) {
    case 'change':
      if (state.phase === 'idle') return writeWhenAllowed(state, now);
      if (state.phase === 'writing') return { state: { ...state, dirty: true }, effects: [] };
      return same;
    case 'due':
      return state.phase === 'waiting' ? write(state, now) : same;
    case 'written': {
      if (state.phase !== 'writing') return same;
      const pause = nextStart(options, state.startedAt, now, event.busyMs);
      const after: Schedule = { ...state, phase: 'idle', notBefore: event.ok ? pause : Math.max(pause, now + options.retryMs) };
      if (state.closing) return state.dirty ? write(after, now) : { state: { ...after, phase: 'closed' }, effects: [{ type: 'closed' }] };
      return state.dirty || !event.ok ? writeWhenAllowed(after, now) : { state: after, effects: [] };
    }
    case 'close':
      if (state.closing) return same;
      // The running write may have read the state before the change that closing is: one more after it.
      if (state.phase === 'writing') return { state: { ...state, closing: true, dirty: true }, effects: [] };
      return write({ ...state, closing: true }, now, state.phase === 'waiting' ? [{ type: 'cancel' }] : []);
  }
}
