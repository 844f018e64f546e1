/**
 * The registered clients in listing order (listing.ts), this node's and those of the fleet's other
 * nodes (remote.ts): their ids sorted by position key, kept up to date from the router's client
 * changes, so that a page finds where its cursor left off with a
 * binary search instead of sorting every client each time. Also which clients mirror which bare id
 * (the `aliases` of a listed client, SPEC §12), so that a page works them out for its own clients
 * without looking at all the others.
 *
 * Built on the first listing (listings are rare; registrations are not), then updated on each
 * event: an insertion or removal is one binary search and one splice; a batch (every client of a
 * fleet node that came up or died) one pass over the order, whatever its size.
 */
import { proxyMarker, type ClientDescriptor } from '@mdp/protocol';
import type { IsServerId } from './aliases.js';
import { compareKeys, positionKey } from './listing.js';

/** What the index needs of the router. */
export interface ClientSource {
  /** Every registered client's id and descriptor (none for a remote client: it has no mirrors). */
  clients(): Iterable<{ readonly id: string; readonly descriptor?: ClientDescriptor | undefined }>;
  get(id: string): { readonly descriptor?: ClientDescriptor | undefined } | undefined;
  /** Tells of the ids whose holder or catalog changed, a batch at a time (a fleet node's clients together). */
  onChange(listener: (ids: readonly string[]) => void): () => void;
}

/** A batch of at most this many ids is applied id by id (a splice each); a larger one in one pass. */
export const SPLICE_BATCH = 16;

export class ClientOrder {
  /** Position keys, ascending; `ids[i]` is the client of `keys[i]`. */
  private readonly keys: string[] = [];
  private readonly ids: string[] = [];
  /** Client id → the bare id its proxy marker names, and the server that marker names. */
  private readonly markers = new Map<string, { readonly clientId: string; readonly serverId: string }>();
  /** Bare id → the clients whose marker names it. */
  private readonly marked = new Map<string, Set<string>>();

  constructor(private readonly source: ClientSource) {
    const entries: Array<[string, string]> = [];
    for (const client of source.clients()) {
      entries.push([positionKey(client.id), client.id]);
      this.mark(client.id, client.descriptor);
    }
    entries.sort((a, b) => compareKeys(a[0], b[0]));
    for (const [key, id] of entries) {
      this.keys.push(key);
      this.ids.push(id);
    }
  }

  /** Follow the source from now on; returns the unsubscribe. */
  follow(): () => void {
    return this.source.onChange((ids) => this.apply(ids));
  }

  get size(): number {
    return this.ids.length;
  }

  keyAt(index: number): string {
    return this.keys[index] as string;
  }

  idAt(index: number): string {
    return this.ids[index] as string;
  }

  /** Index of the first client whose key is not below `key`. */
  lowerBound(key: string): number {
    let low = 0;
    let high = this.keys.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.keys[mid] as string) < key) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /**
   * The other ids that reach `client` unambiguously (aliases.ts `aliasFinder`): a trusted mirror's
   * bare id, when no client has it and no other client mirrors it. `seen`: the clients the caller
   * sees (tenancy.ts); the others count as absent. Default: all.
   */
  aliasesOf(client: { readonly id: string }, isServerId: IsServerId, has: (id: string) => boolean, seen?: (id: string) => boolean): string[] {
    const marker = this.markers.get(client.id);
    if (!marker || !isServerId(marker.serverId) || has(marker.clientId)) return [];
    let trusted = 0;
    for (const id of this.marked.get(marker.clientId) ?? []) {
      if (seen && !seen(id)) continue;
      const other = this.markers.get(id);
      if (other && isServerId(other.serverId) && ++trusted > 1) return [];
    }
    return [marker.clientId];
  }

  private apply(ids: readonly string[]): void {
    if (ids.length <= SPLICE_BATCH) {
      for (const id of ids) {
        // The router is the truth: an id replaced by a newer session is still registered.
        const current = this.source.get(id);
        if (current) this.insert(id);
        else this.remove(id);
        this.mark(id, current?.descriptor);
      }
      return;
    }
    // A fleet node's clients came or went together: one pass over the order, not a splice each.
    const gone = new Set<string>();
    const came: Array<[string, string]> = [];
    for (const id of ids) {
      const current = this.source.get(id);
      const key = positionKey(id);
      const at = this.lowerBound(key);
      const listed = this.keys[at] === key;
      if (current && !listed) came.push([key, id]);
      else if (!current && listed) gone.add(key);
      this.mark(id, current?.descriptor);
    }
    if (gone.size > 0) this.rebuild((key) => !gone.has(key), []);
    if (came.length > 0) {
      came.sort((a, b) => compareKeys(a[0], b[0]));
      // The same id twice in one batch: keep one.
      const unique = came.filter((entry, i) => i === 0 || entry[0] !== came[i - 1]?.[0]);
      this.rebuild(() => true, unique);
    }
  }

  /** Keep the entries `keep` accepts and merge in `added` (sorted by key, none already listed). */
  private rebuild(keep: (key: string) => boolean, added: ReadonlyArray<readonly [string, string]>): void {
    const keys = this.keys.splice(0);
    const ids = this.ids.splice(0);
    let next = 0;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      if (!keep(key)) continue;
      for (; next < added.length && compareKeys((added[next] as readonly [string, string])[0], key) < 0; next++) {
        const [k, id] = added[next] as readonly [string, string];
        this.keys.push(k);
        this.ids.push(id);
      }
      this.keys.push(key);
      this.ids.push(ids[i] as string);
    }
    for (; next < added.length; next++) {
      const [k, id] = added[next] as readonly [string, string];
      this.keys.push(k);
      this.ids.push(id);
    }
  }

  private insert(id: string): void {
    const key = positionKey(id);
    const at = this.lowerBound(key);
    if (this.keys[at] === key) return;
    this.keys.splice(at, 0, key);
    this.ids.splice(at, 0, id);
  }

  private remove(id: string): void {
    const key = positionKey(id);
    const at = this.lowerBound(key);
    if (this.keys[at] !== key) return;
    this.keys.splice(at, 1);
    this.ids.splice(at, 1);
  }

  private mark(id: string, descriptor: ClientDescriptor | undefined): void {
    const before = this.markers.get(id);
    const marker = descriptor && proxyMarker(descriptor);
    if (before?.clientId === marker?.clientId && before?.serverId === marker?.serverId) return;
    if (before) {
      const set = this.marked.get(before.clientId);
      set?.delete(id);
      if (set?.size === 0) this.marked.delete(before.clientId);
      this.markers.delete(id);
    }
    if (!marker) return;
    this.markers.set(id, { clientId: marker.clientId, serverId: marker.serverId });
    let set = this.marked.get(marker.clientId);
    if (!set) this.marked.set(marker.clientId, (set = new Set()));
    set.add(id);
  }
}
