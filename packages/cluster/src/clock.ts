/**
 * Time and timers, injected so that tests can count what a node leaves behind (STYLE §5–§6).
 * `now()` is monotonic: a wall-clock jump must not expire or extend a lease. `wallNow()` is the
 * wall clock, for the timestamps other processes read (messages, hello proofs): two processes'
 * monotonic clocks have nothing in common.
 */
import type { Clock, TimerSet } from '@mdp/core';

// The clock and the timer helper are core's (the router and the MCP bridge use them too); cluster
// code imports them from here.
export { TimerSet, systemClock } from '@mdp/core';
export type { Clock } from '@mdp/core';

/**
 * The one timer of a pure state machine: armed for the `wakeAt` of its last step, re-armed only
 * when that time changes, and calling `onWake` (which feeds the machine a tick) when it is due.
 */
export class WakeTimer {
  private at: number | undefined;
  private cancel: (() => void) | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly timers: TimerSet,
    private readonly onWake: () => void,
  ) {}

  /** Wake at `at` (monotonic ms), or never with `undefined`. */
  set(at: number | undefined): void {
    if (at === this.at && this.cancel) return;
    this.stop();
    this.at = at;
    if (at === undefined) return;
    this.cancel = this.timers.after(at - this.clock.now(), () => {
      this.cancel = undefined;
      this.at = undefined;
      this.onWake();
    });
  }

  stop(): void {
    this.cancel?.();
    this.cancel = undefined;
    this.at = undefined;
  }
}

/**
 * Wall-clock ms that never repeat: `wallNow()`, or one more than the last when that is not later.
 * The timestamps of this node's cluster proofs: a proof is accepted once (proof-memory.ts), so two
 * links opened in the same millisecond must not carry the same one. Under a burst (thousands of
 * mirrors reconnecting at once) the stamps run ahead of the clock by a second per thousand proofs
 * made in one millisecond, well inside the proofs' five-minute window.
 */
export function uniqueStamps(clock: Pick<Clock, 'wallNow'>): () => number {
  let last = -Infinity;
  return () => {
    last = Math.max(Math.floor(clock.wallNow()), last + 1);
    return last;
  };
}
