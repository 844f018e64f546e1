/**
 * Which clients came, left or changed between two listings of the host, as a pure step: the
 * server's events for agents that asked for log messages (`logging/setLevel`) and the skills whose
 * subscribers must hear `notifications/resources/updated`. A client is keyed by the id agents are
 * given (`catalogClient`); it "changed" when its catalog or name did, or when it registered again
 * (a new `connectedAt`) between the two listings.
 */
import type { ListedClient } from '@mdp/protocol';
import { catalogClient, type CatalogClient } from './surface.js';

/** What a listing remembers of each client: enough to tell a change, cheaply. */
interface Seen {
  readonly client: CatalogClient;
  readonly connectedAt: string;
  /** The paths array as listed (an unchanged local catalog is the same array from one listing to the next). */
  readonly paths: readonly unknown[];
  /** Its JSON, made only when an identity check cannot tell. */
  json?: string;
}

export type ClientBook = ReadonlyMap<string, Seen>;

export const emptyClientBook: ClientBook = new Map();

export interface ClientChanges {
  readonly came: readonly CatalogClient[];
  readonly left: readonly CatalogClient[];
  /** Listed before and now, with another catalog or name, or registered again. */
  readonly changed: readonly CatalogClient[];
}

export const noChanges: ClientChanges = { came: [], left: [], changed: [] };

export function hasChanges(changes: ClientChanges): boolean {
  return changes.came.length + changes.left.length + changes.changed.length > 0;
}

const pathsJson = (seen: Seen): string => (seen.json ??= JSON.stringify(seen.paths));

function differs(before: Seen, now: Seen): boolean {
  if (before.connectedAt !== now.connectedAt || before.client.name !== now.client.name) return true;
  if (before.paths === now.paths) return false;
  return pathsJson(before) !== pathsJson(now);
}

/**
 * The book after `listing`, and what changed since `book`. With `baseline` (the first listing since
 * the bridge began following the host) nothing is reported: clients already there did not just come.
 */
export function diffClients(book: ClientBook, listing: readonly ListedClient[], baseline = false): { book: ClientBook; changes: ClientChanges } {
  const next = new Map<string, Seen>();
  for (const listed of listing) {
    const client = catalogClient(listed);
    next.set(client.id, { client, connectedAt: listed.connectedAt, paths: listed.paths });
  }
  if (baseline) return { book: next, changes: noChanges };
  const came: CatalogClient[] = [];
  const changed: CatalogClient[] = [];
  const left: CatalogClient[] = [];
  for (const [id, now] of next) {
    const before = book.get(id);
    if (!before) came.push(now.client);
    else if (differs(before, now)) changed.push(now.client);
  }
  for (const [id, before] of book) if (!next.has(id)) left.push(before.client);
  return { book: next, changes: { came, left, changed } };
}
