/**
 * One-time cluster proofs (SPEC §10 *beyond*). A hello's proof and a mirror link's proof are HMACs
 * under the cluster secret over a wall-clock timestamp, accepted within `HELLO_MAX_AGE_MS` (5 min)
 * of this node's clock. Without more, whoever saw one pass (a plain `ws://` link, a proxy's log)
 * could present it again within that window: open a control link as that member (and send cluster
 * RPC as it), or a mirror link that registers that member's client ids. So this node remembers
 * every proof it accepted until its window ends, and refuses the same proof a second time:
 *
 *   proof verified (secret, addressee, window) ─▶ remembered and not expired? ─ yes ─▶ 'replayed'
 *                     │ no
 *                     ▼
 *   room left (after dropping expired entries)? ─ no ─▶ 'full' (refused; retried later)
 *                     │ yes
 *                     ▼
 *   remembered until timestamp + window ─▶ 'fresh'
 *
 * Why a memory and not a challenge bound to the connection: a mirror proves itself in its websocket
 * upgrade request, before the hub has said anything, and the hub decides there which member the
 * session belongs to; a control link's dialler speaks first as well. A challenge would need a
 * message (or header) that members of older versions neither send nor answer, and those must keep
 * joining a mixed cluster; a memory works with the proofs every version already makes. Members of
 * this version never send one proof twice (`uniqueStamps` of clock.ts); an older member may, for
 * two links opened in the same millisecond, and the second is then refused and dialled again.
 *
 * Only verified proofs are remembered: without the secret nobody can fill this memory. It holds
 * `capacity` entries at most (default 100,000: about 12 MB; far more than the proofs that members
 * make in ten minutes, one per link and per mirror connection). Expired entries are dropped as new
 * ones arrive, so no timer is needed, and `clear()` (on close) lets go of everything. A process that
 * restarts forgets: a proof taken in the five minutes before a restart can be presented once after it.
 */

/** Most proofs remembered at once, by default. */
export const DEFAULT_MAX_REMEMBERED_PROOFS = 100_000;

export type ProofVerdict = 'fresh' | 'replayed' | 'full';

/** The refusal of a hello while the memory is full (what the refused side reads, close 1008). */
export const PROOFS_FULL_REFUSAL = 'too many recent cluster proofs to remember; try again later';

export class ProofMemory {
  /** Proof → wall-clock ms at which its window ends. Kept in arrival order, which is roughly expiry order. */
  private readonly entries = new Map<string, number>();

  constructor(readonly capacity: number = DEFAULT_MAX_REMEMBERED_PROOFS) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive whole number');
  }

  get size(): number {
    return this.entries.size;
  }

  /** Whether `proof` was accepted before and its window has not ended at `now` (wall-clock ms). */
  seen(proof: string, now: number): boolean {
    const until = this.entries.get(proof);
    return until !== undefined && until > now;
  }

  /**
   * Accept `proof` once: `'fresh'` the first time (it is remembered until `expiresAt`), then
   * `'replayed'` until `expiresAt`; `'full'` when no room is left (nothing is remembered).
   */
  spend(proof: string, expiresAt: number, now: number): ProofVerdict {
    this.dropExpired(now, false);
    if (this.seen(proof, now)) return 'replayed';
    if (this.entries.size >= this.capacity) {
      // Arrival order is only roughly expiry order (clocks differ): look at every entry before refusing.
      this.dropExpired(now, true);
      if (this.entries.size >= this.capacity) return 'full';
    }
    this.entries.delete(proof);
    this.entries.set(proof, expiresAt);
    return 'fresh';
  }

  /** Forget everything (the node closes). */
  clear(): void {
    this.entries.clear();
  }

  /** Drop expired entries: the oldest ones until one has not expired, or (`all`) every one. */
  private dropExpired(now: number, all: boolean): void {
    for (const [proof, until] of this.entries) {
      if (until > now) {
        if (all) continue;
        return;
      }
      this.entries.delete(proof);
    }
  }
}
