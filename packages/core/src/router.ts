/**
 * The router (SPEC §4): the one object transports and hosts hold. Transport-agnostic: transports
 * open a session with a SessionTransport, feed it parsed messages and report when the connection
 * ends. It composes four parts and owns the order in which they act:
 *
 *   session.ts          a connection, its pending calls and late answers
 *   session-table.ts    the open sessions and the liveness sweep
 *   client-registry.ts  registered clients, ids, catalogs and their totals, mirrors
 *   call-table.ts       calls in flight: dispatch, answers, time-outs, cancel, drain
 *   router-events.ts    client and session events
 *   remote.ts           clients of the fleet's other nodes (SPEC §16), when a directory is attached
 *
 * A call's path: `invoke` resolves the target in the client's path index (registry), `dispatch`
 * sends a `callClient` on the client's session and keeps the call (call table) until the session's
 * `callClientResult`, its time-out, its caller's abort or the session's end settles it. A client
 * that no session here holds but another node of the fleet does goes through `RemoteClients`
 * instead, behind the same methods (`invoke`, `dispatch`, `cancel`, `locate…`): the ways in never
 * know where a client lives. A client of this node wins over a remote one of the same id.
 */
import { concretePathProblem, type AuthContext, type ClientToServerMessage, type EndpointMethod } from '@mdp/protocol';
import { NO_SERVER_IDS } from './aliases.js';
import { CallTable, type CallHandle, type InvokeOptions, type InvokeOutcome } from './call-table.js';
import { ClientRegistry, clientInfo, type ClientEvent, type ClientInfo } from './client-registry.js';
import { systemClock, type Clock } from './clock.js';
import { MdpError } from './errors.js';
import { silentLogger, type Logger } from './logger.js';
import type { ResolvedTarget } from './path-index.js';
import { RouterEvents, type SessionEvent } from './router-events.js';
import { routerLimits, type RouterLimits, type RouterOptions } from './router-options.js';
import { SESSION_CLOSE, Session, deliver, type SessionOwner, type SessionTransport } from './session.js';
import { SessionTable } from './session-table.js';
import { RemoteCallHandle, RemoteClients, originOfPrincipal, type RemoteDirectory } from './remote.js';

export { ROUTER_DEFAULTS } from './router-options.js';
export type { RouterOptions } from './router-options.js';
export { PendingCall, Session } from './session.js';
export type { CallHandle, CallRecord, CallSignal, InvokeOptions, InvokeOutcome, InvokeRoute } from './call-table.js';
export type { ClientEvent, ClientInfo } from './client-registry.js';
export type { SessionEvent } from './router-events.js';

/**
 * A client wherever it lives, without a remote one's catalog: what ownership, tenancy and the
 * readers' origin checks need. `descriptor` only for a client of this node; `node` only for another's.
 */
export interface LocatedClient {
  readonly id: string;
  readonly principal: string | undefined;
  readonly origin: string | undefined;
  readonly descriptor?: ClientInfo['descriptor'];
  readonly node?: string | undefined;
}

/** A value now, or later (a remote client's catalog is fetched from its node). */
export type Maybe<T> = T | Promise<T>;

export class Router implements SessionOwner {
  readonly options: RouterLimits;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly events: RouterEvents;
  private readonly sessions: SessionTable;
  private readonly registry: ClientRegistry;
  private readonly calls: CallTable;
  private remoteClients: RemoteClients | undefined;
  private readonly onCallEnd: RouterOptions['onCallEnd'];

  constructor(options: RouterOptions = {}) {
    this.options = routerLimits(options);
    const limits = this.options;
    const logger = (this.logger = options.logger ?? silentLogger);
    const clock = (this.clock = options.clock ?? systemClock);
    this.events = new RouterEvents(logger);
    this.onCallEnd = options.onCallEnd;
    this.calls = new CallTable({ limits, clock, logger, onCallEnd: options.onCallEnd });
    this.sessions = new SessionTable({ limits, clock, logger, expire: (session) => this.closeSession(session, SESSION_CLOSE.expired) });
    this.registry = new ClientRegistry({
      limits,
      clock,
      logger,
      isServerId: options.isServerId ?? NO_SERVER_IDS,
      registerScope: options.registerScope,
      hooks: {
        closeSession: (session, why) => this.closeSession(session, why),
        failCalls: (session, clientId, reason) => this.calls.failSession(session, clientId, reason),
        emit: (event) => this.events.emitClient(event),
        remoteHolder: (clientId) => {
          const held = this.remoteClients?.get(clientId);
          return held && { principal: held.principal, peer: undefined };
        },
        fleetProblem: (clientId, principal) => this.remoteClients?.registrationProblem(clientId, principal),
      },
    });
  }

  // ------------------------------------------------------------------------------------------
  // Sessions

  /**
   * Open a session for one connection. `principal` names who opened it: under an auth policy
   * `AuthGate.principalOf`, without one `originPrincipal(transport.origin)` (ownership.ts). `peer`:
   * the cluster member the connection proved it is a mirror link of, if any.
   */
  openSession(transport: SessionTransport, transportAuth?: AuthContext, principal?: string, peer?: string): Session {
    if (this.sessions.closed) throw new MdpError('not_ready', 'Server is shutting down');
    const session = new Session(this, transport, transportAuth, principal, peer, this.clock);
    this.sessions.add(session);
    this.logger.debug('session.open', { sessionId: session.id, transport: transport.kind });
    this.events.emitSession({ type: 'open', session });
    return session;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Open sessions by transport kind. Walks every session: for a scrape, not for a hot path. */
  sessionCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const session of this.sessions) counts.set(session.transport.kind, (counts.get(session.transport.kind) ?? 0) + 1);
    return counts;
  }

  /** End a session: its client goes away and its pending calls fail at once. Idempotent. */
  endSession(session: Session, reason: string): void {
    if (session.closed) return;
    session.closed = true;
    this.sessions.delete(session);
    if (session.client) this.registry.remove(session.client, `client session ended: ${reason}`);
    this.calls.failSession(session, undefined, `client session ended: ${reason}`);
    if (this.sessions.size === 0) {
      this.sessions.idle();
      // No session, so no pending call: let go of the time-out timers kept for reuse.
      this.calls.releaseTimers();
    }
    this.logger.debug('session.end', { sessionId: session.id, reason });
    this.events.emitSession({ type: 'end', session, reason });
  }

  /** Close a session from the server side: tell the transport, then end it. */
  private closeSession(session: Session, why: (typeof SESSION_CLOSE)[keyof typeof SESSION_CLOSE]): void {
    if (session.closed) return;
    try {
      session.transport.close(why.code, why.reason);
    } catch (error) {
      this.logger.warn('session.close_failed', { sessionId: session.id, error });
    }
    this.endSession(session, why.reason);
  }

  // ------------------------------------------------------------------------------------------
  // Messages

  handleMessage(session: Session, message: ClientToServerMessage): void {
    if (session.closed) throw new MdpError('transport_error', 'Session is closed');
    session.lastSeen = this.clock.wallNow();
    switch (message.type) {
      case 'callClientResult':
        this.calls.answer(session, message);
        return;
      case 'registerClient':
        this.registry.register(session, message.client, message.auth);
        return;
      case 'updateClientCatalog':
        this.registry.updateCatalog(session, message.clientId, message.paths);
        return;
      case 'unregisterClient':
        if (session.client && session.client.id === message.clientId) this.registry.remove(session.client, 'client unregistered');
        return;
      case 'ping':
        deliver(session, { type: 'pong', timestamp: message.timestamp ?? this.clock.wallNow() }, this.logger);
        return;
      case 'pong':
        return;
    }
  }

  /** See {@link Session.refuseCall}. */
  refuseCall(session: Session, requestId: string, reason: string): void {
    this.calls.refuse(session, requestId, reason);
  }

  // ------------------------------------------------------------------------------------------
  // Invocations

  /** Resolve (clientId, method, path) to a target; `undefined` when nothing matches or `path` is not a valid concrete path. */
  findTarget(clientId: string, method: EndpointMethod, path: string): ResolvedTarget | undefined {
    if (concretePathProblem(path) !== undefined) return undefined;
    return this.registry.clients.get(clientId)?.index.resolve(method, path);
  }

  /**
   * The skill a skill route names on `clientId` (SPEC §8: the name itself when it is a skill
   * path, then `<name>/skill.md`, `<name>/SKILL.md`, `<name>.skill.md`), or `undefined`.
   */
  findSkillRead(clientId: string, name: string): ResolvedTarget | undefined {
    return this.registry.clients.get(clientId)?.index.resolveSkillRead(name);
  }

  /**
   * Resolve and invoke; a target that does not resolve ends as `not_found`. A client of another node
   * of the fleet is called there (its node resolves the path).
   */
  invoke(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions = {}): Promise<InvokeOutcome> {
    const remote = this.remoteOf(clientId);
    if (remote) return remote.invoke(clientId, method, path, options);
    return this.invokeHere(clientId, method, path, options);
  }

  /** {@link invoke} on this node's clients only: how a node answers a call another node sent it. */
  invokeHere(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions = {}): Promise<InvokeOutcome> {
    const target = this.findTarget(clientId, method, path);
    if (!target) return Promise.resolve(this.calls.notFound(clientId, method, path, options));
    return new Promise((resolve) => this.calls.dispatch(clientId, this.registry.clients.get(clientId)?.session, target, options, resolve));
  }

  /** Send a callClient for a resolved target and wait for its outcome. Never rejects, never hangs. */
  invokeTarget(clientId: string, target: ResolvedTarget, options: InvokeOptions = {}): Promise<InvokeOutcome> {
    return new Promise((resolve) => this.dispatch(clientId, target, options, resolve));
  }

  /**
   * {@link invokeTarget} for callers that take a callback: `done` is called exactly once, possibly
   * before `dispatch` returns (a client that is not connected, or with too many calls waiting).
   * Returns the call in flight, for {@link cancel}, or `undefined` when it already ended. (A
   * handle costs nothing per call where an AbortSignal would cost a controller and a listener.)
   */
  dispatch(clientId: string, target: ResolvedTarget, options: InvokeOptions, done: (outcome: InvokeOutcome) => void): CallHandle | undefined {
    const session = this.registry.clients.get(clientId)?.session;
    const remote = session ? undefined : this.remoteOf(clientId);
    if (remote) return remote.dispatch(clientId, target.method, target.path, options, done);
    return this.calls.dispatch(clientId, session, target, options, done);
  }

  /**
   * The caller of a call went away (its HTTP request was aborted): the call ends at once with
   * `transport_error` and is not delivered later (a queued HTTP loop message of it is dropped).
   * Idempotent; a call that already ended is left alone.
   */
  cancel(call: CallHandle): void {
    if (call instanceof RemoteCallHandle) call.cancel();
    else this.calls.cancel(call);
  }

  /**
   * A handle for a wait ahead of a call (a remote client's catalog being fetched) that
   * {@link cancel} ends like a call: pass its `signal` to the call that follows.
   */
  waitHandle(): RemoteCallHandle {
    return new RemoteCallHandle();
  }

  get pendingCount(): number {
    return this.calls.size;
  }

  /** Whether the call with this request id still waits for its client's answer. */
  isPending(requestId: string): boolean {
    return this.calls.has(requestId);
  }

  // ------------------------------------------------------------------------------------------
  // Listings and events

  /** Whether a session of this node holds `clientId` (see {@link locate} for the whole fleet). */
  hasClient(clientId: string): boolean {
    return this.registry.clients.has(clientId);
  }

  /** Who holds `clientId`: a session here, or another node of the fleet; undefined when none. */
  locate(clientId: string): LocatedClient | undefined {
    const record = this.registry.clients.get(clientId);
    if (record) return clientInfo(record);
    const remote = this.remoteClients?.get(clientId);
    return remote && { id: remote.id, principal: remote.principal, origin: originOfPrincipal(remote.principal), node: remote.node };
  }

  /**
   * A client and its catalog wherever it lives: now for one of this node, once its catalog is
   * fetched for one of another node. Rejects (MdpError `not_ready`, `transport_error`, `timeout`)
   * only when that node cannot be asked.
   */
  describe(clientId: string): Maybe<ClientInfo | undefined> {
    const local = this.getClient(clientId);
    if (local) return local;
    const remote = this.remoteOf(clientId);
    return remote ? remote.catalog(clientId).then((found) => found?.info) : undefined;
  }

  /** {@link findTarget} wherever the client lives (see {@link describe}). */
  locateTarget(clientId: string, method: EndpointMethod, path: string): Maybe<ResolvedTarget | undefined> {
    if (this.registry.clients.has(clientId)) return this.findTarget(clientId, method, path);
    const remote = this.remoteOf(clientId);
    if (!remote || concretePathProblem(path) !== undefined) return undefined;
    return remote.catalog(clientId).then((found) => found?.index.resolve(method, path));
  }

  /** {@link findSkillRead} wherever the client lives (see {@link describe}). */
  locateSkillRead(clientId: string, name: string): Maybe<ResolvedTarget | undefined> {
    if (this.registry.clients.has(clientId)) return this.findSkillRead(clientId, name);
    const remote = this.remoteOf(clientId);
    return remote ? remote.catalog(clientId).then((found) => found?.index.resolveSkillRead(name)) : undefined;
  }

  /** The clients of the fleet's other nodes (none outside a fleet), without those of this node. */
  *remoteClientIds(): Iterable<string> {
    const remote = this.remoteClients;
    if (!remote) return;
    for (const client of remote.list()) if (!this.registry.clients.has(client.id)) yield client.id;
  }

  getClient(clientId: string): ClientInfo | undefined {
    const record = this.registry.clients.get(clientId);
    return record && clientInfo(record);
  }

  listClients(): ClientInfo[] {
    return [...this.registry.clients.values()].map(clientInfo);
  }

  get clientCount(): number {
    return this.registry.clients.size;
  }

  /** Bytes of JSON in every registered catalog together, as `maxTotalCatalogBytes` counts them. */
  get catalogBytes(): number {
    return this.registry.totals.bytes;
  }

  /** Subscribe to client registrations, catalog updates and removals. Returns the unsubscribe. */
  onClientEvent(listener: (event: ClientEvent) => void): () => void {
    return this.events.onClient(listener);
  }

  /**
   * Subscribe to changes of any client, here or on another node of the fleet, by id: it came,
   * changed its catalog, moved or left ({@link locate} tells which). Returns the unsubscribe.
   */
  onClientChange(listener: (clientId: string) => void): () => void {
    return this.events.onChange(listener);
  }

  // ------------------------------------------------------------------------------------------
  // The fleet

  /**
   * Reach the clients of a fleet's other nodes through `directory` (remote.ts, SPEC §16). Returns
   * the detach, which ends the remote calls in flight. One directory at a time.
   */
  attachRemote(directory: RemoteDirectory): () => void {
    if (this.remoteClients) throw new Error('A remote directory is attached already');
    const remote = new RemoteClients(directory, {
      clock: this.clock,
      logger: this.logger,
      invocationTimeoutMs: this.options.invocationTimeoutMs,
      onCallEnd: this.onCallEnd,
    });
    this.remoteClients = remote;
    const off = directory.onChange((changes) => {
      for (const change of changes) this.events.emitChange(change.clientId);
    });
    return () => {
      off();
      if (this.remoteClients !== remote) return;
      this.remoteClients = undefined;
      remote.close();
    };
  }

  /** Whether a fleet directory is attached ({@link attachRemote}). */
  get inFleet(): boolean {
    return this.remoteClients !== undefined;
  }

  /** Calls this node sent to clients of other nodes and still waits for. */
  get remotePendingCount(): number {
    return this.remoteClients?.pendingCount ?? 0;
  }

  /**
   * Close the session of this node's client `clientId` from the server side: a newer registration
   * of the id on another node replaced it (`replaced`, SPEC §4.3 fleet-wide), or it is held there
   * by its owner (`heldByAnother`). Returns whether there was one.
   */
  closeClient(clientId: string, why: 'replaced' | 'heldByAnother'): boolean {
    const record = this.registry.clients.get(clientId);
    if (!record) return false;
    this.logger.info('client.replaced_remotely', { clientId, sessionId: record.session.id, why });
    this.closeSession(record.session, SESSION_CLOSE[why]);
    return true;
  }

  /** The remote part, when `clientId` is no client of this node but another node's. */
  private remoteOf(clientId: string): RemoteClients | undefined {
    const remote = this.remoteClients;
    return remote && !this.registry.clients.has(clientId) && remote.get(clientId) !== undefined ? remote : undefined;
  }

  /**
   * Subscribe to sessions opening and ending (whoever ends them: the transport, a replacement, the
   * liveness sweep, shutdown). Returns the unsubscribe. What a listener throws is logged.
   */
  onSessionEvent(listener: (event: SessionEvent) => void): () => void {
    return this.events.onSession(listener);
  }

  // ------------------------------------------------------------------------------------------
  // Lifecycle

  /**
   * Graceful shutdown, first half: from now on a new call fails at once with `not_ready`, and the
   * calls in flight go on; resolves once none is pending (at once when none is). `close()` ends what
   * is left. Idempotent.
   */
  drain(): Promise<void> {
    const remote = this.remoteClients?.drain();
    return remote ? Promise.all([this.calls.drain(), remote]).then(() => undefined) : this.calls.drain();
  }

  /** Close every session (pending calls fail) and stop the liveness timer. Idempotent. */
  async close(): Promise<void> {
    void this.calls.drain(); // no new call from here on
    this.remoteClients?.close();
    this.sessions.closed = true;
    for (const session of [...this.sessions]) this.closeSession(session, SESSION_CLOSE.shutdown);
    this.sessions.close();
    // Every call ended with its session; nothing should be left, but never leave a timer behind.
    this.calls.close();
  }
}
