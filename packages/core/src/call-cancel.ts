/**
 * A {@link CallSignal} for the fleet's remote calls (remote.ts, and the bus's calls in flight): the
 * part of an `AbortSignal` those calls use, for one object and, once listened to, one array. An
 * `AbortController` with its signal and an event listener cost several times that on every remote
 * call, which a remote skill read pays more than once.
 *
 * As with an `AbortSignal`: a listener added after the abort is not called, each listener runs at
 * most once, and one that throws does not stop the others (its error is rethrown in a microtask,
 * as an `EventTarget` reports it).
 */
import type { CallSignal } from './call-table.js';

export class CallCancel implements CallSignal {
  private listeners: (() => void)[] | undefined;
  private done = false;

  get aborted(): boolean {
    return this.done;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.done) return;
    const listeners = this.listeners;
    if (listeners) listeners.push(listener);
    else this.listeners = [listener];
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.listeners;
    if (!listeners) return;
    const at = listeners.indexOf(listener);
    if (at >= 0) listeners.splice(at, 1);
  }

  /** Abort: every listener runs once, in the order added. Idempotent. */
  abort(): void {
    if (this.done) return;
    this.done = true;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
