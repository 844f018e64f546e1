/**
 * Admission of connections (websockets) or sessions (HTTP loop) under two caps: a total and one per
 * remote address. Pure bookkeeping: the transport asks before it accepts, and releases once the
 * connection is gone.
 *
 *   admit(addr) ─▶ total full? ─ yes ─▶ refusal "… (limit N)"
 *                      │ no
 *                      ▼
 *                 addr full? ─ yes ─▶ refusal "… from this address (limit M)"
 *                      │ no
 *                      ▼
 *                 counted ──── release(addr) once gone
 *
 * On loopback every local process shares one address, so there the per-address cap is a second
 * total; it matters when the server listens beyond loopback.
 */

export interface AdmissionLimits {
  /** Most admitted at once. */
  readonly total: number;
  /** Most admitted at once from one remote address. */
  readonly perAddress: number;
}

/** The remote address of a connection whose address is unknown (an in-process request). */
const UNKNOWN_ADDRESS = '';

export class Admission {
  private readonly byAddress = new Map<string, number>();
  private count = 0;

  /** @param what Plural noun for refusals, e.g. `websocket connections`. */
  constructor(
    readonly limits: AdmissionLimits,
    private readonly what: string,
  ) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`${what}: ${name} must be a positive whole number`);
    }
  }

  /** Admitted now. */
  get size(): number {
    return this.count;
  }

  /** Admitted now from `address`. */
  countOf(address: string | undefined): number {
    return this.byAddress.get(address ?? UNKNOWN_ADDRESS) ?? 0;
  }

  /** Count one more from `address`, or return why not (nothing is counted then). */
  admit(address: string | undefined): string | undefined {
    if (this.count >= this.limits.total) return `Too many ${this.what} (limit ${this.limits.total}); try again later`;
    const key = address ?? UNKNOWN_ADDRESS;
    const held = this.byAddress.get(key) ?? 0;
    if (held >= this.limits.perAddress) return `Too many ${this.what} from this address (limit ${this.limits.perAddress}); try again later`;
    this.byAddress.set(key, held + 1);
    this.count++;
    return undefined;
  }

  /** One admitted from `address` is gone. Call exactly once per successful {@link admit}. */
  release(address: string | undefined): void {
    const key = address ?? UNKNOWN_ADDRESS;
    const held = this.byAddress.get(key);
    if (held === undefined) return;
    if (held <= 1) this.byAddress.delete(key);
    else this.byAddress.set(key, held - 1);
    this.count--;
  }
}
