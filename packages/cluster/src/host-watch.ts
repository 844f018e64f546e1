/**
 * Catalog changes anywhere in the cluster, for `onChange` of a member's host (host-routing.ts). While this
 * node answers, the router's events; while another node leads, its `listClients` polled every
 * `pollMs` (every page, one request at a time), firing when a digest of what a catalog shows changes. The first listing after a
 * subscription and the first after a change of leader fire too: a change made in between would
 * otherwise go unheard. Lives only while someone listens, so no timer runs otherwise.
 */
import { createHash, type Hash } from 'node:crypto';
import { MAX_LIST_LIMIT, type ListedClient } from '@mdp/protocol';
import type { ClusterHostOptions, ClusterHostPorts, Route } from './host-routing.js';
import { decodeResult } from './rpc.js';

/** Hears about catalog changes anywhere in the cluster while at least one listener is subscribed. */
export class CatalogWatch {
  private readonly unsubscribeLocal: () => void;
  private cancelPoll: (() => void) | undefined;
  private polling = false;
  private stopped = false;
  /** Digest of the leader's last listing; undefined before the first. */
  private digest: string | undefined;
  /**
   * The next listing fires even if it matches the one before: the first after a subscription (a
   * change between subscribing and that listing would go unheard) and the first after a change of leader.
   */
  private forced = true;
  /** Bumped on each change of leader: a listing asked of the one before is dropped. */
  private generation = 0;

  constructor(
    private readonly ports: ClusterHostPorts,
    private readonly route: () => Route,
    private readonly options: ClusterHostOptions,
    private readonly fire: () => void,
  ) {
    this.unsubscribeLocal = ports.local.onChange(() => {
      if (route().kind === 'local') fire();
    });
    this.schedule();
  }

  /** Another node (or this one) answers now: the catalog may be another one. */
  leaderChanged(): void {
    this.generation += 1;
    this.digest = undefined;
    this.forced = true;
    this.fire();
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribeLocal();
    this.cancelPoll?.();
    this.cancelPoll = undefined;
  }

  /** Poll after `pollMs` while another node leads (and no poll is pending or in flight). */
  private schedule(): void {
    if (this.stopped || this.polling || this.cancelPoll || this.route().kind !== 'leader') return;
    this.cancelPoll = this.ports.timers.after(this.options.pollMs, () => {
      this.cancelPoll = undefined;
      this.poll().catch((error: unknown) => this.ports.logger.error('cluster.host_poll_failed', { error }));
    });
  }

  private async poll(): Promise<void> {
    const route = this.route();
    if (this.stopped || route.kind !== 'leader') return;
    this.polling = true;
    const generation = this.generation;
    const hash = createHash('sha256');
    let cursor: string | undefined;
    let complete = false;
    for (;;) {
      const params = cursor === undefined ? { limit: MAX_LIST_LIMIT } : { limit: MAX_LIST_LIMIT, cursor };
      const outcome = await this.ports.rpc.request(route.id, 'listClients', params, this.options.waitMs);
      if (this.stopped || generation !== this.generation) break;
      const listed = outcome.kind === 'answer' && outcome.ok ? decodeResult('listClients', outcome.result) : undefined;
      if (!listed) break;
      digestClients(hash, listed.clients);
      // A cursor that does not move on (a broken leader) ends the walk as a failed poll.
      if (listed.nextCursor === undefined) complete = true;
      if (listed.nextCursor === undefined || listed.nextCursor === cursor) break;
      cursor = listed.nextCursor;
    }
    this.polling = false;
    if (this.stopped) return;
    if (complete) {
      const digest = hash.digest('base64url');
      if (digest !== this.digest) {
        const first = this.digest === undefined;
        this.digest = digest;
        if (!first || this.forced) this.fire();
      }
      this.forced = false;
    }
    this.schedule();
  }
}

/** Add to `hash` what a catalog shows of `clients`: ids, names, descriptions and paths (not times or connections). */
function digestClients(hash: Hash, clients: readonly ListedClient[]): void {
  for (const c of clients) hash.update(JSON.stringify([c.id, c.name, c.description, c.paths])).update('\n');
}

/** The digest of what a catalog shows of the clients, as a poll of one page of them computes it. */
export function catalogDigest(clients: readonly ListedClient[]): string {
  const hash = createHash('sha256');
  digestClients(hash, clients);
  return hash.digest('base64url');
}
