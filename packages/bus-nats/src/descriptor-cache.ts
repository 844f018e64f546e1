/**
 * Descriptors (catalogs) of remote clients, fetched on demand from their nodes and kept by digest,
 * least recently used first out, bounded in bytes: the directory itself holds only the digest, so
 * its memory per remote client stays small however large the catalogs are. Concurrent reads of the
 * same digest share one fetch.
 */
import type { ClientDescriptor } from '@mdp/protocol';

/** Default bound of the cache, bytes of descriptor JSON. */
export const DESCRIPTOR_CACHE_BYTES = 16 * 1024 * 1024;

interface Cached {
  readonly clientId: string;
  readonly descriptor: ClientDescriptor;
  readonly bytes: number;
}

export class DescriptorCache {
  private readonly entries = new Map<string, Cached>();
  private readonly inFlight = new Map<string, Promise<ClientDescriptor | undefined>>();
  /** The cache key of each client cached (one digest per client at a time). */
  private readonly byClient = new Map<string, string>();
  private bytes = 0;

  constructor(private readonly maxBytes = DESCRIPTOR_CACHE_BYTES) {}

  /** The descriptor of `clientId` at `digest` when it is cached (now the most recently used), else undefined. */
  cached(clientId: string, digest: string): ClientDescriptor | undefined {
    const key = `${digest}:${clientId}`;
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit.descriptor;
  }

  /** The descriptor of `clientId` at `digest`, from the cache or from `fetch`. */
  get(clientId: string, digest: string, fetch: () => Promise<ClientDescriptor | undefined>): Promise<ClientDescriptor | undefined> {
    const hit = this.cached(clientId, digest);
    if (hit) return Promise.resolve(hit);
    const key = `${digest}:${clientId}`;
    const running = this.inFlight.get(key);
    if (running) return running;
    const fetching = fetch()
      .then((descriptor) => {
        if (descriptor) this.put(key, clientId, descriptor);
        return descriptor;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, fetching);
    return fetching;
  }

  /** Drop what is cached for `clientId` (it changed its catalog or left). */
  forgetClient(clientId: string): void {
    const key = this.byClient.get(clientId);
    if (key !== undefined) this.drop(key);
  }

  /** {@link forgetClient} for many at once (every client of a node that died or left). */
  forgetClients(clientIds: Iterable<string>): void {
    if (this.byClient.size === 0) return;
    for (const clientId of clientIds) this.forgetClient(clientId);
  }

  get size(): number {
    return this.entries.size;
  }

  private put(key: string, clientId: string, descriptor: ClientDescriptor): void {
    const bytes = JSON.stringify(descriptor).length;
    if (bytes > this.maxBytes) return;
    this.forgetClient(clientId);
    this.entries.set(key, { clientId, descriptor, bytes });
    this.byClient.set(clientId, key);
    this.bytes += bytes;
    for (const oldKey of this.entries.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldKey);
    }
  }

  private drop(key: string): void {
    const cached = this.entries.get(key);
    if (!cached) return;
    this.entries.delete(key);
    this.bytes -= cached.bytes;
    if (this.byClient.get(cached.clientId) === key) this.byClient.delete(cached.clientId);
  }
}
