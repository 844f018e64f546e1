/**
 * The impure shell of a pure state machine (`join-rules.ts`, `readiness.ts`): it holds the state,
 * steps it with the time of `now`, hands each result to `onResult` (which carries the effects out),
 * and, when given timers, keeps one timer at the result's `wakeAt` that feeds `tick`.
 */
import { WakeTimer, type Clock, type TimerSet } from './clock.js';

export interface StepOutcome<S> {
  readonly state: S;
  readonly wakeAt?: number | undefined;
}

export class Machine<S, E, R extends StepOutcome<S>> {
  private current: S;
  private readonly wake: WakeTimer | undefined;

  constructor(
    initial: NoInfer<S>,
    private readonly step: (state: S, event: E, now: number) => R,
    private readonly now: () => number,
    private readonly onResult: (result: R) => void,
    timed?: { readonly clock: Clock; readonly timers: TimerSet; readonly tick: NoInfer<E> },
  ) {
    this.current = initial;
    this.wake = timed && new WakeTimer(timed.clock, timed.timers, () => this.feed(timed.tick));
  }

  get state(): S {
    return this.current;
  }

  feed(event: E): R {
    const result = this.step(this.current, event, this.now());
    this.current = result.state;
    this.wake?.set(result.wakeAt);
    this.onResult(result);
    return result;
  }

  /** Clear the timer; later events are still stepped. */
  stop(): void {
    this.wake?.stop();
  }
}
