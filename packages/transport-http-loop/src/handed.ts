/**
 * The calls a session's polls handed its client and that may still be running: what keeps a client
 * that works on a call without polling from being taken for gone (idle.ts). Bounded by what is
 * pending, whatever the session's age: an answer drops its id at once, and the ids of calls that
 * ended without one (timed out, their caller gone) are swept out whenever the set has doubled
 * since the last sweep, so a sweep costs O(1) per call handed.
 */
import { IdTable } from '@mdp/core';

/** Fewest ids before a sweep, so a session with a handful of calls in hand never sweeps. */
const SWEEP_FLOOR = 64;

export class HandedCalls {
  /** Not a `Set`: ids come and go with every call (core's `IdTable` says why). */
  private readonly ids = new IdTable<true>();
  private sweepAt = SWEEP_FLOOR;

  /** @param isPending Whether a call is still waiting for its answer (`Router.isPending`). */
  constructor(private readonly isPending: (requestId: string) => boolean) {}

  /** Ids held now (calls in hand, and ended ones not swept yet). */
  get size(): number {
    return this.ids.size;
  }

  /** A poll handed the client the call `requestId`. */
  add(requestId: string): void {
    this.ids.set(requestId, true);
    if (this.ids.size >= this.sweepAt) this.sweep();
  }

  /**
   * The client answered `requestId` (its call may have ended before: the id goes either way).
   * True when it held that call: an answer to an id it was never handed shows nothing.
   */
  answered(requestId: string): boolean {
    return this.ids.delete(requestId);
  }

  /** Whether the client still holds a call that waits for its answer. */
  working(): boolean {
    this.sweep();
    return this.ids.size > 0;
  }

  private sweep(): void {
    for (const id of this.ids.keys()) if (!this.isPending(id)) this.ids.delete(id);
    this.sweepAt = Math.max(SWEEP_FLOOR, 2 * this.ids.size);
  }
}
