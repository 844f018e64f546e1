/**
 * Limits on what a client may register (SPEC §4.7): the length and segment count of
 * each path, the paths in one catalog, and how often a session may register or replace its catalog.
 * Pure functions; the router applies them before it touches the registry.
 */
import type { PathDescriptor } from '@mdp/protocol';

export interface CatalogLimits {
  /** Longest path, characters. A path must fit in a request line to be read at all. */
  readonly maxPathLength: number;
  /** Most segments in one path (`/a/b/skill.md` has 3). */
  readonly maxPathSegments: number;
  /** Most paths in one catalog. */
  readonly maxCatalogPaths: number;
  /** Most paths in every catalog registered here together: what bounds the registry's memory. */
  readonly maxTotalPaths: number;
  /**
   * Most catalog changes (`registerClient` and `updateClientCatalog`) per session and minute; up to
   * this many may come at once, then they are allowed back at this rate.
   */
  readonly catalogUpdatesPerMinute: number;
}

export const CATALOG_LIMIT_DEFAULTS: CatalogLimits = Object.freeze({
  maxPathLength: 1024,
  maxPathSegments: 32,
  maxCatalogPaths: 10_000,
  maxTotalPaths: 250_000,
  catalogUpdatesPerMinute: 120,
});

/** Why a catalog may not be registered, or `undefined` when it may. */
export function catalogProblem(paths: readonly PathDescriptor[], limits: CatalogLimits): string | undefined {
  if (paths.length > limits.maxCatalogPaths) {
    return `Catalog has ${paths.length} paths; at most ${limits.maxCatalogPaths} are allowed`;
  }
  for (let i = 0; i < paths.length; i++) {
    const path = (paths[i] as PathDescriptor).path;
    if (path.length > limits.maxPathLength) {
      return `paths[${i}].path is ${path.length} characters long; at most ${limits.maxPathLength} are allowed`;
    }
    let segments = 0;
    for (let at = path.indexOf('/'); at >= 0; at = path.indexOf('/', at + 1)) segments++;
    if (segments > limits.maxPathSegments) {
      return `paths[${i}].path has ${segments} segments; at most ${limits.maxPathSegments} are allowed`;
    }
  }
  return undefined;
}

/**
 * Why a catalog of `adding` paths may not replace catalogs of `freeing` paths when `total` are
 * registered, or `undefined` when it may. Not the catalog's fault: the server is full.
 */
export function totalPathsProblem(total: number, freeing: number, adding: number, maxTotalPaths: number): string | undefined {
  const after = total - freeing + adding;
  if (adding <= freeing || after <= maxTotalPaths) return undefined;
  return `The server holds ${total} paths; ${adding} more would pass its limit of ${maxTotalPaths} paths in all catalogs; try again later`;
}

/** A token bucket's state; starts full. Only {@link takeToken} writes it. */
export interface RateBucket {
  tokens: number;
  /** When `tokens` was last brought up to date, ms. */
  refilledAt: number;
}

/** A full bucket for a rate of `perMinute`. */
export function fullBucket(perMinute: number, now: number): RateBucket {
  return { tokens: perMinute, refilledAt: now };
}

/**
 * Take one token at `now` from a bucket holding up to `perMinute` tokens and refilled at
 * `perMinute` per minute. Returns 0 when taken, otherwise how long until one is there, ms.
 */
export function takeToken(bucket: RateBucket, now: number, perMinute: number): number {
  const elapsed = Math.max(0, now - bucket.refilledAt);
  bucket.tokens = Math.min(perMinute, bucket.tokens + (elapsed * perMinute) / 60_000);
  bucket.refilledAt = now;
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return 0;
  }
  return Math.ceil(((1 - bucket.tokens) * 60_000) / perMinute);
}
