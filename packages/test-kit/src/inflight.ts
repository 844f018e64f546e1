/**
 * The node's in-flight budget (`@mdp/core`'s `InflightBudget`) for tests: one that reports each
 * change, so that a test waits on what it counts instead of on time.
 */
import { InflightBudget, type InflightHolder } from '@mdp/core';
import { Changes, until } from './waiters.js';

export class WatchedBudget extends InflightBudget {
  readonly changes = new Changes();

  override hold(holder: InflightHolder, charge: number): boolean {
    const kept = super.hold(holder, charge);
    this.changes.emit();
    return kept;
  }

  override release(holder: InflightHolder): void {
    super.release(holder);
    this.changes.emit();
  }

  /** Resolves once `check(total)` holds (checked now and at each change); rejects after 10 s. */
  reaches(check: (total: number) => boolean): Promise<true> {
    return until(this.changes.subscribe, () => check(this.total), { timeoutMs: 10_000, what: () => `in-flight total, now ${this.total}` });
  }
}
