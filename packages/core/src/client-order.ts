/**
 * The registered clients in listing order (listing.ts), this node's and those of the fleet's other
 * nodes (remote.ts): their ids sorted by position key, kept up to date from the router's client
 * changes, so that a page finds where its cursor left off with a
 * binary search instead of sorting every client each time. Also which clients mirror which bare id
 * (the `aliases` of a listed client, SPEC §12), so that a page works them out for its own clients
 * without looking at all the others.
 *
 * Built on the first listing (listings are rare; registrations are not), then updated on each
 * event: an insertion or removal is one binary search and one splice.
 */
import { proxyMarker, type ClientDescriptor } from '@mdp/protocol';
import type { IsServerId } from './aliases.js';
import { compareKeys, positionKey } from './listing.js';

/** What the index needs of the router. */
export interface ClientSource {
  /** Every registered client's id and descriptor (none for a remote client: it has no mirrors). */
  clients(): Iterable<{ readonly id: string; readonly descriptor?: ClientDescriptor | undefined }>;
  get(id: string): { readonly descriptor?: ClientDescriptor | undefined } | undefined;
  /** Tells of each id whose holder or catalog changed. */
  onChange(listener: (id: string) => void): () => void;
}

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
    return this.source.onChange((id) => this.apply(id));
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

  private apply(id: string): void {
    // The router is the truth: an id replaced by a newer session is still registered.
    const current = this.source.get(id);
    if (current) {
      this.insert(id);
      this.mark(id, current.descriptor);
    } else {
      this.remove(id);
      this.mark(id, undefined);
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
