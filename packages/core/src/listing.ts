/**
 * Paged listings (SPEC §12.6): the parts of a page that know nothing of the registry. A listing is
 * walked in one fixed order, and a cursor names the last place a page looked at, never an index:
 * clients come and go between two pages, and every client (path) present for the whole walk is
 * still listed exactly once.
 *
 *   order     clients by id; paths by client id, then path, then method, then declaration order
 *   key       an id or path as it is, or, past KEY_HEAD characters, its head and a hash of the whole
 *             (positionKey): every cursor stays a few kB, whatever a client calls itself
 *   cursor    base64url of [1, 'c', clientKey] or [1, 'p', clientKey, pathKey | null, method, dup]
 *             (pathKey null: past every path of that client)
 *
 * A page ends at the first of: `limit` items; `maxBytes` of JSON (an item that does not fit starts
 * the next page; one alone larger than the bound is sent alone); the scan budget (entries looked
 * at, characters searched), so that a search that matches nothing does not look through 250,000
 * paths in one turn of the event loop. A page that ends early still has a `nextCursor`.
 */
import { createHash } from 'node:crypto';
import { ENDPOINT_METHODS, type EndpointMethod } from '@mdp/protocol';
import { MdpError } from './errors.js';
import type { Viewer } from './tenancy.js';

export interface ListingLimits {
  /** Items in a page when the caller names no `limit`. */
  readonly defaultLimit: number;
  /** Bytes of JSON one page may take, envelope and cursor included (an item larger than this alone is sent alone). */
  readonly maxPageBytes: number;
  /** Entries (clients and paths) one page may look at, listed or not. */
  readonly scanEntries: number;
  /** Characters of text one page's `search` may look through. */
  readonly scanChars: number;
}

/**
 * The defaults, measured on the bench machine (bench README, `listing`): a page of 1000 paths or of
 * 1 MiB of descriptions is built and serialised in a few ms, and 20,000 entries or 4 M characters
 * searched take about as long, so no page holds the event loop for long.
 */
export const LISTING_DEFAULTS: ListingLimits = Object.freeze({
  defaultLimit: 100,
  maxPageBytes: 1024 * 1024,
  scanEntries: 20_000,
  scanChars: 4_000_000,
});

/** In-process options of one listing (they never travel over the wire). */
export interface ListOptions {
  /** Bytes of JSON this page may take; at most the host's `maxPageBytes`. */
  readonly maxBytes?: number;
  /**
   * An item whose JSON is larger than this is listed in a short form marked `truncated: true`
   * (no catalog, no description), and left out when even that is larger: for a cluster link, whose
   * frames cannot carry more. Default: none (an item is listed whole, alone on its page if need be).
   */
  readonly maxItemBytes?: number;
  /**
   * Who asks (tenancy.ts): the listing holds only the clients it sees, and neither its cursors nor
   * where its pages end tell of the others. Default: none, the server itself (every client).
   */
  readonly viewer?: Viewer;
}

/** Characters of an id or path kept as they are in a position key. */
export const KEY_HEAD = 128;

/**
 * The key that orders `text` in a listing: `text` itself up to {@link KEY_HEAD} characters, else
 * its head, a NUL and a SHA-256 of the whole. Keys compare as strings (`<`); the map is one-to-one
 * (short keys are shorter than long ones), so a key is an exact position even once its client left.
 */
export function positionKey(text: string): string {
  if (text.length <= KEY_HEAD) return text;
  return `${text.slice(0, KEY_HEAD)}\u0000${createHash('sha256').update(text).digest('hex')}`;
}

const KEY_MAX = KEY_HEAD + 1 + 64;

export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Where a clients listing left off: after the client with this key. */
export interface ClientsPosition {
  readonly client: string;
}

/** Where a paths listing left off: after this path of this client, or past all of its paths (`path` null). */
export interface PathsPosition {
  readonly client: string;
  readonly path: string | null;
  readonly method: EndpointMethod;
  readonly dup: number;
}

/** A path entry's place among its client's paths, for {@link comparePathPlace}. */
export interface PathPlace {
  readonly key: string;
  readonly method: EndpointMethod;
  readonly dup: number;
}

export function comparePathPlace(a: PathPlace, b: PathPlace): number {
  return compareKeys(a.key, b.key) || compareKeys(a.method, b.method) || a.dup - b.dup;
}

const CURSOR_VERSION = 1;

function encode(value: unknown[]): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function clientsCursor(position: ClientsPosition): string {
  return encode([CURSOR_VERSION, 'c', position.client]);
}

export function pathsCursor(position: PathsPosition): string {
  return encode([CURSOR_VERSION, 'p', position.client, position.path, position.method, position.dup]);
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

function badCursor(what: 'clients' | 'paths'): MdpError {
  return new MdpError('bad_request', `cursor: not a cursor of this ${what} listing (pass the nextCursor of the page before, as it was given)`);
}

function decode(text: string, kind: 'c' | 'p'): unknown[] | undefined {
  if (!BASE64URL.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value[0] !== CURSOR_VERSION || value[1] !== kind) return undefined;
  return value;
}

const isKey = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= KEY_MAX;

/** The position a clients cursor names; MdpError `bad_request` (a 400 naming `cursor`) for anything else. */
export function parseClientsCursor(text: string): ClientsPosition {
  const value = decode(text, 'c');
  if (value?.length !== 3 || !isKey(value[2])) throw badCursor('clients');
  return { client: value[2] };
}

/** The position a paths cursor names; MdpError `bad_request` (a 400 naming `cursor`) for anything else. */
export function parsePathsCursor(text: string): PathsPosition {
  const value = decode(text, 'p');
  if (value?.length !== 6) throw badCursor('paths');
  const [, , client, path, method, dup] = value;
  if (!isKey(client) || (path !== null && !isKey(path))) throw badCursor('paths');
  if (!(ENDPOINT_METHODS as readonly unknown[]).includes(method)) throw badCursor('paths');
  if (typeof dup !== 'number' || !Number.isSafeInteger(dup) || dup < 0) throw badCursor('paths');
  return { client, path, method: method as EndpointMethod, dup };
}

/**
 * What one page may still look at. `spent()` is checked before each entry (never before the first:
 * every page makes progress).
 */
export class ScanBudget {
  private entries = 0;
  private chars = 0;

  constructor(private readonly limits: Pick<ListingLimits, 'scanEntries' | 'scanChars'>) {}

  entry(count = 1): void {
    this.entries += count;
  }

  searched(chars: number): void {
    this.chars += chars;
  }

  spent(): boolean {
    return this.entries >= this.limits.scanEntries || this.chars >= this.limits.scanChars;
  }
}

/**
 * A case-insensitive substring search (SPEC §12) that counts what it looks through. Undefined for
 * no search (an empty or blank one). A regular expression with the `i` and `u` flags (Unicode case
 * folding): it looks through a text without making a lower-case copy of it, several times faster
 * than `toLowerCase().includes()` over a large catalog.
 */
export function searchFor(search: string | undefined, budget: ScanBudget): ((...texts: Array<string | undefined>) => boolean) | undefined {
  const needle = search?.trim();
  if (!needle) return undefined;
  const pattern = new RegExp(needle.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'), 'iu');
  return (...texts) => {
    for (const text of texts) {
      if (text === undefined) continue;
      budget.searched(text.length);
      if (pattern.test(text)) return true;
    }
    return false;
  };
}

/** Room kept in every page for `{"<items>":[`, `],"nextCursor":"…"}` and the cursor itself. */
const ENVELOPE_BYTES = 64 + 4096;

/**
 * The items of one page and their JSON size. `add` takes an item when it fits (the first always
 * does, whatever its size) and says whether it did.
 */
export class PageBuilder<T> {
  readonly items: T[] = [];
  private bytes = ENVELOPE_BYTES;

  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
    private readonly maxItemBytes: number = Infinity,
    private readonly shorten?: (item: T) => T,
  ) {}

  get full(): boolean {
    return this.items.length >= this.limit;
  }

  /**
   * Take `item` if it fits; false when it does not (it starts the next page). An item that cannot
   * be listed at all is skipped (true). `bytes`: its JSON size when the caller knows it (jsonSize).
   */
  add(item: T, bytes?: number): boolean {
    let listed = item;
    let size = bytes ?? Buffer.byteLength(JSON.stringify(item));
    if (size > this.maxItemBytes) {
      if (!this.shorten) return true;
      listed = this.shorten(item);
      size = Buffer.byteLength(JSON.stringify(listed));
      if (size > this.maxItemBytes) return true;
    }
    const cost = size + (this.items.length > 0 ? 1 : 0);
    if (this.items.length > 0 && this.bytes + cost > this.maxBytes) return false;
    this.items.push(listed);
    this.bytes += cost;
    return true;
  }
}

/** JSON sizes of objects that do not change (descriptors: a catalog update makes new ones), bytes. */
const jsonSizes = new WeakMap<object, number>();

/** The UTF-8 size of `JSON.stringify(value)`, made once per object. */
export function cachedJsonSize(value: object): number {
  let size = jsonSizes.get(value);
  if (size === undefined) {
    size = Buffer.byteLength(JSON.stringify(value));
    jsonSizes.set(value, size);
  }
  return size;
}

/**
 * The JSON size of `{...base, ...extra}` without writing it: `base`'s (made once) and `extra`'s
 * (small) put together. Undefined when they share a key (the sum would be wrong): measure it whole.
 */
export function mergedJsonSize(base: object, extra: Record<string, unknown>, extraSize: number): number | undefined {
  for (const key in extra) if (Object.hasOwn(base, key)) return undefined;
  const baseSize = cachedJsonSize(base);
  // '{a}' and '{b}' make '{a,b}': less a brace each, plus a comma when both have members.
  return baseSize + extraSize - 2 + (baseSize > 2 && extraSize > 2 ? 1 : 0);
}

/** The default limits with `given` over them; each must be a positive number. */
export function listingLimits(given: Partial<ListingLimits> = {}): ListingLimits {
  const limits = { ...LISTING_DEFAULTS };
  for (const key of Object.keys(LISTING_DEFAULTS) as Array<keyof ListingLimits>) {
    const value = given[key];
    if (value === undefined) continue;
    if (!Number.isFinite(value) || value < 1) throw new RangeError(`listing.${key} must be a positive number, got ${value}`);
    limits[key] = Math.floor(value);
  }
  return limits;
}

/**
 * `setImmediate` as it was when this module loaded. Turns here are about the event loop, not time:
 * a test that fakes timers (and with them `setImmediate`) must not stall every listing.
 */
const immediate = globalThis.setImmediate;

/** Wait for the next turn of the event loop: what a caller walking many pages does between two. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => immediate(resolve));
}

/**
 * Listing pages asked for at once are made one per turn of the event loop, in the order asked:
 * whatever else came in meanwhile (a `/mdp/meta`, a skill read, a call) is served between two
 * pages, so however many callers list at once, nothing waits for more than one page. A page is
 * made, and written by its edge, in the turn it is let through (`setImmediate`: after the I/O of
 * that turn).
 *
 *   page asked ─▶ queue ─▶ one per turn (check phase) ─▶ built ─▶ serialised and written
 *                                  ▲ the turn's I/O (other requests) runs before the next one
 */
class PageTurns {
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;

  /** Resolves in the turn this page may be made in. */
  take(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    immediate(() => {
      this.scheduled = false;
      this.waiting.shift()?.();
      if (this.waiting.length > 0) this.schedule();
    });
  }
}

/** One queue for the process: every host of it shares the event loop. */
const pageTurns = new PageTurns();

/** Wait for this page's turn (see {@link PageTurns}). */
export function pageTurn(): Promise<void> {
  return pageTurns.take();
}

/**
 * Every item of a listing, page after page, with a turn of the event loop between two pages: for
 * in-process callers that need all of it (the MCP catalog). `page` asks for the page at `cursor`.
 * A listing whose `nextCursor` does not move on (a broken peer) ends with an error, not a loop.
 */
export async function collectPages<T>(
  page: (cursor: string | undefined) => Promise<{ readonly items: readonly T[]; readonly nextCursor?: string | undefined }>,
): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { items, nextCursor } = await page(cursor);
    for (const item of items) all.push(item);
    if (nextCursor === undefined) return all;
    if (nextCursor === cursor) throw new MdpError('handler_error', 'The listing did not move on: its nextCursor was the cursor it was asked for');
    cursor = nextCursor;
    await nextTurn();
  }
}
