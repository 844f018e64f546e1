/** The router's options, their defaults, and the checked set a router runs with. */
import type { IsServerId } from './aliases.js';
import type { CallRecord } from './call-table.js';
import { CATALOG_LIMIT_DEFAULTS, type CatalogLimits } from './catalog-limits.js';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';

export interface RouterOptions extends Partial<CatalogLimits> {
  /** Time a client has to answer a callClient, ms. Default 15000. */
  invocationTimeoutMs?: number;
  /** How often every session is pinged and checked for silence, ms. Default 30000. */
  heartbeatIntervalMs?: number;
  /** A session silent for this long is closed, ms. Default 90000. */
  heartbeatTimeoutMs?: number;
  /**
   * Most calls waiting for one client's answer. A call over it ends at once, before anything is
   * sent, with `not_ready` (the HTTP edge answers 503 with `Retry-After`). Default 1000.
   */
  maxPendingCalls?: number;
  /**
   * Whether an id is a server id of this server's cluster (read at each registration, so it may
   * learn members as they join). Under an auth policy the ids named like a member's mirrors
   * (`<member>.<clientId>`) are that member's alone (ownership.ts). Default: none.
   */
  isServerId?: IsServerId;
  logger?: Logger;
  /**
   * Every time reading and timer of the router: call time-outs and durations, the liveness sweep,
   * `lastSeen` and `registeredAt` (its wall clock), the catalog rate. Default: the system's.
   */
  clock?: Clock;
  /**
   * Called once as each call ends, whatever its outcome (metrics, access and audit logs). Runs on
   * the call's path: keep it cheap; what it throws is logged. Without it calls are not timed.
   */
  onCallEnd?: (record: CallRecord) => void;
  /**
   * Which scope grants registering a client (scopes.ts; `mdp:register` by default): a session whose
   * `scopes` lack it (or an `<it>:<prefix>` scope the id starts with) is refused (`missing_scope`).
   */
  registerScope?: string;
}

export const ROUTER_DEFAULTS = {
  invocationTimeoutMs: 15_000,
  heartbeatIntervalMs: 30_000,
  heartbeatTimeoutMs: 90_000,
  maxPendingCalls: 1000,
  ...CATALOG_LIMIT_DEFAULTS,
} as const;

/** The limits and times a router runs with: every number of {@link RouterOptions}, defaults filled in. */
export type RouterLimits = Required<Omit<RouterOptions, 'logger' | 'onCallEnd' | 'isServerId' | 'clock' | 'registerScope'>>;

/** `options` with the defaults filled in; a number that is not positive and finite is a RangeError. */
export function routerLimits(options: RouterOptions): RouterLimits {
  const keys = Object.keys(ROUTER_DEFAULTS) as (keyof RouterLimits)[];
  const limits = Object.fromEntries(keys.map((key) => [key, options[key] ?? ROUTER_DEFAULTS[key]])) as RouterLimits;
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  }
  return limits;
}
