/**
 * The router (SPEC §4): the one object transports and hosts hold. Transport-agnostic: transports
 * open a session with a SessionTransport, feed it parsed messages and report when the connection
 * ends. It composes these parts and owns the order in which they act:
 *
 *   session.ts          a connection, its pending calls and late answers
 *   session-table.ts    the open sessions and the liveness sweep
 *   client-registry.ts  registered clients, ids, catalogs and their totals, mirrors
 *   call-table.ts       calls in flight: dispatch, answers, time-outs, cancel, drain
 *   router-events.ts    client and session events
 *   client-messages.ts  what each message of a client does
 *   whereabouts.ts      where a client lives: here, or on another node of the fleet (SPEC §16, remote.ts)
 *
 * A call's path: `invoke` resolves the target in the client's path index (registry), `dispatch`
 * sends a `callClient` on the client's session and keeps the call (call table) until the session's
 * `callClientResult`, its time-out, its caller's abort or the session's end settles it. A client
 * that no session here holds but another node of the fleet does goes through `RemoteClients`
 * instead, behind the same methods (`invoke`, `dispatch`, `cancel`; lookups in `fleet`): the ways in
 * never know where a client lives. A client of this node wins over a remote one of the same id.
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
import { SESSION_CLOSE, Session, type SessionOwner, type SessionTransport } from './session.js';
import { SessionTable } from './session-table.js';
import { handleClientMessage, type MessageParts } from './client-messages.js';
import { RemoteCallHandle } from './remote.js';
import { Whereabouts } from './whereabouts.js';

export { ROUTER_DEFAULTS } from './router-options.js';
export type { RouterOptions } from './router-options.js';
export { PendingCall, Session } from './session.js';
export type { CallHandle, CallRecord, CallSignal, InvokeOptions, InvokeOutcome, InvokeRoute } from './call-table.js';
export type { ClientEvent, ClientInfo } from './client-registry.js';
export type { SessionEvent } from './router-events.js';
export type { LocatedClient, Maybe } from './whereabouts.js';

export class Router implements SessionOwner {
  readonly options: RouterLimits;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly events: RouterEvents;
  private readonly sessions: SessionTable;
  private readonly registry: ClientRegistry;
  private readonly calls: CallTable;
  private readonly parts: MessageParts;
  /** Where clients live: lookups that span the fleet once a directory is attached (`fleet.attach`). */
  readonly fleet: Whereabouts;

  constructor(options: RouterOptions = {}) {
    this.options = routerLimits(options);
    const limits = this.options;
    const logger = (this.logger = options.logger ?? silentLogger);
    const clock = (this.clock = options.clock ?? systemClock);
    this.events = new RouterEvents(logger);
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
        remoteHolder: (clientId) => this.fleet.remoteHolder(clientId),
        fleetProblem: (clientId, principal) => this.fleet.registrationProblem(clientId, principal),
      },
    });
    this.parts = { calls: this.calls, registry: this.registry, clock, logger };
    const { invocationTimeoutMs } = limits;
    this.fleet = new Whereabouts(this, { clock, logger, invocationTimeoutMs, onCallEnd: options.onCallEnd, changed: (ids) => this.events.emitChanges(ids) });
  }

  // ------------------------------------------------------------------------------------------
  // Sessions and their messages

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
    return this.sessions.countsByKind();
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

  /** Act on a message of `session` (client-messages.ts). */
  handleMessage(session: Session, message: ClientToServerMessage): void {
    handleClientMessage(this.parts, session, message);
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
    const remote = this.fleet.remoteOf(clientId);
    return remote ? remote.invoke(clientId, method, path, options) : this.invokeHere(clientId, method, path, options);
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
    const remote = session ? undefined : this.fleet.remoteOf(clientId);
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

  get pendingCount(): number {
    return this.calls.size;
  }

  /** Whether the call with this request id still waits for its client's answer. */
  isPending(requestId: string): boolean {
    return this.calls.has(requestId);
  }

  // ------------------------------------------------------------------------------------------
  // Listings and events

  /** Whether a session of this node holds `clientId` (see `fleet.locate` for the whole fleet). */
  hasClient(clientId: string): boolean {
    return this.registry.clients.has(clientId);
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
   * changed its catalog, moved or left (`fleet.locate` tells which). Returns the unsubscribe.
   */
  onClientChange(listener: (clientId: string) => void): () => void {
    return this.events.onChange(listener);
  }

  /**
   * {@link onClientChange} in batches: one call per change, whose ids are every client of a fleet
   * node that came up or died together (one pass and one notice for all, SPEC §16.3).
   */
  onClientChanges(listener: (clientIds: readonly string[]) => void): () => void {
    return this.events.onChanges(listener);
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
    const remote = this.fleet.drain();
    return remote ? Promise.all([this.calls.drain(), remote]).then(() => undefined) : this.calls.drain();
  }

  /** Close every session (pending calls fail) and stop the liveness timer. Idempotent. */
  async close(): Promise<void> {
    void this.calls.drain(); // no new call from here on
    this.fleet.close();
    this.sessions.closed = true;
    for (const session of [...this.sessions]) this.closeSession(session, SESSION_CLOSE.shutdown);
    this.sessions.close();
    // Every call ended with its session; nothing should be left, but never leave a timer behind.
    this.calls.close();
  }
}
