/**
 * Clients that live on another node of a fleet (SPEC §16): the one seam through which the router
 * reaches them. Core defines what it needs of a fleet directory ({@link RemoteDirectory}); a server
 * in bus mode adapts its bus to it and hands it to `router.fleet.attach` (whereabouts.ts). Core never imports a bus.
 *
 *   way in (skill route, host API, MCP, inspector, callPaths)
 *      │
 *      ▼
 *   Router ── client of this node? ── yes ─▶ registry, call table (as ever)
 *      │                                no
 *      ▼
 *   RemoteClients ── directory.resolve(id) ─▶ node, principal, digest (no catalog)
 *      │── catalog(id) ── directory.descriptor(id) (fetched from its node, cached by digest there)
 *      │                  └─ path index built once per descriptor object (WeakMap: it lives as long
 *      │                     as the directory keeps that descriptor)
 *      └── dispatch ── directory.call(id, …) ─▶ one request to its node ─▶ InvokeOutcome
 *
 * A client of this node wins over a remote one with the same id: the replacement rule (SPEC §4.3)
 * then closes one of the two within a round trip of the bus, and the other is the only one left.
 * Nothing per remote client is kept here: the directory holds the view, and catalogs are fetched
 * when a call or a page needs them.
 */
import type { AuthContext, ClientDescriptor, EndpointMethod } from '@mdp/protocol';
import { CallCancel } from './call-cancel.js';
import type { CallHandle, CallRecord, CallSignal, InvokeOptions, InvokeOutcome } from './call-table.js';
import type { ClientInfo } from './client-registry.js';
import type { Clock } from './clock.js';
import { serializeError } from './errors.js';
import type { Logger } from './logger.js';
import { PathIndex, type ResolvedTarget } from './path-index.js';
import type { AuthSource } from './session.js';
import { randomUuid } from './uuid.js';

/** A client of another node, as the fleet directory knows it: who it is, never its catalog. */
export interface RemoteClient {
  readonly id: string;
  /** The node that holds its session. */
  readonly node: string;
  /** The principal its id belongs to on its node (ownership.ts): what tenancy and ownership read. */
  readonly principal: string | undefined;
  /** When it registered, ms since the epoch (its node's clock). */
  readonly registeredAt: number;
  /** Digest of its descriptor: a new one means a new catalog. */
  readonly digest: string;
  /** `ws`, `http-loop`, … */
  readonly transport: string;
  readonly secure: boolean;
  readonly authSource: string;
  /**
   * The `Origin` of the web page that registered it, as its node announced it (under an auth policy
   * too); when absent, the one its principal names without a policy ({@link originOfPrincipal}).
   */
  readonly origin?: string | undefined;
}

/** A change of the fleet's other nodes: one client, or every client of one node at once. */
export type RemoteChange = RemoteClientChange | RemoteNodeChange;

/** One client of another node came, changed its catalog or left. */
export interface RemoteClientChange {
  readonly kind: 'added' | 'updated' | 'removed';
  readonly clientId: string;
}

/**
 * Every client of one node came or went together (the node came up, died or restarted): one change
 * for all of them, which the router passes on as one batch (one notice to each listener), so that a
 * node's death costs the survivors one pass, not one event per client.
 */
export interface RemoteNodeChange {
  readonly kind: 'added' | 'removed';
  readonly node: string;
  readonly clientIds: readonly string[];
}

/** A call for a remote client: what its node needs to make the call there. */
export interface RemoteInvocation {
  readonly method: EndpointMethod;
  /** The concrete path; its node resolves it in the client's catalog again. */
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly auth?: AuthContext;
  /** The surface the call came through here, for the other node's logs. */
  readonly route?: string;
}

/** What core needs of a fleet directory. A server in bus mode adapts its bus to this. */
export interface RemoteDirectory {
  /** The client `clientId` when another live node holds it. */
  resolve(clientId: string): RemoteClient | undefined;
  /** Every client of the other live nodes. */
  list(): Iterable<RemoteClient>;
  /**
   * Its descriptor, fetched from its node (and cached by digest); undefined when no live node has
   * it. Rejects with an MdpError (`not_ready`, `transport_error`, `timeout`) when its node cannot
   * be asked.
   */
  descriptor(clientId: string): Promise<ClientDescriptor | undefined>;
  /** The descriptor when it is at hand without asking its node (cached at its current digest); undefined: ask `descriptor`. */
  cachedDescriptor?(clientId: string): ClientDescriptor | undefined;
  /** Call it on its node. Never rejects: failures are `ok: false` with the codes of a local call. */
  call(clientId: string, call: RemoteInvocation, options: { readonly timeoutMs: number; readonly signal?: CallSignal }): Promise<InvokeOutcome>;
  /** Clients of other nodes came, changed their catalog or left. Returns the unsubscribe. */
  onChange(listener: (changes: readonly RemoteChange[]) => void): () => void;
  /** Why a client with this id and principal cannot be announced to the fleet, or undefined (a registration is then refused). */
  registrationProblem?(clientId: string, principal: string | undefined): string | undefined;
}

/**
 * A call (or a catalog fetch ahead of one) to a remote client in flight: what `Router.dispatch`
 * returns for one, to hand to `Router.cancel`. Its `signal` aborts when the caller goes away (a
 * {@link CallCancel}, not an AbortController: a remote read makes two handles). Its request id is
 * drawn when first read (nothing on the hot path reads it).
 */
export class RemoteCallHandle implements CallHandle {
  private id: string | undefined;
  private readonly cancelled = new CallCancel();

  get requestId(): string {
    if (this.id === undefined) this.id = randomUuid();
    return this.id;
  }

  get signal(): CallSignal {
    return this.cancelled;
  }

  cancel(): void {
    this.cancelled.abort();
  }
}

/** The outcome of a call whose caller went away (as a local call's). */
const CALLER_GONE: InvokeOutcome = Object.freeze({
  ok: false,
  source: 'server',
  error: Object.freeze({ code: 'transport_error', message: 'The caller went away before the client answered' }),
});

function failure(code: 'not_ready', message: string): InvokeOutcome {
  return { ok: false, source: 'server', error: { code, message } };
}

/** Transport labels a node announces that listings show as they are; any other is shown as `remote`. */
const AUTH_SOURCES: ReadonlySet<string> = new Set<AuthSource>(['none', 'message', 'transport', 'transport+message']);

/** The listing view of a remote client and its catalog. */
export function remoteClientInfo(client: RemoteClient, descriptor: ClientDescriptor): ClientInfo {
  return {
    id: client.id,
    descriptor,
    paths: descriptor.paths,
    sessionId: '',
    transportKind: client.transport,
    authSource: AUTH_SOURCES.has(client.authSource) ? (client.authSource as AuthSource) : 'none',
    registeredAt: client.registeredAt,
    lastSeen: client.registeredAt,
    secure: client.secure,
    principal: client.principal,
    origin: remoteOrigin(client),
    node: client.node,
  };
}

/** The page origin of a remote client: announced by its node, or else the one its principal names. */
export function remoteOrigin(client: Pick<RemoteClient, 'principal' | 'origin'>): string | undefined {
  return client.origin ?? originOfPrincipal(client.principal);
}

/**
 * The page origin a principal stands for: without an auth policy a page's clients belong to
 * `origin:<its Origin>` (ownership.ts), which is all another node announces of it.
 */
export function originOfPrincipal(principal: string | undefined): string | undefined {
  if (principal === undefined || !principal.startsWith('origin:') || principal.startsWith('origin:null#')) return undefined;
  return principal.slice('origin:'.length);
}

export interface RemoteClientsOptions {
  readonly clock: Clock;
  readonly logger: Logger;
  /** Time a client has to answer when a call names none, ms (the router's). */
  readonly invocationTimeoutMs: number;
  readonly onCallEnd: ((record: CallRecord) => void) | undefined;
}

/** The router's part for remote clients: lookups, catalogs, calls in flight. */
export class RemoteClients {
  /** Path index of each descriptor the directory handed out (it keeps the object while cached). */
  private readonly indexes = new WeakMap<ClientDescriptor, PathIndex>();
  private readonly inFlight = new Set<RemoteCallHandle>();
  /** Set by `drain()`: new calls fail with `not_ready`; these resolve once none is in flight. */
  private drained: (() => void)[] | undefined;

  constructor(
    readonly directory: RemoteDirectory,
    private readonly options: RemoteClientsOptions,
  ) {}

  get(clientId: string): RemoteClient | undefined {
    return this.directory.resolve(clientId);
  }

  list(): Iterable<RemoteClient> {
    return this.directory.list();
  }

  /** Calls to remote clients waiting for their answer. */
  get pendingCount(): number {
    return this.inFlight.size;
  }

  registrationProblem(clientId: string, principal: string | undefined): string | undefined {
    return this.directory.registrationProblem?.(clientId, principal);
  }

  /**
   * The client, its catalog and the catalog's path index; undefined when no other node holds it
   * (any more). Rejects with the directory's MdpError when its node cannot be asked.
   */
  async catalog(clientId: string): Promise<{ readonly info: ClientInfo; readonly index: PathIndex } | undefined> {
    if (this.get(clientId) === undefined) return undefined;
    // Not cut short when one caller goes away: a fetch is shared by every caller of that catalog,
    // and bounded by the directory's own time-out.
    const descriptor = await this.directory.descriptor(clientId);
    // The directory is the truth after the wait too: it may have left, or moved to another node.
    const client = this.get(clientId);
    if (!descriptor || descriptor.id !== clientId || !client) return undefined;
    let index = this.indexes.get(descriptor);
    if (!index) this.indexes.set(descriptor, (index = new PathIndex(descriptor.paths)));
    return { info: remoteClientInfo(client, descriptor), index };
  }

  /** {@link catalog} as a listing view, or undefined when it cannot be had now (logged). */
  /**
   * The path index of `clientId`'s catalog when its descriptor is at hand (see
   * `RemoteDirectory.cachedDescriptor`), so that a read of a known remote client resolves its target
   * without a promise; undefined: ask {@link catalog}.
   */
  cachedIndex(clientId: string): PathIndex | undefined {
    const descriptor = this.directory.cachedDescriptor?.(clientId);
    if (!descriptor || descriptor.id !== clientId) return undefined;
    let index = this.indexes.get(descriptor);
    if (!index) this.indexes.set(descriptor, (index = new PathIndex(descriptor.paths)));
    return index;
  }

  async info(clientId: string): Promise<ClientInfo | undefined> {
    try {
      return (await this.catalog(clientId))?.info;
    } catch (error) {
      this.options.logger.debug('remote.catalog_unavailable', { clientId, error: (error as Error).message });
      return undefined;
    }
  }

  /** Where `method path` lands on `clientId`'s catalog; undefined when it does not (or it is gone). */
  async target(clientId: string, method: EndpointMethod, path: string): Promise<ResolvedTarget | undefined> {
    return (await this.catalog(clientId))?.index.resolve(method, path);
  }

  /**
   * Call `clientId` on its node: one request, which its node resolves in the client's catalog as
   * it does for its own callers. `done` is called exactly once, later (or at once when the call
   * cannot start); returns the handle, or undefined when `done` was already called.
   */
  dispatch(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions, done: (outcome: InvokeOutcome) => void): CallHandle | undefined {
    const observe = this.options.onCallEnd ? this.timed(clientId, method, path, options, done) : done;
    if (options.signal?.aborted) {
      observe(CALLER_GONE);
      return undefined;
    }
    if (this.drained) {
      observe(failure('not_ready', 'Server is shutting down'));
      return undefined;
    }
    const handle = new RemoteCallHandle();
    const { signal } = options;
    const onAbort = (): void => handle.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.inFlight.add(handle);
    const call: RemoteInvocation = {
      method,
      path,
      ...(options.query === undefined ? {} : { query: options.query }),
      ...(options.body === undefined ? {} : { body: options.body }),
      ...(options.headers === undefined ? {} : { headers: options.headers }),
      ...(options.auth === undefined ? {} : { auth: options.auth }),
      route: options.route ?? 'host',
    };
    const timeoutMs = options.timeoutMs ?? this.options.invocationTimeoutMs;
    let settled: Promise<InvokeOutcome>;
    try {
      settled = this.directory.call(clientId, call, { timeoutMs, signal: handle.signal });
    } catch (error) {
      settled = Promise.reject(error);
    }
    settled
      .catch((error: unknown): InvokeOutcome => {
        // The directory promises never to reject; if it does, the caller still gets an answer.
        this.options.logger.error('remote.call_failed', { clientId, error });
        return { ok: false, source: 'server', error: serializeError(error) };
      })
      .then((outcome) => {
        signal?.removeEventListener('abort', onAbort);
        this.inFlight.delete(handle);
        if (this.drained && this.inFlight.size === 0) this.settleDrain();
        observe(handle.signal.aborted ? CALLER_GONE : outcome);
      })
      .catch((error: unknown) => this.options.logger.error('call.callback_failed', { clientId, error }));
    return handle;
  }

  /** The caller went away: the call (or the wait for its catalog) ends at once. */
  cancel(handle: RemoteCallHandle): void {
    handle.cancel();
  }

  /**
   * Resolve and call, as `Router.invoke` does for a client of this node. The path is resolved by the
   * client's node, so a call needs no catalog here: an unknown path comes back `not_found` from there.
   */
  invoke(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions): Promise<InvokeOutcome> {
    return new Promise((resolve) => this.dispatch(clientId, method, path, options, resolve));
  }

  /** From now on new calls fail with `not_ready`; resolves once none is in flight. Idempotent. */
  drain(): Promise<void> {
    this.drained ??= [];
    const waiting = this.drained;
    return new Promise((resolve) => {
      waiting.push(resolve);
      if (this.inFlight.size === 0) this.settleDrain();
    });
  }

  /** Every call still in flight ends now (`transport_error` from the directory, or caller gone). */
  close(): void {
    this.drained ??= [];
    for (const handle of this.inFlight) handle.cancel();
    if (this.inFlight.size === 0) this.settleDrain();
  }

  private settleDrain(): void {
    if (!this.drained || this.inFlight.size > 0) return;
    for (const resolve of this.drained.splice(0)) resolve();
  }

  /** `done`, then the call-end observer (as the call table does for a local call). */
  private timed(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions, done: (outcome: InvokeOutcome) => void) {
    const startedAt = this.options.clock.now();
    return (outcome: InvokeOutcome): void => {
      const durationMs = this.options.clock.now() - startedAt;
      try {
        done(outcome);
      } finally {
        try {
          this.options.onCallEnd?.({ route: options.route ?? 'host', clientId, method, path, caller: options.caller ?? options.auth, outcome, durationMs });
        } catch (error) {
          this.options.logger.error('call.observer_failed', { clientId, path, error });
        }
      }
    };
  }
}
