/**
 * Limits on what a client may register (SPEC §4.7): the length and segment count of each path, the
 * paths in one catalog, the size of each text and schema in it, its size in bytes, the paths and
 * bytes of all catalogs together, the clients from one address, and how often a session may register
 * or replace its catalog. Pure functions; the router applies them before it touches the registry.
 */
import type { ClientDescriptor, PathDescriptor } from '@mdp/protocol';
import { JsonMeter, isWritten } from './json-size.js';

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
   * Longest text a client registers, characters (`.length`): a description of the client or of a
   * path, and every other string field (name, version, platform, contentType, extra fields) but
   * the path itself, which has {@link maxPathLength}.
   */
  readonly maxDescriptionLength: number;
  /**
   * Longest object a client registers, characters of its JSON: an `inputSchema` or `outputSchema`,
   * the client's `metadata`, and every other object or array field (extra fields are kept).
   */
  readonly maxSchemaLength: number;
  /** Largest catalog, UTF-8 bytes of the client descriptor's JSON (its paths included). */
  readonly maxCatalogBytes: number;
  /**
   * Most bytes in every catalog registered here together (as {@link maxCatalogBytes} counts them):
   * what bounds the registry's memory when catalogs are large rather than many.
   */
  readonly maxTotalCatalogBytes: number;
  /**
   * Most clients registered at once from one remote address (`SessionTransport.remoteAddress`).
   * Sessions without an address (in-process) and proven mirror links of cluster members are not
   * counted.
   */
  readonly maxClientsPerAddress: number;
  /**
   * Most catalog changes (`registerClient` and `updateClientCatalog`) per session and minute; up to
   * this many may come at once, then they are allowed back at this rate.
   */
  readonly maxCatalogUpdatesPerMinute: number;
}

export const CATALOG_LIMIT_DEFAULTS: CatalogLimits = Object.freeze({
  maxPathLength: 1024,
  maxPathSegments: 32,
  maxCatalogPaths: 10_000,
  maxTotalPaths: 250_000,
  maxDescriptionLength: 16 * 1024,
  maxSchemaLength: 64 * 1024,
  maxCatalogBytes: 1024 * 1024,
  // A byte of catalog JSON costs from 1 to about 21 bytes of heap, by its shape (README: "Limits"):
  // 32 MiB keeps the registry under about 700 MB of heap, 850 MB of RSS, whatever it holds.
  maxTotalCatalogBytes: 32 * 1024 * 1024,
  maxClientsPerAddress: 1000,
  maxCatalogUpdatesPerMinute: 120,
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

/** A measured catalog: its bytes, and those of its descriptor without paths (kept across updates). */
export interface CatalogSize {
  /** UTF-8 bytes of the client descriptor's JSON. */
  readonly bytes: number;
  /** UTF-8 bytes of the same JSON with `paths: []`. */
  readonly headBytes: number;
}

/** A catalog refused for its size, and why. */
export interface SizeProblem {
  readonly problem: string;
}

type SizeLimits = Pick<CatalogLimits, 'maxDescriptionLength' | 'maxSchemaLength' | 'maxCatalogBytes'>;

/** Fields of a path descriptor that are checked elsewhere (`path`) or are short by their schema. */
const CHECKED_PATH_FIELDS: ReadonlySet<string> = new Set(['type', 'method', 'path']);

/**
 * The name of field `key` for an error message, short whatever a client named it: of the client
 * descriptor (`where` is `client`) or of path `where` of the catalog.
 */
function fieldName(where: string | number, key: string): string {
  return (
    (typeof where === 'number' ? `paths[${where}]` : where) +
    (/^[A-Za-z_$][\w$]{0,63}$/.test(key) ? `.${key}` : `[${JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key)}]`)
  );
}

/**
 * Measure one field's value into `meter`, or say why it is too long: a string against
 * `maxDescriptionLength` (characters), an object or array against `maxSchemaLength` (characters
 * of its JSON). The field is `key` of `where`. Stops early past either cap or past `meter.stopBytes`.
 */
function addField(meter: JsonMeter, value: unknown, where: string | number, key: string, limits: SizeLimits): string | undefined {
  if (typeof value === 'string' && value.length > limits.maxDescriptionLength) {
    return `${fieldName(where, key)} is ${value.length} characters long; at most ${limits.maxDescriptionLength} are allowed (maxDescriptionLength)`;
  }
  if (typeof value !== 'object' || value === null) {
    meter.add(value);
    return undefined;
  }
  const startChars = meter.chars;
  meter.stopChars = startChars + limits.maxSchemaLength;
  meter.add(value);
  meter.stopChars = Infinity;
  if (meter.chars - startChars > limits.maxSchemaLength) {
    return `${fieldName(where, key)} is over ${limits.maxSchemaLength} characters as JSON (maxSchemaLength)`;
  }
  return undefined;
}

/**
 * Measure the fields of `object` (those JSON writes) into `meter`: the number measured, or why one
 * is too long (`where`, as for {@link fieldName}). Fields in `plain` are measured without the field caps; in a client descriptor
 * (`head`), `paths` counts as `[]`.
 */
function addFields(
  meter: JsonMeter,
  object: object,
  where: string | number,
  limits: SizeLimits,
  plain: ReadonlySet<string> | undefined,
  head: boolean,
): number | string {
  let fields = 0;
  for (const key of Object.keys(object)) {
    const value = (object as Record<string, unknown>)[key];
    if (!isWritten(value)) continue;
    fields++;
    meter.addKey(key);
    if (head && key === 'paths') meter.addAscii(2);
    else if (plain?.has(key)) meter.add(value);
    else {
      const problem = addField(meter, value, where, key, limits);
      if (problem !== undefined) return problem;
    }
    if (meter.bytes > meter.stopBytes) return fields;
  }
  return fields;
}

const overCatalog = (max: number): SizeProblem => ({ problem: `Catalog is over ${max} bytes as JSON (maxCatalogBytes)` });

/**
 * Measure a catalog against the size caps in one pass that writes nothing: each text and schema
 * field (client and paths, extra fields included) and the whole descriptor in UTF-8 bytes of its
 * JSON. `head` is the client descriptor (its own fields are measured as well), or, for
 * `updateClientCatalog`, the `headBytes` of the descriptor already registered. Stops at the first
 * problem, and past `maxCatalogBytes`: what is refused costs no more to measure than the cap.
 */
export function measureCatalog(paths: readonly PathDescriptor[], head: ClientDescriptor | number, limits: SizeLimits): CatalogSize | SizeProblem {
  const max = limits.maxCatalogBytes;
  const meter = new JsonMeter(Infinity, max);
  let headBytes: number;
  if (typeof head === 'number') {
    headBytes = head;
  } else {
    // The descriptor as JSON with `paths: []`; the paths are measured below.
    const fields = addFields(meter, head, 'client', limits, undefined, true);
    if (typeof fields === 'string') return { problem: fields };
    meter.addAscii(fields === 0 ? 2 : fields + 1);
    headBytes = meter.bytes;
  }
  if (headBytes > max) return overCatalog(max);
  // `[]` is in the head already: each path adds itself and a comma (the first none).
  meter.bytes = headBytes;
  meter.chars = 0;
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i] as PathDescriptor;
    if (i > 0) meter.addAscii(1);
    const fields = addFields(meter, path, i, limits, CHECKED_PATH_FIELDS, false);
    if (typeof fields === 'string') return { problem: fields };
    meter.addAscii(fields === 0 ? 2 : fields + 1);
    if (meter.bytes > max) return overCatalog(max);
  }
  return { bytes: meter.bytes, headBytes };
}

/**
 * Why a catalog of `adding` bytes may not replace catalogs of `freeing` bytes when `total` are
 * held, or `undefined` when it may. Not the catalog's fault: the server is full.
 */
export function totalBytesProblem(total: number, freeing: number, adding: number, maxTotalCatalogBytes: number): string | undefined {
  if (adding <= freeing || total - freeing + adding <= maxTotalCatalogBytes) return undefined;
  return `Catalogs here hold ${total} bytes; ${adding} more would pass maxTotalCatalogBytes (${maxTotalCatalogBytes}); try again later`;
}

/** Why one more client from an address holding `held` may not register, or `undefined`. */
export function addressProblem(held: number, maxClientsPerAddress: number): string | undefined {
  if (held < maxClientsPerAddress) return undefined;
  return `Too many clients from this address (maxClientsPerAddress ${maxClientsPerAddress})`;
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
