/**
 * Cluster RPC (SPEC §10, §12): host requests between members. The leader answers them from its own
 * router, which holds every mirrored client; a follower sends them as `clusterRpcRequest` and waits
 * for the `clusterRpcResponse`.
 *
 * Methods, params and results are the host contract's (`@mdp/protocol` host.ts), which are the
 * reference server's bridge requests, so that a mixed cluster answers an agent the same way:
 *
 *   listClients {search?, limit?, cursor?}                       → {clients, nextCursor?}
 *   listPaths   {clientId?, search?, depth?, limit?, cursor?}    → {paths, nextCursor?}
 *   callPath    {clientId, method, path, query?, body?, headers?, auth?} → {ok: true, data?} | {ok: false, error}
 *   callPaths   {clientIds?, method, path, query?, body?, headers?, auth?} → {results: [{clientId, ok, data? | error?}]}
 *
 * A request that fails as a whole is `ok: false` with `error` (e.g. `not_found` for an unknown
 * client in listPaths, or no client with the path in callPaths). A member that does not lead answers
 * `not_ready`, as the reference does: it holds only its own clients. Our extensions (extra fields are
 * allowed on the wire): `timeoutMs` in the params of a call, the time the client gets; `maxTargets`
 * in the params of a callPaths, the most clients it may call (its payload is copied to each); `source` in a
 * failed call's result, whether the client or the server gave up; `limit` and `cursor` in a
 * listing's params, and `nextCursor` in its result; `viewer` `{principal?}` in the params of any
 * request, who asked on the member that forwarded it (tenancy by principal, `@mdp/core` tenancy.ts:
 * the leader answers with what that caller sees; a leader of an earlier version ignores it);
 * `cancelCall {requestId}`, sent by a follower whose caller went away (an aborted HTTP request, a
 * cancelled MCP request or task): the leader ends that call of that follower at once, freeing its
 * client's pending slot, and answers nothing (an earlier leader answers it as an unknown method,
 * which the follower ignores: it waits for no answer).
 *
 * Listings are paged (SPEC §12.6, `@mdp/core` listing.ts): a request that names a `limit` or a
 * `cursor` gets one page, at most what one cluster frame carries (`maxPageBytes`; an item larger
 * than that alone comes in its short form, `truncated: true`). Our followers always name a limit
 * and walk the pages one request at a time. A request that names neither (a follower of an earlier
 * version, the reference server) gets the whole listing as before, gathered here page by page with
 * a turn of the event loop between two, and refused as too large for the link once it passes one
 * frame. An earlier leader ignores `limit` and `cursor` and answers the whole listing without a
 * `nextCursor`: our follower takes that as the last page, so mixed clusters keep listing.
 *
 * The reference's stored version
 * answers callPath with its whole `callClientResult` message; we answer SPEC §12's `{ok, data?}` /
 * `{ok, error}`, which it also reads.
 */
import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  IdTable,
  MAX_TIMER_MS,
  nextTurn,
  serializeError,
  type CallOptions,
  type CallSignal,
  type HostApi,
  type ListOptions,
  type Logger,
  type Viewer,
} from '@mdp/core';
import {
  MAX_LIST_LIMIT,
  SerializedErrorSchema,
  UNSENDABLE_DATA_ERROR,
  parseCallPathRequest,
  parseCallPathsRequest,
  parseListClientsRequest,
  parseListPathsRequest,
  parserFor,
  type CallPathsResult,
  type CallResult,
  type ClusterMessage,
  type ClusterRpcRequest,
  type ClusterRpcResponse,
  type ListClientsRequest,
  type ListClientsResult,
  type ListPathsRequest,
  type ListPathsResult,
  type SerializedError,
} from '@mdp/protocol';
import type { TimerSet } from './clock.js';

export const RPC_METHODS = ['listClients', 'listPaths', 'callPath', 'callPaths'] as const;
export type RpcMethod = (typeof RPC_METHODS)[number];

/** The request that ends a call the asker sent before (its caller went away); it has no answer. */
export const RPC_CANCEL = 'cancelCall';

/** How one request ended, as the asking side sees it. */
export type RpcOutcome =
  | { readonly kind: 'answer'; readonly ok: true; readonly result: unknown }
  | { readonly kind: 'answer'; readonly ok: false; readonly error: SerializedError }
  /** Never left this node (no open link): it certainly did not run. */
  | { readonly kind: 'unsent' }
  /** The link closed before the answer: it may or may not have run. */
  | { readonly kind: 'lost' }
  | { readonly kind: 'timeout'; readonly timeoutMs: number }
  /** Its caller went away (`signal`): the peer was told to end it, and its answer is not awaited. */
  | { readonly kind: 'aborted' }
  | { readonly kind: 'closed' };

type Answer = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: SerializedError };

/** Longest principal a forwarded request may name, characters (ours are a few dozen). */
const MAX_PRINCIPAL_CHARS = 1024;

/**
 * Who asked, in a forwarded request's params (our extension, `viewer`): `{principal?}`, the
 * principal of the caller on the member it asked (tenancy.ts of `@mdp/core`), which the leader's
 * tenancy applies. No `viewer`: the member itself (every client). Members prove the cluster secret;
 * whoever may join the cluster is trusted to say who asked.
 */
const ViewerSchema = v.optional(v.object({ principal: v.optional(v.pipe(v.string(), v.maxLength(MAX_PRINCIPAL_CHARS, 'is too long'))) }));

const parseViewer = parserFor(v.object({ viewer: ViewerSchema }));

const parseCallExtras = parserFor(
  v.object({
    timeoutMs: v.optional(
      v.pipe(v.number(), v.integer('must be a whole number of ms'), v.minValue(1, 'must be at least 1'), v.maxValue(MAX_TIMER_MS, 'is too large')),
    ),
    maxTargets: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'))),
    viewer: ViewerSchema,
  }),
);

/** The viewer a forwarded request's params name, or the reason they are malformed. */
function viewerOf(params: unknown): { viewer?: Viewer } | string {
  const parsed = parseViewer(params ?? {});
  if (!parsed.ok) return parsed.error;
  return parsed.value.viewer === undefined ? {} : { viewer: { principal: parsed.value.viewer.principal } };
}

/** The in-process options of a call a peer forwarded: labelled `cluster`, with its `timeoutMs`, `maxTargets` and `viewer` extensions. */
function callOptionsOf(params: unknown): CallOptions | string {
  const extras = parseCallExtras(params);
  if (!extras.ok) return extras.error;
  const { timeoutMs, maxTargets, viewer } = extras.value;
  return {
    route: 'cluster',
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(maxTargets === undefined ? {} : { maxTargets }),
    ...(viewer === undefined ? {} : { viewer: { principal: viewer.principal } }),
  };
}

/** `viewer` as a forwarded request's params carry it. */
function viewerParam(viewer: Viewer | undefined): { viewer?: { principal?: string } } {
  if (viewer === undefined) return {};
  return { viewer: viewer.principal === undefined ? {} : { principal: viewer.principal } };
}

/** The params of a forwarded listing: the request, and who asked. */
export function listParams<T extends object>(request: T, options: ListOptions | undefined): T & { viewer?: { principal?: string } } {
  return options?.viewer === undefined ? request : { ...request, ...viewerParam(options.viewer) };
}

/** The params of a forwarded call: the request, and the caller's time-out, fan-out bound and identity when it gave them. */
export function callParams<T extends object>(
  request: T,
  options: CallOptions | undefined,
): T & { timeoutMs?: number; maxTargets?: number; viewer?: { principal?: string } } {
  if (options?.timeoutMs === undefined && options?.maxTargets === undefined && options?.viewer === undefined) return request;
  return {
    ...request,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.maxTargets === undefined ? {} : { maxTargets: options.maxTargets }),
    ...viewerParam(options.viewer),
  };
}

/**
 * Bytes of an RPC answer kept for what wraps a listing page in its frame (`clusterRpcResponse`, its
 * ids, term and time): a page gets the rest of the frame.
 */
export const RPC_ENVELOPE_BYTES = 16 * 1024;

/** The largest listing page a link whose frames carry `maxFrameBytes` takes (at least 1 KiB). */
export function rpcPageBytes(maxFrameBytes: number): number {
  return Math.max(1024, maxFrameBytes - RPC_ENVELOPE_BYTES);
}

/** The error that ends a whole (unpaged) listing once it passes what one frame carries. */
function wholeListingTooLarge(maxBytes: number): SerializedError {
  return {
    code: 'transport_error',
    message: `The listing is larger than a cluster link carries (${maxBytes} bytes); ask for it in pages (limit, cursor)`,
  };
}

/**
 * A listing asked for without `limit` or `cursor` (an earlier follower, the reference server): every
 * page, one turn of the event loop apart, until there is none (the whole listing) or they pass
 * `maxBytes` (an error, as the link could not carry them).
 */
async function wholeListing<K extends 'clients' | 'paths', R extends { readonly nextCursor?: string } & Record<K, unknown[]>>(
  key: K,
  page: (cursor: string | undefined, options: ListOptions) => Promise<R>,
  maxBytes: number,
): Promise<Answer> {
  const items: unknown[] = [];
  let bytes = 0;
  let cursor: string | undefined;
  for (;;) {
    const result = await page(cursor, { maxBytes, maxItemBytes: maxBytes });
    for (const item of result[key]) {
      bytes += Buffer.byteLength(JSON.stringify(item)) + 1;
      if (bytes > maxBytes) return { ok: false, error: wholeListingTooLarge(maxBytes) };
      items.push(item);
    }
    if (result.nextCursor === undefined || result.nextCursor === cursor) return { ok: true, result: { [key]: items } };
    cursor = result.nextCursor;
    await nextTurn();
  }
}

const paged = (request: { limit?: number; cursor?: string }): boolean => request.limit !== undefined || request.cursor !== undefined;

/**
 * Serve one request from `host`; never rejects. `leads`: this node leads (only a leader answers).
 * `maxPageBytes`: the largest listing page the asking link carries (`rpcPageBytes`).
 */
/** `options` ended by `signal` too, when there is one. */
function withSignal(options: CallOptions, signal: AbortSignal | undefined): CallOptions {
  return signal === undefined ? options : { ...options, signal };
}

export async function serveRpc(
  host: HostApi,
  request: Pick<ClusterRpcRequest, 'method' | 'params'>,
  leads: boolean,
  maxPageBytes = rpcPageBytes(DEFAULT_MAX_MESSAGE_BYTES),
  signal?: AbortSignal,
): Promise<Answer> {
  if (!leads) return { ok: false, error: { code: 'not_ready', message: 'This server does not lead the cluster; ask the leader' } };
  const bad = (message: string): Answer => ({ ok: false, error: { code: 'bad_request', message } });
  try {
    const listing = request.method === 'listClients' || request.method === 'listPaths' ? viewerOf(request.params) : {};
    if (typeof listing === 'string') return bad(listing);
    const pageOptions: ListOptions = { maxBytes: maxPageBytes, maxItemBytes: maxPageBytes, ...listing };
    switch (request.method) {
      case 'listClients': {
        const parsed = parseListClientsRequest(request.params ?? {});
        if (!parsed.ok) return bad(parsed.error);
        const asked: ListClientsRequest = parsed.value;
        if (paged(asked)) return { ok: true, result: await host.listClients(asked, pageOptions) };
        return await wholeListing(
          'clients',
          (cursor, options) => host.listClients({ ...asked, limit: MAX_LIST_LIMIT, cursor }, { ...options, ...listing }),
          maxPageBytes,
        );
      }
      case 'listPaths': {
        const parsed = parseListPathsRequest(request.params ?? {});
        if (!parsed.ok) return bad(parsed.error);
        const asked: ListPathsRequest = parsed.value;
        if (paged(asked)) return { ok: true, result: await host.listPaths(asked, pageOptions) };
        return await wholeListing(
          'paths',
          (cursor, options) => host.listPaths({ ...asked, limit: MAX_LIST_LIMIT, cursor }, { ...options, ...listing }),
          maxPageBytes,
        );
      }
      case 'callPath': {
        const parsed = parseCallPathRequest(request.params);
        const options = callOptionsOf(request.params);
        if (!parsed.ok) return bad(parsed.error);
        return typeof options === 'string' ? bad(options) : { ok: true, result: await host.callPath(parsed.value, withSignal(options, signal)) };
      }
      case 'callPaths': {
        const parsed = parseCallPathsRequest(request.params);
        const options = callOptionsOf(request.params);
        if (!parsed.ok) return bad(parsed.error);
        return typeof options === 'string' ? bad(options) : { ok: true, result: await host.callPaths(parsed.value, withSignal(options, signal)) };
      }
      default:
        return bad(`Unknown cluster RPC method ${JSON.stringify(request.method)}`);
    }
  } catch (error) {
    return { ok: false, error: serializeError(error) };
  }
}

// ---------------------------------------------------------------------------------------------
// Results from the leader: a member that passed the hello checks, but its answers are still JSON
// off a socket. Their envelopes are checked here; the items inside are passed on as they came.

const CallResultSchema = v.variant('ok', [
  v.looseObject({ ok: v.literal(true), data: v.optional(v.unknown()) }),
  v.looseObject({ ok: v.literal(false), error: SerializedErrorSchema, source: v.optional(v.picklist(['client', 'server'])) }),
]);

const NextCursorSchema = v.optional(v.string());

const resultParsers = {
  listClients: parserFor(v.looseObject({ clients: v.array(v.looseObject({ id: v.string() })), nextCursor: NextCursorSchema })),
  listPaths: parserFor(v.looseObject({ paths: v.array(v.looseObject({ clientId: v.string(), path: v.string() })), nextCursor: NextCursorSchema })),
  callPath: parserFor(CallResultSchema),
  callPaths: parserFor(v.looseObject({ results: v.array(v.intersect([v.looseObject({ clientId: v.string() }), CallResultSchema])) })),
};

export interface RpcResults {
  listClients: ListClientsResult;
  listPaths: ListPathsResult;
  callPath: CallResult;
  callPaths: CallPathsResult;
}

/** The leader's result of `method`, or undefined when it does not have that method's shape. */
export function decodeResult<M extends RpcMethod>(method: M, result: unknown): RpcResults[M] | undefined {
  const parsed = resultParsers[method](result);
  // The checked envelope; listed clients and paths are the leader's descriptors, passed on as sent.
  return parsed.ok ? (parsed.value as unknown as RpcResults[M]) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Both ends on one node

/** The RPC frames this module sends; the node adds clusterId, serverId, term and timestamp. */
export type RpcBody =
  | { readonly type: 'clusterRpcRequest'; readonly requestId: string; readonly method: RpcMethod | typeof RPC_CANCEL; readonly params?: unknown }
  | { readonly type: 'clusterRpcResponse'; readonly requestId: string; readonly ok: boolean; readonly result?: unknown; readonly error?: SerializedError };

export interface ClusterRpcOptions {
  /** Answers the requests peers send (while `leads()`). */
  readonly host: HostApi;
  leads(): boolean;
  readonly timers: TimerSet;
  readonly logger: Logger;
  /** Send one frame to `peerId`; false when it could not be sent (no link, or not serialisable). */
  send(peerId: string, body: RpcBody): boolean;
  /**
   * Why an answer to `peerId` would be refused now (its link is behind: it asks faster than it
   * reads), or undefined. Its requests are then answered with that error before any work is done.
   */
  refusal?(peerId: string): SerializedError | undefined;
  /** Largest listing page an answer carries, bytes (`rpcPageBytes` of the links' frame size). Default: that of a 1 MiB frame. */
  readonly maxPageBytes?: number;
}

interface Pending {
  readonly resolve: (outcome: RpcOutcome) => void;
  readonly cancel: () => void;
  readonly peerId: string;
}

/** Both ends of cluster RPC on one node: requests it serves, and requests it sent, waiting for answers. */
export class ClusterRpc {
  /** Not a `Map`: entries come and go with every request (core's `IdTable` says why). */
  private readonly pending = new IdTable<Pending>();
  /**
   * Per peer, the end of its listings being served. A peer's listings are answered one after the
   * other, each once the one before it was sent: a burst of them read at once is not all made
   * before the first answer goes, so the link's refusal (`refusal`) stops them once the peer is
   * behind, rather than after each was made (half a megabyte or more for a large catalog).
   */
  private readonly listings = new Map<string, Promise<void>>();
  /** Calls being served, by peer and request id (`servedKey`): a `cancelCall` of that peer ends one. */
  private readonly serving = new Map<string, AbortController>();

  constructor(private readonly options: ClusterRpcOptions) {}

  /** Take `message` from `peerId` if it is an RPC frame; false otherwise. */
  receive(peerId: string, message: ClusterMessage): boolean {
    if (message.type === 'clusterRpcResponse') {
      this.settle(peerId, message);
      return true;
    }
    if (message.type !== 'clusterRpcRequest') return false;
    if (message.method === RPC_CANCEL) {
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      // Only the peer that sent a call can end it; an unknown or finished one is nothing to end.
      if (typeof requestId === 'string') this.serving.get(servedKey(peerId, requestId))?.abort();
      return true;
    }
    const failed = (error: unknown): void => this.options.logger.error('cluster.rpc_failed', { error });
    // Calls wait for clients, for as long as they take: they run side by side.
    if (message.method !== 'listClients' && message.method !== 'listPaths') {
      this.serve(peerId, message).catch(failed);
      return true;
    }
    const served = (this.listings.get(peerId) ?? Promise.resolve()).then(() => this.serve(peerId, message)).catch(failed);
    this.listings.set(peerId, served);
    void served.then(() => {
      if (this.listings.get(peerId) === served) this.listings.delete(peerId);
    });
    return true;
  }

  /**
   * Send one request to `peerId` and resolve with how it ended; waits at most `timeoutMs`. When
   * `signal` aborts first (the caller went away), it ends at once as `aborted` and the peer is told
   * to end it (`cancelCall`): a call's client then gives up its pending slot there too.
   */
  request(peerId: string, method: RpcMethod, params: unknown, timeoutMs: number, signal?: CallSignal): Promise<RpcOutcome> {
    const requestId = randomUUID();
    const { timers, logger } = this.options;
    if (signal?.aborted) return Promise.resolve({ kind: 'aborted' });
    return new Promise((resolve) => {
      const onAbort = (): void => {
        if (!this.pending.has(requestId)) return;
        this.finish(requestId, { kind: 'aborted' });
        this.options.send(peerId, { type: 'clusterRpcRequest', requestId: randomUUID(), method: RPC_CANCEL, params: { requestId } });
        logger.debug('cluster.rpc_cancelled', { requestId, method, peerId });
      };
      const timer = timers.after(timeoutMs, () => this.finish(requestId, { kind: 'timeout', timeoutMs }));
      const cancel = (): void => {
        timer();
        signal?.removeEventListener('abort', onAbort);
      };
      this.pending.set(requestId, { resolve, cancel, peerId });
      signal?.addEventListener('abort', onAbort, { once: true });
      const body: RpcBody = { type: 'clusterRpcRequest', requestId, method, ...(params === undefined ? {} : { params }) };
      if (!this.options.send(peerId, body)) this.finish(requestId, { kind: 'unsent' });
      else logger.debug('cluster.rpc_sent', { requestId, method, peerId });
    });
  }

  /** The link to `peerId` is gone: its requests end now rather than at their time-out. */
  failPeer(peerId: string): void {
    for (const [requestId, pending] of this.pending) if (pending.peerId === peerId) this.finish(requestId, { kind: 'lost' });
  }

  close(): void {
    for (const requestId of this.pending.keys()) this.finish(requestId, { kind: 'closed' });
  }

  /** Calls being served for peers now. */
  get served(): number {
    return this.serving.size;
  }

  private async serve(peerId: string, request: ClusterRpcRequest): Promise<void> {
    const refused = this.options.refusal?.(peerId);
    // A call can be ended by its asker (cancelCall); a listing runs to its end.
    const call = request.method === 'callPath' || request.method === 'callPaths';
    const key = servedKey(peerId, request.requestId);
    const abort = call && !refused && !this.serving.has(key) ? new AbortController() : undefined;
    if (abort) this.serving.set(key, abort);
    let answer: Answer;
    try {
      answer = refused
        ? { ok: false, error: refused }
        : await serveRpc(this.options.host, request, this.options.leads(), this.options.maxPageBytes, abort?.signal);
    } finally {
      if (abort && this.serving.get(key) === abort) this.serving.delete(key);
    }
    // Its asker ended it and waits for no answer.
    if (abort?.signal.aborted) return;
    const respond = (body: Answer): boolean => this.options.send(peerId, { type: 'clusterRpcResponse', requestId: request.requestId, ...body });
    // A result that cannot be sent (a client's data nested too deeply to serialise) is answered
    // with an error, so the caller does not wait for its time-out.
    if (!respond(answer)) respond({ ok: false, error: UNSENDABLE_DATA_ERROR });
  }

  /** Responses to unknown ids, or from another peer than the one asked, are ignored. */
  private settle(peerId: string, response: ClusterRpcResponse): void {
    const pending = this.pending.get(response.requestId);
    if (!pending || pending.peerId !== peerId) return;
    const outcome: RpcOutcome = response.ok
      ? { kind: 'answer', ok: true, result: response.result }
      : { kind: 'answer', ok: false, error: response.error ?? { code: 'handler_error', message: 'The leader reported a failure without details' } };
    this.finish(response.requestId, outcome);
  }

  private finish(requestId: string, outcome: RpcOutcome): void {
    const pending = this.pending.get(requestId);
    if (!pending) return;
    this.pending.delete(requestId);
    pending.cancel();
    pending.resolve(outcome);
  }
}

/** The key of a call served for `peerId` (a peer's request ids are its own). */
function servedKey(peerId: string, requestId: string): string {
  return `${peerId}\n${requestId}`;
}
