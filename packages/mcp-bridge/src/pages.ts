/**
 * MCP's own pagination (SPEC §13.3: `cursor` in, `nextCursor` out) for `prompts/list`,
 * `resources/list` and `resources/templates/list`: each list is read in one fixed order (prompts
 * by name, resources by URI, templates by URI template) and a cursor names the last item sent,
 * never an index, so a page asked for after the catalog changed goes on where the one before ended
 * (as the host's listings do, `@mdp/core` listing.ts). A page holds at most `MCP_PAGE.limit` items and about
 * `MCP_PAGE.maxBytes` of JSON; an item alone larger than that is sent alone.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { LISTING_DEFAULTS, positionKey } from '@mdp/core';

export const MCP_PAGE = Object.freeze({
  /** Items in one page of a list. */
  limit: 500,
  /** Bytes of JSON of one page's items. */
  maxBytes: LISTING_DEFAULTS.maxPageBytes,
});

/** A list in listing order: the items and their keys. */
interface Sorted<T> {
  readonly items: readonly T[];
  readonly keys: readonly string[];
}

/** Each list in order, made on its first page (the surface makes new arrays when it changes). */
const sortedLists = new WeakMap<readonly unknown[], Sorted<unknown>>();

function sortedOf<T>(items: readonly T[], keyOf: (item: T) => string): Sorted<T> {
  const known = sortedLists.get(items) as Sorted<T> | undefined;
  if (known) return known;
  const entries = items.map((item) => ({ item, key: positionKey(keyOf(item)) }));
  entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const sorted = { items: entries.map((e) => e.item), keys: entries.map((e) => e.key) };
  sortedLists.set(items, sorted);
  return sorted;
}

const CURSOR_VERSION = 1;

function cursorOf(list: string, key: string): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, list, key]), 'utf8').toString('base64url');
}

/** The key a cursor names; an MCP invalid-params error (-32602, as MCP asks) for anything else. */
function keyOf(cursor: string, list: string): string {
  let value: unknown;
  try {
    value = /^[A-Za-z0-9_-]+$/.test(cursor) ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
  } catch {
    value = undefined;
  }
  if (Array.isArray(value) && value.length === 3 && value[0] === CURSOR_VERSION && value[1] === list && typeof value[2] === 'string') return value[2];
  throw new McpError(ErrorCode.InvalidParams, `Invalid cursor for ${list}: pass the nextCursor of the page before, as it was given`);
}

/**
 * The page of `items` (in the order of `order`) after `cursor`, as `list` answers it. `list` names
 * the list in its cursors, so that a cursor of one list is refused by another.
 */
export function mcpPage<T>(
  list: string,
  items: readonly T[],
  order: (item: T) => string,
  cursor: string | undefined,
  bytesOf: (item: T) => number,
): { page: T[]; nextCursor?: string } {
  const sorted = sortedOf(items, order);
  let at = 0;
  if (cursor !== undefined) {
    const after = keyOf(cursor, list);
    let low = 0;
    let high = sorted.keys.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((sorted.keys[mid] as string) <= after) low = mid + 1;
      else high = mid;
    }
    at = low;
  }
  const page: T[] = [];
  let bytes = 0;
  for (; at < sorted.items.length && page.length < MCP_PAGE.limit; at++) {
    const item = sorted.items[at] as T;
    const size = bytesOf(item) + 1;
    if (page.length > 0 && bytes + size > MCP_PAGE.maxBytes) break;
    page.push(item);
    bytes += size;
  }
  return at < sorted.items.length ? { page, nextCursor: cursorOf(list, sorted.keys[at - 1] as string) } : { page };
}

/** The JSON size of a list item, bytes. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
