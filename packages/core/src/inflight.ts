/**
 * One budget, for the whole node, on what it has received but cannot use yet: websocket frames
 * still arriving (clients and cluster links) and HTTP bodies being read. Each connection may hold
 * up to the largest message (`maxMessageBytes`) of an unfinished one, and the connection caps
 * bound how many connections there are, not their sum: without this budget one local process
 * opening thousands of sockets, each sending all but the last byte of a frame, made the server hold
 * gigabytes. Pure bookkeeping: the edges say what each holder holds, the budget says who must go.
 *
 *   holder received a chunk ─▶ hold(holder, bytes of its unfinished message + chunk costs)
 *                                 │
 *                     total over the limit? ─ no ─▶ go on
 *                                 │ yes
 *                                 ▼
 *   evict the holder whose unfinished message began first, then the next, until the total fits
 *   (the one receiving too, if it is the oldest): each is told to stop (close 1013 / answer 503)
 *
 *   message complete, body read, connection gone ─▶ hold(holder, 0): its bytes are free
 *
 * Why the oldest, not the largest or the one receiving: a message arriving at line speed is the
 * youngest, so whoever keeps frames unfinished to hold memory goes first, however thinly it spreads
 * its bytes over connections; refusing the one receiving would let a full budget stay full while
 * every newcomer is turned away; and the oldest is the first entry of an insertion-ordered map, so
 * choosing it costs nothing.
 */
import { systemClock, type Clock } from './clock.js';
import type { Logger } from './logger.js';
import { silentLogger } from './logger.js';

/** Default of the budget, bytes: 64 MiB (README "Memory"). */
export const DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024;

/**
 * What one received chunk costs while it is held, beyond its bytes: a Buffer with a backing store
 * of its own (about 600 bytes of RSS each, measured on node 20 with a peer sending a few bytes per
 * segment). Counted so that a peer dribbling a frame a byte at a time pays for what it costs.
 */
export const CHUNK_COST = 1024;

/** The charge of `bytes` held in `chunks` chunks. */
export function inflightCharge(bytes: number, chunks: number): number {
  return bytes + chunks * CHUNK_COST;
}

/**
 * A connection or request that holds part of a message the budget counts. The budget keeps its
 * holders in a list through fields of their own (as `Deadlines` does), not in a `Map`: one entry in
 * and out per HTTP body would churn a table (core README, "Tables that churn"). Start the fields at
 * 0 / undefined / false; only the budget writes them.
 */
export interface InflightHolder {
  inflightCharge: number;
  inflightPrev: InflightHolder | undefined;
  inflightNext: InflightHolder | undefined;
  inflightListed: boolean;
  /**
   * The budget no longer counts this holder: stop receiving and let go of what it holds (close the
   * websocket 1013, answer the body 503). `reason` names the limit. Called at most once per
   * {@link InflightBudget.hold} that counted it; must not throw.
   */
  evictInflight(reason: string): void;
}

export interface InflightBudgetOptions {
  readonly logger?: Logger;
  /** The clock of the once-a-second log. */
  readonly clock?: Clock;
}

/** How often `inflight.full` may be logged, ms: a flood must not flood the log. */
const LOG_EVERY_MS = 1000;

export class InflightBudget {
  /** Holders with an unfinished message, the one whose message began first at the head. */
  private head: InflightHolder | undefined = undefined;
  private tail: InflightHolder | undefined = undefined;
  private count = 0;
  private heldBytes = 0;
  private evictedSinceLog = 0;
  private loggedAt = Number.NEGATIVE_INFINITY;
  private readonly logger: Logger;
  private readonly clock: Clock;
  /** Why a holder is evicted (a websocket close reason: at most 123 bytes). */
  readonly reason: string;

  /** @param limit Most bytes held at once (charges as {@link inflightCharge} counts them). */
  constructor(
    readonly limit: number,
    options: InflightBudgetOptions = {},
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('maxInflightBytes must be a positive whole number');
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.reason = `Server is receiving too much at once (maxInflightBytes ${limit}); try again later`;
  }

  /** Bytes counted now. */
  get total(): number {
    return this.heldBytes;
  }

  /** Holders counted now. */
  get holders(): number {
    return this.count;
  }

  /**
   * `holder` now holds `charge` bytes of an unfinished message (all of it so far, not what came
   * last); 0 when its message is complete or it is gone. Past the limit, holders are evicted, oldest
   * first, until the total fits. Returns false when `holder` itself was evicted.
   */
  hold(holder: InflightHolder, charge: number): boolean {
    if (charge <= 0) {
      if (holder.inflightListed) this.unlink(holder);
      return true;
    }
    // A holder not counted yet goes last (its message is the youngest); one counted keeps its place.
    if (!holder.inflightListed) {
      holder.inflightListed = true;
      holder.inflightPrev = this.tail;
      holder.inflightNext = undefined;
      if (this.tail) this.tail.inflightNext = holder;
      else this.head = holder;
      this.tail = holder;
      this.count++;
    }
    this.heldBytes += charge - holder.inflightCharge;
    holder.inflightCharge = charge;
    return this.heldBytes <= this.limit || this.makeRoom(holder);
  }

  /** `holder` is gone, or its message complete: its bytes are free. */
  release(holder: InflightHolder): void {
    if (holder.inflightListed) this.unlink(holder);
  }

  private unlink(holder: InflightHolder): void {
    this.heldBytes -= holder.inflightCharge;
    holder.inflightCharge = 0;
    holder.inflightListed = false;
    if (holder.inflightPrev) holder.inflightPrev.inflightNext = holder.inflightNext;
    else this.head = holder.inflightNext;
    if (holder.inflightNext) holder.inflightNext.inflightPrev = holder.inflightPrev;
    else this.tail = holder.inflightPrev;
    holder.inflightPrev = holder.inflightNext = undefined;
    this.count--;
  }

  /** Evict the oldest holders until the total fits; false when `receiving` was one of them. */
  private makeRoom(receiving: InflightHolder): boolean {
    let survived = true;
    while (this.heldBytes > this.limit && this.head !== undefined) {
      const victim = this.head;
      this.unlink(victim);
      this.evictedSinceLog++;
      if (victim === receiving) survived = false;
      try {
        victim.evictInflight(this.reason);
      } catch (error) {
        this.logger.error('inflight.evict_failed', { error });
      }
    }
    this.logFull();
    return survived;
  }

  private logFull(): void {
    const now = this.clock.now();
    if (now - this.loggedAt < LOG_EVERY_MS) return;
    this.loggedAt = now;
    this.logger.warn('inflight.full', {
      limit: this.limit,
      held: this.heldBytes,
      holders: this.count,
      evicted: this.evictedSinceLog,
      message: 'unfinished messages passed --max-inflight-bytes: the connections holding the oldest were closed',
    });
    this.evictedSinceLog = 0;
  }
}
