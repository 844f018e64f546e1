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
}

export const ROUTER_DEFAULTS = {
  invocationTimeoutMs: 15_000,
  heartbeatIntervalMs: 30_000,
  heartbeatTimeoutMs: 90_000,
  maxPendingCalls: 1000,
  ...CATALOG_LIMIT_DEFAULTS,
} as const;

/** The limits and times a router runs with: every number of {@link RouterOptions}, defaults filled in. */
export type RouterLimits = Required<Omit<RouterOptions, 'logger' | 'onCallEnd' | 'isServerId' | 'clock'>>;

/** `options` with the defaults filled in; a number that is not positive and finite is a RangeError. */
export function routerLimits(options: RouterOptions): RouterLimits {
  const limits: RouterLimits = {
    invocationTimeoutMs: options.invocationTimeoutMs ?? ROUTER_DEFAULTS.invocationTimeoutMs,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? ROUTER_DEFAULTS.heartbeatIntervalMs,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? ROUTER_DEFAULTS.heartbeatTimeoutMs,
    maxPendingCalls: options.maxPendingCalls ?? ROUTER_DEFAULTS.maxPendingCalls,
    maxPathLength: options.maxPathLength ?? ROUTER_DEFAULTS.maxPathLength,
    maxPathSegments: options.maxPathSegments ?? ROUTER_DEFAULTS.maxPathSegments,
    maxCatalogPaths: options.maxCatalogPaths ?? ROUTER_DEFAULTS.maxCatalogPaths,
    maxTotalPaths: options.maxTotalPaths ?? ROUTER_DEFAULTS.maxTotalPaths,
    maxDescriptionLength: options.maxDescriptionLength ?? ROUTER_DEFAULTS.maxDescriptionLength,
    maxSchemaLength: options.maxSchemaLength ?? ROUTER_DEFAULTS.maxSchemaLength,
    maxCatalogBytes: options.maxCatalogBytes ?? ROUTER_DEFAULTS.maxCatalogBytes,
    maxTotalCatalogBytes: options.maxTotalCatalogBytes ?? ROUTER_DEFAULTS.maxTotalCatalogBytes,
    maxClientsPerAddress: options.maxClientsPerAddress ?? ROUTER_DEFAULTS.maxClientsPerAddress,
    catalogUpdatesPerMinute: options.catalogUpdatesPerMinute ?? ROUTER_DEFAULTS.catalogUpdatesPerMinute,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  }
  return limits;
}
