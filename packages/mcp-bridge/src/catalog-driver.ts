/**
 * The catalog (catalog.ts) kept current from the host: one timer at the machine's `wakeAt`, a
 * refresh (list the clients, step the machine) after each host change, and the due notifications
 * handed to `notify`. It follows the host only while someone listens (`follow()` … `unfollow()`):
 * with no agent connected the bridge costs nothing per registration.
 *
 *   host.onChange ─▶ refresh (at most one at a time, REFRESH_MIN_INTERVAL_MS apart)
 *                      └─ host.listClients(), every page ─▶ step(catalog) ─▶ timer at wakeAt ─▶ step(tick)
 *                                                     └────────────────────────────────┴─▶ notify(kinds)
 *
 * A listing that fails (a follower between leaders) keeps the last catalog, and is retried after
 * RETRY_MS: agents keep the tools they had rather than see them vanish and come back.
 */
import { MAX_LIST_LIMIT, type ListedClient } from '@mdp/protocol';
import { MdpError, collectPages, type HostApi, type Logger } from '@mdp/core';
import { initialCatalog, step, type CatalogKind, type CatalogOptions, type CatalogState, type CatalogStep } from './catalog.js';
import { diffClients, emptyClientBook, hasChanges, type ClientBook, type ClientChanges } from './client-changes.js';
import { Timer, type Clock } from './clock.js';
import { catalogClient, type CatalogClient, type Surface } from './surface.js';

/** Shortest gap between two listings, ms: a burst of registrations costs a few rebuilds, not one each. */
export const REFRESH_MIN_INTERVAL_MS = 50;
/** Wait before listing again after the host failed to list, ms. */
export const RETRY_MS = 1000;

export interface CatalogDriver {
  /** The surface now; call after `ready()` for one that reflects the host. */
  surface(): Surface;
  /** The clients of the catalog now (those of the last listing, and those still held after they left). */
  clients(): CatalogClient[];
  /** Resolves once the catalog reflects the host since following began (or the first listing failed). */
  ready(): Promise<void>;
  /** Start following the host (idempotent). */
  follow(): void;
  /** Stop following: no subscription, no timer. The catalog and its names are kept. */
  unfollow(): void;
}

export function createCatalogDriver(options: {
  readonly host: HostApi;
  readonly catalog: Partial<CatalogOptions>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly notify: (kinds: CatalogKind[]) => void;
  /** Hears which clients came, left or changed, after each listing that found a difference (none for the first one after `follow()`). */
  readonly onClients?: (changes: ClientChanges) => void;
}): CatalogDriver {
  const { host, clock, logger } = options;
  const onError = (error: unknown): void => logger.error('mcp.catalog_failed', { error });
  let state: CatalogState = initialCatalog(options.catalog);
  const wake = new Timer(clock, onError);
  const refreshTimer = new Timer(clock, onError);
  let unsubscribe: (() => void) | undefined;
  let running: Promise<void> | undefined;
  let dirty = false;
  let lastRefreshAt = -Infinity;
  let initial: Promise<void> = Promise.resolve();
  /** The clients of the last listing, to tell what changed; reset when following stops (no event for who was there before). */
  let book: ClientBook = emptyClientBook;
  let baseline = true;

  const apply = (result: CatalogStep): void => {
    const overCap = state.surface.toolsOverCap;
    state = result.state;
    if (state.surface.toolsOverCap !== overCap && state.surface.toolsOverCap > 0) {
      logger.info('mcp.tools_over_cap', {
        listed: state.surface.tools.length,
        leftOut: state.surface.toolsOverCap,
        message: 'Catalog tools past --mcp-max-tools are not listed; the generic tools still reach them',
      });
    }
    if (result.wakeAt === Infinity) wake.clear();
    else wake.after(result.wakeAt - clock.now(), () => apply(step(state, { type: 'tick' }, clock.now())));
    if (result.notify.length > 0) {
      logger.debug('mcp.list_changed', { kinds: result.notify });
      options.notify(result.notify);
    }
  };

  const listOnce = async (): Promise<boolean> => {
    try {
      // Every page, a turn of the event loop apart: the catalog is the whole of it.
      const clients = await collectPages<ListedClient>(async (cursor) => {
        const page = await host.listClients({ limit: MAX_LIST_LIMIT, ...(cursor === undefined ? {} : { cursor }) });
        return { items: page.clients, nextCursor: page.nextCursor };
      });
      if (!unsubscribe) return true;
      apply(step(state, { type: 'catalog', clients: clients.map(catalogClient) }, clock.now()));
      const diff = diffClients(book, clients, baseline);
      book = diff.book;
      baseline = false;
      if (hasChanges(diff.changes)) options.onClients?.(diff.changes);
      return true;
    } catch (error) {
      logger.warn('mcp.catalog_list_failed', { error: error instanceof MdpError ? error.message : error });
      return false;
    }
  };

  const run = async (): Promise<void> => {
    let ok = true;
    while (dirty && unsubscribe && ok) {
      dirty = false;
      ok = await listOnce();
    }
    lastRefreshAt = clock.now();
    running = undefined;
    if (!unsubscribe) return;
    if (!ok) {
      dirty = true;
      refreshTimer.after(RETRY_MS, start);
    } else if (dirty) schedule();
  };
  const start = (): void => {
    running ??= run();
  };
  const schedule = (): void => {
    dirty = true;
    if (running || refreshTimer.pending || !unsubscribe) return;
    refreshTimer.after(lastRefreshAt + REFRESH_MIN_INTERVAL_MS - clock.now(), start);
  };

  return {
    surface: () => state.surface,
    clients: () => [...state.present.values(), ...[...state.held.values()].map((entry) => entry.client)],
    ready: () => initial,
    follow() {
      if (unsubscribe) return;
      unsubscribe = host.onChange(schedule);
      dirty = true;
      start();
      initial = running ?? Promise.resolve();
      // The machine's clock kept running while nobody listened: let it expire what is due.
      apply(step(state, { type: 'tick' }, clock.now()));
    },
    unfollow() {
      unsubscribe?.();
      unsubscribe = undefined;
      book = emptyClientBook;
      baseline = true;
      wake.clear();
      refreshTimer.clear();
    },
  };
}
