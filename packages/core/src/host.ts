/**
 * The host contract (SPEC §12): what programs and agents need — list clients, list paths, call a
 * path, call a path on many clients — as one interface. `createLocalHost` answers it from this
 * process' router; a cluster follower answers it through its leader with the same interface, so
 * the host API, the MCP bridge and the inspector never know which one they hold.
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
import { NO_SERVER_IDS, aliasFinder, resolveClientId, type IsServerId } from './aliases.js';
import { MdpError } from './errors.js';
import type { AuthContext } from '@mdp/protocol';
import type { CallSignal, ClientInfo, InvokeOutcome, InvokeRoute, Router } from './router.js';

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
  /** Every client, or those matching `search`. */
  listClients(request?: ListClientsRequest): Promise<ListClientsResult>;
  /** Paths of one client or all; rejects with MdpError `not_found` for an unknown client. */
  listPaths(request?: ListPathsRequest): Promise<ListPathsResult>;
  /** Call one path; never rejects for the client's or the call's failure (`ok: false`). */
  callPath(request: CallPathRequest, options?: CallOptions): Promise<CallResult>;
  /** Call one path on many clients in parallel; rejects with MdpError `not_found` when no client has it. */
  callPaths(request: CallPathsRequest, options?: CallOptions): Promise<CallPathsResult>;
  /** Called after clients register, change their catalog or leave (possibly once for several). Returns the unsubscribe. */
  onChange(listener: () => void): () => void;
}

/** Case-insensitive substring search over what describes a client and its paths. */
function matcher(search: string | undefined): ((...texts: Array<string | undefined>) => boolean) | undefined {
  const needle = search?.trim().toLowerCase();
  if (!needle) return undefined;
  return (...texts) => texts.some((text) => text !== undefined && text.toLowerCase().includes(needle));
}

function pathTexts(path: PathDescriptor): Array<string | undefined> {
  const contentType = 'contentType' in path && typeof path.contentType === 'string' ? path.contentType : undefined;
  return [path.path, methodOf(path), path.type, path.description, contentType];
}

function listed(info: ClientInfo, aliases: (client: ClientInfo['descriptor']) => string[]): ListedClient {
  return {
    ...info.descriptor,
    status: 'online',
    connectedAt: new Date(info.registeredAt).toISOString(),
    lastSeenAt: new Date(info.lastSeen).toISOString(),
    connection: { mode: info.transportKind, secure: info.secure, authSource: info.authSource },
    aliases: aliases(info.descriptor),
  };
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
}

/** The host contract answered from `router`. */
export function createLocalHost(router: Router, options: LocalHostOptions = {}): HostApi {
  const isServerId = options.isServerId ?? NO_SERVER_IDS;
  const described = (): ClientDescriptor[] => router.listClients().map((c) => c.descriptor);
  /**
   * The registered id `requested` reaches, or the MdpError saying why none. `clients` lists the
   * candidates for an alias, only when `requested` is not registered as it is.
   */
  const resolve = (requested: string, clients: () => Iterable<ClientDescriptor> = described): string | MdpError => {
    const found = resolveClientId(requested, (id) => router.hasClient(id), clients, isServerId);
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
    clients?: () => Iterable<ClientDescriptor>,
  ): Promise<CallResult> => {
    const id = resolve(clientId, clients);
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

  return {
    async listClients(request = {}) {
      const all = router.listClients().filter((c) => isListable(c.descriptor));
      const match = matcher(request.search);
      const chosen = match
        ? all.filter((c) => match(c.id, c.descriptor.name, c.descriptor.description) || c.paths.some((p) => match(...pathTexts(p))))
        : all;
      const aliases = aliasFinder(all.map((c) => c.descriptor), isServerId);
      return { clients: chosen.map((c) => listed(c, aliases)) };
    },

    async listPaths(request = {}) {
      let clients = router.listClients().filter((c) => isListable(c.descriptor));
      if (request.clientId !== undefined) {
        const id = resolve(request.clientId);
        if (id instanceof MdpError) throw id;
        clients = clients.filter((c) => c.id === id);
      }
      const match = matcher(request.search);
      // Progressive disclosure: without a search or a depth, only the first level is listed.
      const depth = request.depth ?? (match ? Infinity : 1);
      const paths: ListedPath[] = [];
      for (const client of clients) {
        for (const path of client.paths) {
          if (pathDepth(path.path) > depth) continue;
          if (match && !match(client.id, client.descriptor.name, ...pathTexts(path))) continue;
          paths.push({ ...path, clientId: client.id, clientName: client.descriptor.name });
        }
      }
      return { paths };
    },

    callPath(request, options = {}) {
      return callOne(request.clientId, request, options);
    },

    async callPaths(request, options = {}) {
      const ids =
        request.clientIds ??
        router
          .listClients()
          .filter((c) => router.findTarget(c.id, request.method, request.path) !== undefined)
          .map((c) => c.id);
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
      const clients = (): ClientDescriptor[] => (listing ??= described());
      const results = await Promise.all(ids.map(async (clientId) => ({ clientId, ...(await callOne(clientId, request, options, clients)) })));
      return { results };
    },

    onChange(listener) {
      return router.onClientEvent(() => listener());
    },
  };
}
