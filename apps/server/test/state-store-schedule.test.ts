/** The state store's write schedule (pure) and its writer on a manual clock: coalescing, the trailing write, failures, close. */
import { describe, expect, it } from 'vitest';
import { manualClock, settle, type ManualClock } from '@mdp/test-kit';
import { firstWrite, step, type Schedule, type ScheduleEvent, type ScheduleOptions } from '../src/state-store/schedule.js';
import { StoreWriter } from '../src/state-store/writer.js';

const OPTIONS: ScheduleOptions = { minIntervalMs: 250, slowFactor: 4, retryMs: 5000 };

/** Feed `events` at their times from a schedule just after a quick first write at 0; the effects, with their times. */
function run(events: ReadonlyArray<readonly [number, ScheduleEvent]>): { state: Schedule; effects: string[] } {
  let state = step(OPTIONS, firstWrite(0), { type: 'written', ok: true, busyMs: 0 }, 0).state;
  const effects: string[] = [];
  for (const [at, event] of events) {
    const next = step(OPTIONS, state, event, at);
    state = next.state;
    for (const effect of next.effects) effects.push(effect.type === 'wake' ? `${at}: wake at ${effect.at}` : `${at}: ${effect.type}`);
  }
  return { state, effects };
}

const change = { type: 'change' } as const;
const due = { type: 'due' } as const;
const written = { type: 'written', ok: true, busyMs: 0 } as const;
const failed = { type: 'written', ok: false, busyMs: 1 } as const;
const close = { type: 'close' } as const;

describe('the schedule', () => {
  it('writes a change at once when the last write is long enough ago', () => {
    expect(run([[1000, change]]).effects).toEqual(['1000: write']);
  });

  it('coalesces a burst into one write at the end of the interval, which sees the last change', () => {
    const burst = Array.from({ length: 1000 }, (_, i) => [10 + i / 10, change] as const);
    const { effects, state } = run([...burst, [250, due]]);
    expect(effects).toEqual(['10: wake at 250', '250: write']);
    expect(state).toMatchObject({ phase: 'writing', dirty: false });
  });

  it('a change during a write is written after it, never sooner than the interval', () => {
    expect(
      run([
        [1000, change],
        [1010, change],
        [1020, written],
      ]).effects,
    ).toEqual(['1000: write', '1020: wake at 1250']);
    // The disk being slow does not matter: only the event-loop time does.
    expect(
      run([
        [1000, change],
        [1010, change],
        [1400, written],
      ]).effects,
    ).toEqual(['1000: write', '1400: write']);
    // Nothing new: no write.
    expect(
      run([
        [1000, change],
        [1020, written],
      ]).state,
    ).toMatchObject({ phase: 'idle', notBefore: 1250 });
  });

  it('under steady churn, writes start at most once per interval', () => {
    const events: Array<readonly [number, ScheduleEvent]> = [];
    let state = step(OPTIONS, firstWrite(0), written, 0).state;
    const starts: number[] = [];
    let wake: number | undefined;
    for (let now = 0; now <= 2000; now += 5) {
      const feed = (event: ScheduleEvent): void => {
        events.push([now, event]);
        const next = step(OPTIONS, state, event, now);
        state = next.state;
        for (const effect of next.effects) {
          if (effect.type === 'write') starts.push(now);
          if (effect.type === 'wake') wake = effect.at;
        }
      };
      if (wake !== undefined && now >= wake) {
        wake = undefined;
        feed(due);
      }
      // Every write takes 5 ms.
      if (state.phase === 'writing' && now - state.startedAt >= 5) feed(written);
      feed(change);
    }
    expect(starts.length).toBe(8);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(250);
    // The last change is not lost: a write is owed.
    expect(state.dirty || state.phase === 'writing').toBe(true);
  });

  it('a write that held the event loop long pushes the next one to slowFactor times that after it', () => {
    const heavy = { type: 'written', ok: true, busyMs: 100 } as const;
    expect(
      run([
        [1000, change],
        [1001, change],
        [1110, heavy],
      ]).effects,
    ).toEqual(['1000: write', '1110: wake at 1510']);
  });

  it('a failed write is tried again after retryMs, without a change', () => {
    expect(
      run([
        [1000, change],
        [1010, failed],
      ]).effects,
    ).toEqual(['1000: write', '1010: wake at 6010']);
    const first = step(OPTIONS, firstWrite(0), { ...failed, busyMs: 3 }, 3);
    expect(first.effects).toEqual([{ type: 'wake', at: 5003 }]);
  });

  it('close writes at once, cancelling a wait; after a running write it writes once more; then closed', () => {
    expect(
      run([
        [100, change],
        [120, close],
        [130, written],
      ]).effects,
    ).toEqual(['100: wake at 250', '120: cancel', '120: write', '130: closed']);
    expect(
      run([
        [1000, change],
        [1010, close],
        [1020, written],
        [1030, written],
      ]).effects,
    ).toEqual(['1000: write', '1020: write', '1030: closed']);
    expect(
      run([
        [1000, close],
        [1001, failed],
      ]).effects,
    ).toEqual(['1000: write', '1001: closed']);
    const closed = run([
      [1000, close],
      [1001, written],
      [1002, change],
      [1003, close],
      [1004, due],
    ]);
    expect(closed.effects).toEqual(['1000: write', '1001: closed']);
    expect(closed.state.phase).toBe('closed');
  });
});

/** A write the test ends when it likes, on the manual clock. */
class Writes {
  readonly started: number[] = [];
  private pending: Array<{ resolve: (slicedMs: number) => void; reject: (error: Error) => void }> = [];
  constructor(private readonly clock: ManualClock) {}
  readonly write = (): Promise<number> => {
    this.started.push(this.clock.now());
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  };
  /** End the oldest write: failed with `error`, or done after `slicedMs` spent making its slices. */
  async finish(error?: Error, slicedMs = 0): Promise<void> {
    const next = this.pending.shift();
    if (!next) throw new Error('no write is running');
    if (error) next.reject(error);
    else next.resolve(slicedMs);
    await settle();
  }
  get running(): number {
    return this.pending.length;
  }
}

function writer(clock: ManualClock, writes: Writes, firstFails = false) {
  const failures: unknown[] = [];
  let recoveries = 0;
  let syncWrites = 0;
  const w = new StoreWriter({
    clock,
    schedule: OPTIONS,
    writeSync: () => {
      syncWrites++;
      if (firstFails) throw new Error('EACCES');
    },
    write: writes.write,
    onFailure: (error, first) => {
      if (first) failures.push(error);
    },
    onWritten: (recovered) => {
      if (recovered) recoveries++;
    },
  });
  return { w, failures, recoveries: () => recoveries, syncWrites: () => syncWrites };
}

/** Close `w`, ending its last write. */
async function closeWith(w: StoreWriter, writes: Writes): Promise<void> {
  const closing = w.close();
  await writes.finish();
  await closing;
  expect(w.timerPending).toBe(false);
}

describe('the writer', () => {
  it('writes once at start, synchronously, then coalesces a burst; the last write follows the last change', async () => {
    const clock = manualClock(0);
    const writes = new Writes(clock);
    const { w, syncWrites } = writer(clock, writes);
    expect(syncWrites()).toBe(1);
    // A thousand changes over 100 ms.
    for (let i = 0; i < 1000; i++) {
      w.changed();
      if (i % 10 === 9) clock.advance(1);
    }
    expect(writes.started).toEqual([]);
    await clock.advanceSettled(150);
    expect(writes.started).toEqual([250]);
    w.changed(); // during the write
    await clock.advanceSettled(10);
    await writes.finish();
    expect(writes.running).toBe(0);
    await clock.advanceSettled(239);
    expect(writes.started).toEqual([250]);
    await clock.advanceSettled(1);
    expect(writes.started).toEqual([250, 500]);
    await writes.finish();
    expect(w.timerPending).toBe(false);
    await closeWith(w, writes);
  });

  it('reports a run of failures once, retries without a change, and says when it works again', async () => {
    const clock = manualClock(0);
    const writes = new Writes(clock);
    const { w, failures, recoveries } = writer(clock, writes, true);
    expect(failures).toHaveLength(1);
    // The failed first write is tried again after retryMs, nothing having changed.
    await clock.advanceSettled(5000);
    expect(writes.started).toEqual([5000]);
    w.changed();
    await writes.finish(new Error('ENOSPC'));
    await clock.advanceSettled(5000);
    await writes.finish(new Error('ENOSPC'));
    expect(failures).toHaveLength(1);
    expect(recoveries()).toBe(0);
    await clock.advanceSettled(5000);
    await writes.finish();
    expect(recoveries()).toBe(1);
    expect(writes.started).toEqual([5000, 10000, 15000]);
    expect(w.timerPending).toBe(false);
    await closeWith(w, writes);
  });

  it('close makes the last write at once, leaves no timer, and is idempotent', async () => {
    const clock = manualClock(0);
    const writes = new Writes(clock);
    const { w } = writer(clock, writes);
    w.changed();
    expect(w.timerPending).toBe(true);
    const closing = w.close();
    expect(w.close()).toBe(closing);
    expect(w.timerPending).toBe(false);
    expect(writes.started).toEqual([0]);
    let closed = false;
    void closing.then(() => (closed = true));
    await settle();
    expect(closed).toBe(false);
    await writes.finish();
    expect(closed).toBe(true);
    w.changed();
    await clock.advanceSettled(10_000);
    expect(writes.started).toEqual([0]);
    expect(clock.pending()).toBe(0);
  });

  // Review finding: made in one go, a full node's documents held the event loop for most of a
  // second; made a slice at a time, the time they take still counts, so the store stays a fifth.
  it('the time a write spent making its slices after it returned pushes the next one as if it had held the loop', async () => {
    const clock = manualClock(0);
    const writes = new Writes(clock);
    const { w } = writer(clock, writes);
    await clock.advanceSettled(1000);
    w.changed();
    expect(writes.started).toEqual([1000]);
    w.changed(); // during the write
    await clock.advanceSettled(500);
    await writes.finish(undefined, 400); // ended at 1500, after 400 ms of slices
    await clock.advanceSettled(1599);
    expect(writes.started).toEqual([1000]);
    await clock.advanceSettled(1);
    expect(writes.started).toEqual([1000, 3100]); // 1500 + 4 × 400
    await writes.finish();
    await closeWith(w, writes);
  });

  it('a write function that throws at once counts as a failed write', async () => {
    const clock = manualClock(0);
    const failures: unknown[] = [];
    const w = new StoreWriter({
      clock,
      schedule: OPTIONS,
      writeSync: () => undefined,
      write: () => {
        throw new Error('sync throw');
      },
      onFailure: (error) => failures.push(error),
      onWritten: () => undefined,
    });
    await clock.advanceSettled(300);
    w.changed();
    await settle();
    expect(failures).toEqual([new Error('sync throw')]);
    expect(w.timerPending).toBe(true);
    await w.close();
    expect(w.timerPending).toBe(false);
  });
});
