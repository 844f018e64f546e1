/**
 * The timer and the writes around the pure schedule (schedule.ts): the first write at once and
 * synchronously (the files are there when the server says it listens), then `changed()` on every
 * change and `close()` for the last write. The files are written by the functions it is given;
 * every outcome is reported, marked so that a run of failures can be logged once (and once more
 * when writing works again): a full disk under churn is one error line, not one per change.
 */
import type { Clock } from '@mdp/core';
import { firstWrite, step, type Schedule, type ScheduleEvent, type ScheduleOptions } from './schedule.js';

export interface StoreWriterOptions {
  readonly clock: Clock;
  readonly schedule: ScheduleOptions;
  /** Write every file now; throws when it could not. Used once, for the first write. */
  readonly writeSync: () => void;
  /**
   * Write every file; rejects when it could not. The time it holds the event loop, which the
   * schedule keeps small, is what it does before it returns plus what it resolves with (ms spent
   * making the documents a slice at a time).
   */
  readonly write: () => Promise<number | void>;
  /** A write failed; `first`: the first of a run of failures (report it; the others are detail). */
  readonly onFailure: (error: unknown, first: boolean) => void;
  /** A write worked; `recovered`: after failures. */
  readonly onWritten: (recovered: boolean) => void;
}

export class StoreWriter {
  private state: Schedule;
  private timer: unknown;
  private failing = false;
  private closing: Promise<void> | undefined;
  private resolveClosed: () => void = () => undefined;

  constructor(private readonly options: StoreWriterOptions) {
    const started = options.clock.now();
    this.state = firstWrite(started);
    let ok = true;
    try {
      options.writeSync();
    } catch (error) {
      ok = false;
      this.failed(error);
    }
    this.feed({ type: 'written', ok, busyMs: options.clock.now() - started });
  }

  /** Something the files show changed. */
  changed(): void {
    this.feed({ type: 'change' });
  }

  /** Whether a timer is set (for tests: none after close). */
  get timerPending(): boolean {
    return this.timer !== undefined;
  }

  /** The last write, then nothing more; resolves once it ended (failed or not). Idempotent. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.resolveClosed = resolve;
      this.feed({ type: 'close' });
    });
    return this.closing;
  }

  private feed(event: ScheduleEvent): void {
    const { clock } = this.options;
    const now = clock.now();
    const next = step(this.options.schedule, this.state, event, now);
    this.state = next.state;
    for (const effect of next.effects) {
      switch (effect.type) {
        case 'write':
          this.write();
          break;
        case 'wake':
          // The schedule's one timer.
          this.cancel();
          this.timer = clock.setTimeout(() => {
            this.timer = undefined;
            this.feed({ type: 'due' });
          }, effect.at - now);
          break;
        case 'cancel':
          this.cancel();
          break;
        case 'closed':
          this.resolveClosed();
          break;
      }
    }
  }

  private cancel(): void {
    if (this.timer === undefined) return;
    this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private failed(error: unknown): void {
    this.options.onFailure(error, !this.failing);
    this.failing = true;
  }

  private write(): void {
    const { clock } = this.options;
    const started = clock.now();
    let running: Promise<number | void>;
    try {
      running = this.options.write();
    } catch (error) {
      running = Promise.reject(error);
    }
    // What the call took before it returned: the time it held the event loop (making the documents).
    const busyMs = clock.now() - started;
    running.then(
      (sliced) => {
        const recovered = this.failing;
        this.failing = false;
        this.options.onWritten(recovered);
        // And what it spent afterwards, a slice at a time.
        this.feed({ type: 'written', ok: true, busyMs: busyMs + (typeof sliced === 'number' ? sliced : 0) });
      },
      (error: unknown) => {
        this.failed(error);
        this.feed({ type: 'written', ok: false, busyMs });
      },
    );
  }
}
