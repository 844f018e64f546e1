/**
 * The host contract (SPEC §12): what programs and agents need — list clients, list paths, call a
 * path, call a path on many clients — as one interface. `createLocalHost` answers it from this
 * process' router, which in a fleet (SPEC §16) reaches the clients of the other nodes as well (their
 * catalogs fetched for the page that lists them); a cluster follower answers it through its leader
 * with the same interface, so the host API, the MCP bridge and the inspector never know which one
 * they hold.
 */
import {
  MAX_JSON_DEPTH,
  jsonDepthWithin,
  methodOf,
  pathDepth,
  type CallPathRequest,
  type CallPathsRequest,
  type CallPathsResult,
  type CallResult,
  type ListClientsRequest,
  type ListClientsResult,
  type ListPathsRequest,
  type ListPathsResult,
  type ListedClient,
  type ListedPath,
  type ClientDescriptor,
  type PathDescriptor,
} from '@mdp/protocol';
import { NO_SERVER_IDS, baseId, resolveClientId, type IsServerId } from './aliases.js';
import { ClientOrder } from './client-order.js';
import { MdpError } from './errors.js';
import {
  LISTING_DEFAULTS,
  PageBuilder,
  ScanBudget,
  clientsCursor,
  comparePathPlace,
  compareKeys,
  listingLimits,
  mergedJsonSize,
  pageTurn,
  parseClientsCursor,
  parsePathsCursor,
  pathsCursor,
  positionKey,
  searchFor,
  type ListOptions,
  type ListingLimits,
  type PathPlace,
  type PathsPosition,
} from './listing.js';
import type { AuthContext } from '@mdp/protocol';
import type { CallSignal, ClientInfo, InvokeOutcome, InvokeRoute, LocatedClient, Router } from './router.js';
import { SHARED_TENANCY, type Tenancy, type Viewer } from './tenancy.js';

/** In-process extras of a call; they never travel over the wire. */
export interface CallOptions {
  /** The caller went away: the call ends at once and is never delivered later. */
  readonly signal?: CallSignal;
  /** Time the client has to answer, ms; default the router's invocation time-out. */
  readonly timeoutMs?: number;
  /** The surface the call came through (metrics, access and audit logs). Default `host`. */
  readonly route?: InvokeRoute;
  /** Who asked, when it is not the `auth` forwarded to the client (for the audit log). */
  readonly caller?: AuthContext;
  /**
   * Most clients one `callPaths` may call (named, or those that have the path); more is refused
   * with `bad_request` before any is called. Default: no limit. See {@link fanoutTargets}.
   */
  readonly maxTargets?: number;
  /**
   * Who asks (tenancy.ts): under `principal` tenancy a caller reaches only the clients it sees, and
   * any other is `not_found` as an unknown id. Default: none, the server itself (every client).
   */
  readonly viewer?: Viewer;
  /**
   * Hears each client's outcome of a `callPaths` as it comes, with how many clients it calls in all
   * (progress for the caller). A host that gets the results in one piece (a follower) may call it
   * for each only at the end, or not at all. What it throws is ignored.
   */
  readonly onResult?: (result: CallPathsResult['results'][number], total: number) => void;
}

/**
 * Bytes of call payload one `callPaths` may send in all (its payload times the clients it calls),
 * as a multiple of the largest request body: each client is sent its own copy of the payload, so
 * one request of `maxBodyBytes` must not become thousands of copies in memory.
 */
export const FANOUT_BODY_FACTOR = 4;

/**
 * How many clients a `callPaths` with this payload (query, body, headers, auth) may call within
 * `budgetBytes` (at least 1): the `maxTargets` to give it.
 */
export function fanoutTargets(request: Pick<CallPathsRequest, 'query' | 'body' | 'headers' | 'auth'>, budgetBytes: number): number {
  const payload = Buffer.byteLength(JSON.stringify([request.query, request.body, request.headers, request.auth]) ?? '');
  return Math.max(1, Math.floor(budgetBytes / Math.max(1, payload)));
}

export interface HostApi {
  /**
   * One page of the clients (all, or those matching `search`), by id: from `cursor` on, at most
   * `limit`; `nextCursor` when there is more (listing.ts). Rejects with MdpError `bad_request` for a
   * cursor it did not make.
   */
  listClients(request?: ListClientsRequest, options?: ListOptions): Promise<ListClientsResult>;
  /**
   * One page of the paths of one client or all, by client id, then path and method; rejects with
   * MdpError `not_found` for an unknown client and `bad_request` for a cursor it did not make.
   */
  listPaths(request?: ListPathsRequest, options?: ListOptions): Promise<ListPathsResult>;
  /** Call one path; never rejects for the client's or the call's failure (`ok: false`). */
  callPath(request: CallPathRequest, options?: CallOptions): Promise<CallResult>;
  /** Call one path on many clients in parallel; rejects with MdpError `not_found` when no client has it. */
  callPaths(request: CallPathsRequest, options?: CallOptions): Promise<CallPathsResult>;
  /**
   * Called after clients register, change their catalog or leave (possibly once for several).
   * With a `viewer`, a host may leave out changes of clients it does not see (the local host does).
   * Returns the unsubscribe.
   */
  onChange(listener: () => void, viewer?: Viewer): () => void;
}

/**
 * `host` as `viewer` uses it: every listing, call and change subscription made through it names
 * `viewer` (unless it names one of its own), so that a caller's whole session (an MCP session, an
 * inspector stream) sees what that caller sees. `host` itself when `viewer` is undefined.
 */
export function viewedBy(host: HostApi, viewer: Viewer | undefined): HostApi {
  if (viewer === undefined) return host;
  return {
    listClients: (request, options) => host.listClients(request, { ...options, viewer: options?.viewer ?? viewer }),
    listPaths: (request, options) => host.listPaths(request, { ...options, viewer: options?.viewer ?? viewer }),
    callPath: (request, options) => host.callPath(request, { ...options, viewer: options?.viewer ?? viewer }),
    callPaths: (request, options) => host.callPaths(request, { ...options, viewer: options?.viewer ?? viewer }),
    onChange: (listener, own) => host.onChange(listener, own ?? viewer),
  };
}

/** What a listing adds to a client's descriptor. */
function listingFields(info: ClientInfo, aliases: string[]) {
  return {
    status: 'online' as const,
    connectedAt: new Date(info.registeredAt).toISOString(),
    lastSeenAt: new Date(info.lastSeen).toISOString(),
    connection: { mode: info.transportKind, secure: info.secure, authSource: info.authSource },
    aliases,
  };
}

/** A client as listed, and its JSON size (made without writing the descriptor out each time). */
function listed(info: ClientInfo, aliases: string[]): { client: ListedClient; bytes: number | undefined } {
  const fields = listingFields(info, aliases);
  const bytes = mergedJsonSize(info.descriptor, fields, Buffer.byteLength(JSON.stringify(fields)));
  return { client: { ...info.descriptor, ...fields }, bytes };
}

/** Longest client name a shortened item keeps, characters. */
const SHORT_NAME_CHARS = 256;

/** A listed client too large for where it goes (a cluster frame): who it is, without its catalog. */
function shortClient(client: ListedClient): ListedClient {
  const { id, name, status, connectedAt, lastSeenAt, connection, aliases } = client;
  return { id, name: name.slice(0, SHORT_NAME_CHARS), status, connectedAt, lastSeenAt, connection, aliases, paths: [], truncated: true } as ListedClient;
}

/** A listed path too large for where it goes: where it is, without its description and schemas. */
function shortPath(path: ListedPath): ListedPath {
  const { type, clientId, clientName } = path;
  const method = path.type === 'endpoint' ? { method: path.method } : {};
  return { type, path: path.path, ...method, clientId, clientName: clientName.slice(0, SHORT_NAME_CHARS), truncated: true } as ListedPath;
}

/** A catalog's path in listing order. */
interface SortedPath extends PathPlace {
  readonly descriptor: PathDescriptor;
}

/** Each catalog in listing order, made on its first listing (a catalog update makes a new array). */
const sortedCatalogs = new WeakMap<readonly PathDescriptor[], readonly SortedPath[]>();

function sortedPaths(paths: readonly PathDescriptor[]): readonly SortedPath[] {
  let sorted = sortedCatalogs.get(paths);
  if (sorted) return sorted;
  const entries = paths.map((descriptor, index) => ({ descriptor, key: positionKey(descriptor.path), method: methodOf(descriptor), index }));
  // Ties (the same method and path declared twice) keep declaration order.
  entries.sort((a, b) => compareKeys(a.key, b.key) || compareKeys(a.method, b.method) || a.index - b.index);
  const result: SortedPath[] = [];
  for (let i = 0; i < entries.length; i++) {
    const { descriptor, key, method } = entries[i] as (typeof entries)[number];
    const before = result[i - 1];
    const dup = before && before.key === key && before.method === method ? before.dup + 1 : 0;
    result.push({ descriptor, key, method, dup });
  }
  sortedCatalogs.set(paths, (sorted = result));
  return sorted;
}

/** Index of the first path of `sorted` after `place`. */
function pathAfter(sorted: readonly SortedPath[], place: PathPlace): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (comparePathPlace(sorted[mid] as SortedPath, place) <= 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Results of `isListable`, per descriptor object (a catalog update makes a new one). */
const listable = new WeakMap<ClientDescriptor, boolean>();

/**
 * Whether a client can be listed: JSON.stringify can write its descriptor. Messages are validated
 * where they arrive (at most MAX_JSON_DEPTH levels in any field, three more around the fields of a
 * path); this keeps one client that was not (an embedder's own session) from making every listing
 * fail for everyone. Such a client is left out of listings; calls still reach it.
 */
function isListable(descriptor: ClientDescriptor): boolean {
  let ok = listable.get(descriptor);
  if (ok === undefined) {
    ok = jsonDepthWithin(descriptor, MAX_JSON_DEPTH + 3);
    listable.set(descriptor, ok);
  }
  return ok;
}

/** Whether a path matches a search: its path, method, kind, description or content type. */
function matchesPath(match: (...texts: Array<string | undefined>) => boolean, path: PathDescriptor): boolean {
  const contentType = 'contentType' in path && typeof path.contentType === 'string' ? path.contentType : undefined;
  return match(path.path, methodOf(path), path.type, path.description, contentType);
}

/** Whether a client matches a search: its id, name or description, or one of its paths (each counted by `budget`). */
function clientMatches(info: ClientInfo, match: (...texts: Array<string | undefined>) => boolean, budget: ScanBudget): boolean {
  if (match(info.id, info.descriptor.name, info.descriptor.description)) return true;
  for (const path of info.paths) {
    budget.entry();
    if (matchesPath(match, path)) return true;
  }
  return false;
}

function outcome(result: InvokeOutcome): CallResult {
  return result.ok ? { ok: true, data: result.data } : { ok: false, error: result.error, source: result.source };
}

export interface LocalHostOptions {
  /**
   * Whether an id is a server id of this server's cluster (its own, a member's): the only prefixes
   * under which a client id reaches a mirrored client and back (aliases.ts). Default: none, so no
   * aliases (a server outside any cluster).
   */
  readonly isServerId?: IsServerId;
  /** Page size and bounds of `listClients` and `listPaths` (listing.ts); default `LISTING_DEFAULTS`. */
  readonly listing?: Partial<ListingLimits>;
  /** Which clients a caller sees (tenancy.ts); default {@link SHARED_TENANCY}, every client. */
  readonly tenancy?: Tenancy;
}

/**
 * What tenancy reads of a client: its id, its principal, and (for this node's clients) its
 * descriptor, whose proxy marker names a mirror's bare id. A `ClientInfo` is one, and so is what
 * `Router.locate` says of a client of another node.
 */
export type SeenClient = Pick<LocatedClient, 'id' | 'principal' | 'descriptor'>;

/** What `viewer` sees of the router's clients, or `undefined` for everything. */
type Seen = ((client: SeenClient) => boolean) | undefined;

/**
 * Which of the router's clients `viewer` sees under `tenancy` (tenancy.ts), or `undefined` when it
 * sees them all. `isServerId`: the cluster's server ids, under which a mirror's bare id may be a
 * shared one. For edges that read the router themselves (skill routes).
 */
export function clientsSeenBy(tenancy: Tenancy, viewer: Viewer | undefined, isServerId: IsServerId = NO_SERVER_IDS): Seen {
  const test = tenancy.seenBy(viewer);
  return (
    test && ((client) => test({ id: client.id, principal: client.principal, bareId: client.descriptor ? baseId(client.descriptor, isServerId) : client.id }))
  );
}

/**
 * Most catalogs of other nodes' clients one page fetches ahead of building itself (SPEC §16): a
 * page that would need more ends early, with a cursor.
 */
export const REMOTE_PAGE_FETCHES = 256;
/** Catalogs of other nodes' clients a `callPaths` without `clientIds` fetches at once. */
const REMOTE_FETCHES_AT_ONCE = 32;

/** The host contract answered from `router`. */
export function createLocalHost(router: Router, options: LocalHostOptions = {}): HostApi {
  const isServerId = options.isServerId ?? NO_SERVER_IDS;
  const tenancy = options.tenancy ?? SHARED_TENANCY;
  /** The clients `viewer` sees: an unseen client is, for that caller, one that is not there. */
  const seenBy = (viewer: Viewer | undefined): Seen => clientsSeenBy(tenancy, viewer, isServerId);
  const described = (seen: Seen): ClientDescriptor[] => {
    const all = router.listClients();
    return (seen ? all.filter(seen) : all).map((c) => c.descriptor);
  };
  /** Whether `id` is registered (here or on another node of the fleet) and seen. */
  const hasFor =
    (seen: Seen) =>
    (id: string): boolean => {
      if (!seen && router.hasClient(id)) return true;
      const found = router.fleet.locate(id);
      return found !== undefined && (!seen || seen(found));
    };
  /**
   * The registered id `requested` reaches, or the MdpError saying why none. `clients` lists the
   * candidates for an alias, only when `requested` is not registered as it is: this node's clients
   * (a fleet has no cluster, hence no aliases, and listing another node's would fetch its catalogs).
   */
  const resolve = (requested: string, seen: Seen, clients: () => Iterable<ClientDescriptor> = () => described(seen)): string | MdpError => {
    const found = resolveClientId(requested, hasFor(seen), clients, isServerId);
    switch (found.kind) {
      case 'exact':
      case 'alias':
        return found.id;
      case 'missing':
        return new MdpError('not_found', `No client ${JSON.stringify(requested)} is connected`);
      case 'ambiguous':
        return new MdpError('not_found', `Client id ${JSON.stringify(requested)} could mean several clients; use one of their ids`, {
          details: { candidates: found.candidates },
        });
    }
  };

  const callOne = async (
    clientId: string,
    request: Omit<CallPathRequest, 'clientId'>,
    options: CallOptions,
    seen: Seen,
    clients?: () => Iterable<ClientDescriptor>,
  ): Promise<CallResult> => {
    const id = resolve(clientId, seen, clients);
    if (id instanceof MdpError) return { ok: false, error: id.toJSON(), source: 'server' };
    const result = await router.invoke(id, request.method, request.path, {
      query: request.query,
      body: request.body,
      headers: request.headers,
      auth: request.auth,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      route: options.route,
      caller: options.caller,
    });
    return outcome(result);
  };

  const limits = listingLimits(options.listing);
  let order: ClientOrder | undefined;
  /** The clients in listing order, made on the first listing and kept up to date from then on. */
  const ordered = (): ClientOrder => {
    if (!order) {
      order = new ClientOrder({
        clients: function* () {
          yield* router.listClients();
          for (const id of router.fleet.remoteClientIds()) yield { id };
        },
        get: (id) => router.getClient(id) ?? (router.fleet.locate(id) ? {} : undefined),
        onChange: (listener) => router.onClientChanges(listener),
      });
      order.follow();
    }
    return order;
  };
  const pageBounds = (request: { limit?: number }, options: ListOptions): { limit: number; maxBytes: number; maxItemBytes: number } => ({
    limit: request.limit ?? limits.defaultLimit,
    maxBytes: Math.min(options.maxBytes ?? limits.maxPageBytes, limits.maxPageBytes),
    maxItemBytes: options.maxItemBytes ?? Infinity,
  });

  return {
    async listClients(request = {}, listOptions = {}) {
      const after = request.cursor === undefined ? undefined : parseClientsCursor(request.cursor).client;
      await pageTurn();
      const bounds = pageBounds(request, listOptions);
      const seen = seenBy(listOptions.viewer);
      const start = (clients: ClientOrder): number => {
        const at = after === undefined ? 0 : clients.lowerBound(after);
        return at < clients.size && clients.keyAt(at) === after ? at + 1 : at;
      };
      // The catalogs of other nodes' clients this page may list, fetched first (the walk below is
      // synchronous: the order cannot change under it).
      const ahead = ordered();
      const fetched = await fetchAhead(router, ahead, seen, start(ahead), ahead.size, request.search === undefined ? bounds.limit : REMOTE_PAGE_FETCHES);
      const clients = ordered();
      const page = new PageBuilder<ListedClient>(bounds.limit, bounds.maxBytes, bounds.maxItemBytes, shortClient);
      const budget = new ScanBudget(limits);
      const match = searchFor(request.search, budget);
      const has = hasFor(seen);
      const seek = seeker(router, clients, seen, clients.size);
      let last = after;
      let moved = false; // something was looked at: the page may end (every page makes progress)
      let at = start(clients);
      // Unseen clients are stepped over: they cost no budget, and no cursor names one.
      for (at = seek(at); at < clients.size && !page.full; at = seek(at + 1)) {
        if (moved && budget.spent()) break;
        const id = clients.idAt(at);
        const info = router.getClient(id) ?? fetched.get(id) ?? undefined;
        // Another node's client whose catalog was not fetched ahead: the next page has it.
        if (info === undefined && moved && !fetched.has(id) && router.fleet.locate(id) !== undefined) break;
        moved = true;
        budget.entry();
        if (info && isListable(info.descriptor) && (!match || clientMatches(info, match, budget))) {
          const { client, bytes } = listed(info, clients.aliasesOf(info, isServerId, has, seen && ((id) => has(id))));
          if (!page.add(client, bytes)) break;
        }
        last = clients.keyAt(at);
      }
      return at < clients.size && last !== undefined ? { clients: page.items, nextCursor: clientsCursor({ client: last }) } : { clients: page.items };
    },

    async listPaths(request = {}, listOptions = {}) {
      const after = request.cursor === undefined ? undefined : parsePathsCursor(request.cursor);
      await pageTurn();
      const seen = seenBy(listOptions.viewer);
      let only: string | undefined;
      if (request.clientId !== undefined) {
        const id = resolve(request.clientId, seen);
        if (id instanceof MdpError) throw id;
        only = id;
      }
      const bounds = pageBounds(request, listOptions);
      /** The clients to walk, [from, to): one (clientId) or all, from the cursor's client on. */
      const range = (clients: ClientOrder): { from: number; to: number } => {
        let from = 0;
        let to = clients.size;
        if (only !== undefined) {
          const key = positionKey(only);
          from = clients.lowerBound(key);
          to = from < clients.size && clients.keyAt(from) === key ? from + 1 : from;
        }
        if (after) from = Math.max(from, clients.lowerBound(after.client));
        return { from, to };
      };
      // The catalogs of other nodes' clients this page may walk, fetched first (the walk below is
      // synchronous: the order cannot change under it).
      const ahead = ordered();
      const aheadRange = range(ahead);
      const fetched = await fetchAhead(router, ahead, seen, aheadRange.from, aheadRange.to, request.search === undefined ? bounds.limit : REMOTE_PAGE_FETCHES);
      const clients = ordered();
      const { from, to } = range(clients);
      const page = new PageBuilder<ListedPath>(bounds.limit, bounds.maxBytes, bounds.maxItemBytes, shortPath);
      const budget = new ScanBudget(limits);
      const match = searchFor(request.search, budget);
      // Progressive disclosure: without a search or a depth, only the first level is listed.
      const depth = request.depth ?? (match ? Infinity : 1);
      // Unseen clients are stepped over: they cost no budget, and no cursor names one.
      const seek = seeker(router, clients, seen, to);
      // Where the page ends: after path `lastPath` of the client at `lastClient` (-1: all of its
      // paths), as the position to make a cursor of once the page is done.
      let lastClient = -1;
      let lastPath = -1;
      let lastSorted: readonly SortedPath[] = [];
      let moved = false; // something was looked at: the page may end (every page makes progress)
      let more = false;
      walk: for (let c = seek(from); c < to; c = seek(c + 1)) {
        const key = clients.keyAt(c);
        const id = clients.idAt(c);
        const info = router.getClient(id) ?? fetched.get(id) ?? undefined;
        // Another node's client whose catalog was not fetched ahead: the next page has it.
        if (info === undefined && moved && !fetched.has(id) && router.fleet.locate(id) !== undefined) {
          more = true;
          break;
        }
        const sorted = info && isListable(info.descriptor) ? sortedPaths(info.paths) : [];
        let p = 0;
        if (after && key === after.client)
          p = after.path === null ? sorted.length : pathAfter(sorted, { key: after.path, method: after.method, dup: after.dup });
        budget.entry();
        // A client whose id or name matches lists all of its paths (of the depth asked for).
        const clientHit = !match || p >= sorted.length || match(info?.id, info?.descriptor.name);
        // What each listed path adds, and its size: once per client.
        const owner = info ? { clientId: info.id, clientName: info.descriptor.name } : undefined;
        const ownerBytes = owner ? Buffer.byteLength(JSON.stringify(owner)) : 0;
        for (; p < sorted.length; p++) {
          if (page.full || (moved && budget.spent())) {
            more = true;
            break walk;
          }
          budget.entry();
          const path = (sorted[p] as SortedPath).descriptor;
          if ((depth === Infinity || pathDepth(path.path) <= depth) && (clientHit || matchesPath(match as NonNullable<typeof match>, path))) {
            const fields = owner as NonNullable<typeof owner>;
            if (!page.add({ ...path, ...fields }, mergedJsonSize(path, fields, ownerBytes))) {
              more = true;
              break walk;
            }
          }
          lastClient = c;
          lastPath = p;
          lastSorted = sorted;
          moved = true;
        }
        lastClient = c;
        lastPath = -1; // past every path of this client
        moved = true;
        if (seek(c + 1) < to && (page.full || budget.spent())) {
          more = true;
          break;
        }
      }
      let last: PathsPosition | undefined = after;
      if (lastClient >= 0) {
        const entry = lastPath >= 0 ? (lastSorted[lastPath] as SortedPath) : undefined;
        last = entry
          ? { client: clients.keyAt(lastClient), path: entry.key, method: entry.method, dup: entry.dup }
          : { client: clients.keyAt(lastClient), path: null, method: 'GET', dup: 0 };
      }
      return more && last !== undefined ? { paths: page.items, nextCursor: pathsCursor(last) } : { paths: page.items };
    },

    callPath(request, options = {}) {
      return callOne(request.clientId, request, options, seenBy(options.viewer));
    },

    async callPaths(request, options = {}) {
      const seen = seenBy(options.viewer);
      const ids = request.clientIds ?? [
        ...router
          .listClients()
          .filter((c) => (!seen || seen(c)) && router.findTarget(c.id, request.method, request.path) !== undefined)
          .map((c) => c.id),
        // No wait outside a fleet: the calls go out in the same turn as the request.
        ...(router.fleet.attached ? await remoteHolders(router, seen, request.method, request.path) : []),
      ];
      if (ids.length === 0) throw new MdpError('not_found', `No connected client has ${request.method} ${request.path}`);
      if (options.maxTargets !== undefined && ids.length > options.maxTargets) {
        throw new MdpError(
          'bad_request',
          `This call would reach ${ids.length} clients, but a call of this size may reach at most ${options.maxTargets}: name fewer clients (clientIds) or send a smaller body`,
          { details: { clients: ids.length, maxTargets: options.maxTargets } },
        );
      }
      // One listing for the whole batch, taken only if some id is not registered as it is: a
      // call-many naming many absent ids must not list every client once per id.
      let listing: ClientDescriptor[] | undefined;
      const clients = (): ClientDescriptor[] => (listing ??= described(seen));
      const results = await Promise.all(
        ids.map(async (clientId) => {
          const result = { clientId, ...(await callOne(clientId, request, options, seen, clients)) };
          try {
            options.onResult?.(result, ids.length);
          } catch {
            // A listener's failure is not the call's.
          }
          return result;
        }),
      );
      return { results };
    },

    onChange(listener, viewer) {
      const seen = seenBy(viewer);
      // One notice per batch: a fleet node's death is one change for every caller, not one per client.
      return router.onClientChanges(seen ? changesSeen(router, seen, listener) : () => listener());
    },
  };
}

/**
 * The index of the first client at or after `from` (before `to`) that `seen` lets through, or `to`;
 * `from` itself when every client is seen.
 */
function seeker(router: Router, clients: ClientOrder, seen: Seen, to: number): (from: number) => number {
  if (!seen) return (from) => from;
  return (from) => {
    let at = from;
    for (; at < to; at++) {
      const found = router.fleet.locate(clients.idAt(at));
      if (found && seen(found)) break;
    }
    return at;
  };
}

/**
 * The catalogs of the fleet's other nodes' clients that a page walking `clients` from `from` (to
 * `to`) may list: those of the first `count` such clients `seen` lets through (at most
 * {@link REMOTE_PAGE_FETCHES}), fetched at once. `null` for one whose catalog cannot be had now
 * (its node does not answer): the page leaves it out. Empty outside a fleet.
 */
async function fetchAhead(router: Router, clients: ClientOrder, seen: Seen, from: number, to: number, count: number): Promise<Map<string, ClientInfo | null>> {
  const fetched = new Map<string, ClientInfo | null>();
  if (!router.fleet.attached) return fetched;
  const wanted: string[] = [];
  const most = Math.min(count, REMOTE_PAGE_FETCHES);
  // Bounded like a page's scan: the walk below steps over this node's clients and unseen ones.
  for (let at = from, looked = 0; at < to && wanted.length < most && looked < LISTING_DEFAULTS.scanEntries; at++, looked++) {
    const id = clients.idAt(at);
    if (router.hasClient(id)) continue;
    const found = router.fleet.locate(id);
    if (found && (!seen || seen(found))) wanted.push(id);
  }
  const infos = await Promise.all(wanted.map((id) => Promise.resolve(router.fleet.describe(id)).catch(() => undefined)));
  for (let i = 0; i < wanted.length; i++) fetched.set(wanted[i] as string, infos[i] ?? null);
  return fetched;
}

/**
 * A client change listener that calls `listener` only for clients `seen` lets through: one that
 * comes, changes or leaves while seen, or stops being seen (its id now held by another principal),
 * on this node or another of the fleet.
 */
function changesSeen(router: Router, seen: (client: SeenClient) => boolean, listener: () => void): (clientIds: readonly string[]) => void {
  // The ids seen now, so that their leaving is heard (a removal names only the id).
  const ids = new Set<string>();
  for (const info of router.listClients()) if (seen(info)) ids.add(info.id);
  for (const id of router.fleet.remoteClientIds()) {
    const found = router.fleet.locate(id);
    if (found && seen(found)) ids.add(id);
  }
  return (clientIds) => {
    let heard = false;
    for (const clientId of clientIds) {
      const found = router.fleet.locate(clientId);
      if (found && seen(found)) {
        ids.add(clientId);
        heard = true;
      } else if (ids.delete(clientId)) heard = true;
    }
    if (heard) listener();
  };
}

/**
 * The clients of the fleet's other nodes that `seen` lets through and whose catalog has
 * `method path`: their catalogs fetched (cached by digest), {@link REMOTE_FETCHES_AT_ONCE} at a
 * time. One whose node does not answer is left out, as it could not be called either.
 */
async function remoteHolders(router: Router, seen: Seen, method: CallPathsRequest['method'], path: string): Promise<string[]> {
  const candidates: string[] = [];
  for (const id of router.fleet.remoteClientIds()) {
    const found = router.fleet.locate(id);
    if (found && (!seen || seen(found))) candidates.push(id);
  }
  const has = new Array<boolean>(candidates.length).fill(false);
  let next = 0;
  const work = async (): Promise<void> => {
    while (next < candidates.length) {
      const at = next++;
      try {
        has[at] = (await router.fleet.locateTarget(candidates[at] as string, method, path)) !== undefined;
      } catch {
        has[at] = false;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(REMOTE_FETCHES_AT_ONCE, candidates.length) }, work));
  return candidates.filter((_, at) => has[at]);
}
