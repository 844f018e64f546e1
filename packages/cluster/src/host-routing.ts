/**
 * The host API of a cluster member (SPEC §10, §12): answered from the local router
 * (`createLocalHost`) while this node leads, by the leader over cluster RPC while another node does.
 * An agent on a follower must keep working across a leader change, so a request made while no
 * leader can be asked waits for one (at most `waitMs`) instead of failing:
 *
 *   request ──▶ route ─┬─ local ──────────▶ the local host ─────────────────────────────────▶ done
 *                      ├─ leader L ───────▶ RPC to L ─┬─ answer ─────────────────────────────▶ done
 *                      │                             ├─ time-out ──────────────────────────▶ timeout
 *                      │                             ├─ link lost, a call (it may have run) ─▶ transport_error
 *                      │                             └─ unsent, `not_ready` (L no longer leads),
 *                      │                                or link lost while listing ────────┐
 *                      └─ none (an election) ────────────────────────────────────────────┤
 *                                          wait for the route to change, then ask again ◀┘
 *
 * A wait for a leader that ends with none (the members left cannot elect: no quorum) answers from the
 * local router, which is then all this node can reach, and so does every request after it until a
 * leader is found again.
 *
 * Right after the route changes, the clients of other members are still being mirrored into the new
 * leader: for `settleMs` after a change, an answer that a client or path is not found is asked again
 * (it did not run) every `RETRY_MS`, so the ids an agent listed before keep working.
 *
 * Listings are asked of the leader one page at a time, always with a `limit` (the caller's, else the
 * default page size), so that the leader pages them (rpc.ts); its `nextCursor` is passed on as it
 * came, and works on whichever member leads when the caller asks for the next page.
 *
 * Every forwarded request carries who asked (`viewer` of the list and call options, our extension
 * of the params, rpc.ts): under tenancy by principal the leader answers with only the clients that
 * caller sees. Catalog changes (`onChange`) are `host-watch.ts`, which lives only while someone
 * listens; it hears every change (its viewer is not applied), so listeners list again and compare.
 */
import { LISTING_DEFAULTS, MdpError, retryHintMs, type CallOptions, type CallSignal, type HostApi, type Logger } from '@mdp/core';
import { ERROR_CODES, type CallResult, type ErrorCode, type SerializedError } from '@mdp/protocol';
import type { Clock, TimerSet } from './clock.js';
import type { LeaderView } from './election-driver.js';
import { CatalogWatch } from './host-watch.js';
import { Listeners } from './listeners.js';
import { callParams, decodeResult, listParams, type ClusterRpc, type RpcMethod, type RpcOutcome, type RpcResults } from './rpc.js';

/** Who answers host requests now. */
export type Route = { readonly kind: 'local' } | { readonly kind: 'leader'; readonly id: string } | { readonly kind: 'none' };

const LOCAL: Route = { kind: 'local' };
const NONE: Route = { kind: 'none' };

/**
 * The route of a member whose election shows `view` (undefined before it started). Another node's
 * leadership counts only while a link to it is up. With no leader to ask, a node that knows no other
 * member (`alone`: a lone server, or one whose peers are yet to be found) answers itself; one that
 * knows members waits for their election.
 */
export function routeOf(view: LeaderView | undefined, selfId: string, linked: (id: string) => boolean, alone: boolean): Route {
  if (!view || view.role === 'leader') return LOCAL;
  const id = view.leaderId;
  if (id !== undefined && id !== selfId && linked(id)) return { kind: 'leader', id };
  return alone ? LOCAL : NONE;
}

function keyOf(route: Route): string {
  return route.kind === 'leader' ? `leader:${route.id}` : route.kind;
}

export interface ClusterHostPorts {
  /** Answers while this node leads. */
  readonly local: HostApi;
  route(): Route;
  /** Called whenever `route()` may have changed (leader change, a link up or down). Returns the unsubscribe. */
  onRouteChange(listener: () => void): () => void;
  /** Requests to the leader. */
  readonly rpc: Pick<ClusterRpc, 'request'>;
  readonly clock: Clock;
  readonly timers: TimerSet;
  readonly logger: Logger;
}

export interface ClusterHostOptions {
  /** Longest wait for a leader, and for its answer to a listing, ms (the RPC time-out). */
  readonly waitMs: number;
  /** Period of the leader's `listClients` poll while someone listens for changes, ms. */
  readonly pollMs: number;
  /** After a change of route, `not_found` answers are asked again for this long, ms. */
  readonly settleMs: number;
}

export interface ClusterHost extends HostApi {
  /** End every wait (the requests fail with `not_ready`), stop polling, drop the listeners. Idempotent. */
  close(): void;
}

/** Time between two asks while mirrors settle after a change of route, ms: a mirror registers in tens of ms. */
export const RETRY_MS = 100;
/** Added to a call's own time-out for the leader's answer to travel back, ms. */
const ANSWER_SLACK_MS = 1000;

const CALLER_GONE: SerializedError = { code: 'transport_error', message: 'The caller went away before the client answered' };
const CLOSED: SerializedError = { code: 'not_ready', message: 'Cluster node closed' };

/** How one request ended: its value, or the error that ends it. */
type Settled<T> = { readonly value: T } | { readonly error: SerializedError };

/**
 * One attempt: settled; or to be made again once the route changes (`failure` ends the request if
 * that does not happen in time); or, while mirrors settle, soon.
 */
type Attempt<T> = Settled<T> | { readonly again: 'on-change'; readonly failure: SerializedError } | { readonly again: 'soon' };

/** What one request needs besides its method and params. */
interface Ask<T> {
  readonly local: () => Promise<Settled<T>>;
  /** Whether the value says a client or path was not found (worth asking again while mirrors settle). */
  readonly missing: (value: T) => boolean;
  /** A listing may be asked again after a lost link; a call may have run, so it is not. */
  readonly repeatable: boolean;
  /** Longest wait for the leader's answer, ms. */
  readonly timeoutMs: number;
  readonly signal: CallSignal | undefined;
}

export function createClusterHost(ports: ClusterHostPorts, options: ClusterHostOptions): ClusterHost {
  const { clock, timers, logger } = ports;
  const wakers = new Set<() => void>();
  const changes = new Listeners<void>((error) => logger.error('cluster.host_listener_failed', { error }));
  /** A wait for a leader ended with none: until one is found, this node answers itself. */
  let leaderless = false;
  /** Who answers now. */
  const route = (): Route => {
    const current = ports.route();
    return current.kind === 'none' && leaderless ? LOCAL : current;
  };
  let routeKey = keyOf(route());
  /** When another node (or this one) last started answering, monotonic ms. */
  let routeChangedAt = clock.now();
  let watch: CatalogWatch | undefined;
  let closed = false;

  /** Within `settleMs` of the last change of route: mirrors may still be registering. */
  const settling = (): boolean => clock.now() < routeChangedAt + options.settleMs;

  /** Wait `ms` or until the route changes; 'stopped' when aborted or closed first. */
  const wait = (ms: number, signal: CallSignal | undefined): Promise<'changed' | 'elapsed' | 'stopped'> =>
    new Promise((resolve) => {
      if (closed || signal?.aborted) return resolve('stopped');
      const finish = (how: 'changed' | 'elapsed' | 'stopped'): void => {
        wakers.delete(wake);
        cancel();
        signal?.removeEventListener('abort', stop);
        resolve(closed ? 'stopped' : how);
      };
      const wake = (): void => finish('changed');
      const stop = (): void => finish('stopped');
      const cancel = timers.after(Math.max(0, ms), () => finish('elapsed'));
      wakers.add(wake);
      signal?.addEventListener('abort', stop, { once: true });
    });

  /** The leader's outcome, or 'aborted' as soon as the caller goes away. */
  const request = (
    leaderId: string,
    method: RpcMethod,
    params: unknown,
    timeoutMs: number,
    signal: CallSignal | undefined,
  ): Promise<RpcOutcome | 'aborted'> => {
    // The rpc also tells the leader when the caller goes away, so that it ends the call there.
    const sent = ports.rpc.request(leaderId, method, params, timeoutMs, signal);
    if (!signal) return sent;
    return new Promise((resolve) => {
      const abort = (): void => resolve('aborted');
      if (signal.aborted) return abort();
      signal.addEventListener('abort', abort, { once: true });
      void sent.then((outcome) => {
        signal.removeEventListener('abort', abort);
        resolve(outcome);
      });
    });
  };

  async function attempt<M extends RpcMethod>(route: Route, method: M, params: unknown, a: Ask<RpcResults[M]>): Promise<Attempt<RpcResults[M]>> {
    if (route.kind === 'none')
      return { again: 'on-change', failure: { code: 'not_ready', message: `No cluster leader could be asked within ${options.waitMs} ms` } };
    let settled: Settled<RpcResults[M]>;
    if (route.kind === 'local') {
      settled = await a.local();
    } else {
      const outcome = await request(route.id, method, params, a.timeoutMs, a.signal);
      if (outcome === 'aborted') return { error: CALLER_GONE };
      switch (outcome.kind) {
        case 'answer': {
          const value = outcome.ok ? decodeResult(method, outcome.result) : undefined;
          if (outcome.ok)
            settled = value === undefined ? { error: { code: 'handler_error', message: `The leader answered ${method} with something else` } } : { value };
          // Not (or no longer) the leader: the request did not run there. (A refusal with a retry
          // hint is the leader's link to us being behind, backlog.ts: the caller tries again later.)
          else if (outcome.error.code === 'not_ready' && retryHintMs(outcome.error) === undefined) return { again: 'on-change', failure: outcome.error };
          else settled = { error: outcome.error };
          break;
        }
        case 'timeout':
          return { error: { code: 'timeout', message: `The leader did not answer ${method} within ${outcome.timeoutMs} ms` } };
        case 'lost': {
          const failure: SerializedError = { code: 'transport_error', message: 'The link to the leader closed before it answered' };
          return a.repeatable ? { again: 'on-change', failure } : { error: failure };
        }
        case 'unsent':
          return { again: 'on-change', failure: { code: 'not_ready', message: 'No link to the leader' } };
        case 'aborted':
          return { error: CALLER_GONE };
        case 'closed':
          return { error: CLOSED };
      }
    }
    const missing = 'error' in settled ? settled.error.code === 'not_found' : a.missing(settled.value);
    return missing && settling() ? { again: 'soon' } : settled;
  }

  /** Ask whoever answers now, waiting out elections and mirrors that are still settling. */
  async function ask<M extends RpcMethod>(method: M, params: unknown, a: Ask<RpcResults[M]>): Promise<Settled<RpcResults[M]>> {
    const deadline = clock.now() + options.waitMs;
    for (;;) {
      if (closed) return { error: CLOSED };
      if (a.signal?.aborted) return { error: CALLER_GONE };
      const asked = route();
      const result = await attempt(asked, method, params, a);
      if (!('again' in result)) return result;
      if (keyOf(route()) !== keyOf(asked)) continue; // it changed while we asked
      const waited = await wait(result.again === 'soon' ? RETRY_MS : deadline - clock.now(), a.signal);
      if (waited === 'stopped') return { error: closed ? CLOSED : CALLER_GONE };
      if (waited !== 'elapsed' || result.again === 'soon' || keyOf(route()) !== keyOf(asked)) continue;
      if (asked.kind !== 'none') return { error: result.failure };
      logger.warn('cluster.host_leaderless', {
        waitedMs: options.waitMs,
        message: 'no leader was elected in time; answering from this server alone until one is',
      });
      leaderless = true;
      routeChanged();
    }
  }

  const list = async <M extends 'listClients' | 'listPaths'>(method: M, params: unknown, local: () => Promise<RpcResults[M]>): Promise<RpcResults[M]> => {
    const settled = await ask(method, params, {
      local: () => settle(local),
      missing: () => false,
      repeatable: true,
      timeoutMs: options.waitMs,
      signal: undefined,
    });
    if ('error' in settled) throw toMdpError(settled.error);
    return settled.value;
  };

  /** The leader's answer to a call waits for the client's own time-out, and then some. */
  const callWait = (o: CallOptions | undefined): number => Math.max(options.waitMs, (o?.timeoutMs ?? 0) + ANSWER_SLACK_MS);

  const routeChanged = (): void => {
    if (ports.route().kind !== 'none') leaderless = false;
    const key = keyOf(route());
    if (key === routeKey) return;
    routeKey = key;
    for (const wake of [...wakers]) wake();
    if (key === 'none') return;
    routeChangedAt = clock.now();
    watch?.leaderChanged();
  };
  const unsubscribeRoute = ports.onRouteChange(routeChanged);

  return {
    listClients: (request = {}, listOptions) =>
      list('listClients', listParams({ ...request, limit: request.limit ?? LISTING_DEFAULTS.defaultLimit }, listOptions), () =>
        ports.local.listClients(request, listOptions),
      ),
    listPaths: (request = {}, listOptions) =>
      list('listPaths', listParams({ ...request, limit: request.limit ?? LISTING_DEFAULTS.defaultLimit }, listOptions), () =>
        ports.local.listPaths(request, listOptions),
      ),
    async callPath(request, callOptions) {
      const settled = await ask('callPath', callParams(request, callOptions), {
        local: () => settle(() => ports.local.callPath(request, callOptions)),
        missing: (r) => !r.ok && r.error.code === 'not_found' && r.source !== 'client',
        repeatable: false,
        timeoutMs: callWait(callOptions),
        signal: callOptions?.signal,
      });
      return 'error' in settled ? ({ ok: false, error: settled.error, source: 'server' } satisfies CallResult) : settled.value;
    },
    async callPaths(request, callOptions) {
      const settled = await ask('callPaths', callParams(request, callOptions), {
        local: () => settle(() => ports.local.callPaths(request, callOptions)),
        missing: () => false,
        repeatable: false,
        timeoutMs: callWait(callOptions),
        signal: callOptions?.signal,
      });
      if ('error' in settled) throw toMdpError(settled.error);
      return settled.value;
    },
    onChange(listener) {
      const off = changes.add(() => listener());
      watch ??= new CatalogWatch(ports, route, options, () => changes.emit());
      return () => {
        off();
        if (changes.size > 0) return;
        watch?.stop();
        watch = undefined;
      };
    },
    close() {
      if (closed) return;
      closed = true;
      unsubscribeRoute();
      for (const wake of [...wakers]) wake();
      watch?.stop();
      watch = undefined;
      changes.clear();
    },
  };
}

/** The local host's answer; an MdpError it rejects with (an unknown client) as a value, so it can be asked again. */
async function settle<T>(answer: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { value: await answer() };
  } catch (error) {
    if (error instanceof MdpError) return { error: error.toJSON() };
    throw error;
  }
}

function toMdpError(error: SerializedError): MdpError {
  const code: ErrorCode = (ERROR_CODES as readonly string[]).includes(error.code) ? (error.code as ErrorCode) : 'handler_error';
  const details =
    typeof error.details === 'object' && error.details !== null && !Array.isArray(error.details) ? (error.details as Record<string, unknown>) : undefined;
  return new MdpError(code, error.message, details ? { details } : undefined);
}
