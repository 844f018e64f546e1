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
 *
 * A call's path: `invoke` resolves the target in the client's path index (registry), `dispatch`
 * sends a `callClient` on the client's session and keeps the call (call table) until the session's
 * `callClientResult`, its time-out, its caller's abort or the session's end settles it.
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

export { ROUTER_DEFAULTS } from './router-options.js';
export type { RouterOptions } from './router-options.js';
export { PendingCall, Session } from './session.js';
export type { CallHandle, CallRecord, CallSignal, InvokeOptions, InvokeOutcome, InvokeRoute } from './call-table.js';
export type { ClientEvent, ClientInfo } from './client-registry.js';
export type { SessionEvent } from './router-events.js';

export class Router implements SessionOwner {
  readonly options: RouterLimits;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly events: RouterEvents;
  private readonly sessions: SessionTable;
  private readonly registry: ClientRegistry;
  private readonly calls: CallTable;

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
      hooks: {
        closeSession: (session, why) => this.closeSession(session, why),
        failCalls: (session, clientId, reason) => this.calls.failSession(session, clientId, reason),
        emit: (event) => this.events.emitClient(event),
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

  /** Resolve and invoke; a target that does not resolve ends as `not_found`. */
  invoke(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions = {}): Promise<InvokeOutcome> {
    const target = this.findTarget(clientId, method, path);
    if (!target) return Promise.resolve(this.calls.notFound(clientId, method, path, options));
    return this.invokeTarget(clientId, target, options);
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
    return this.calls.dispatch(clientId, this.registry.clients.get(clientId)?.session, target, options, done);
  }

  /**
   * The caller of a call went away (its HTTP request was aborted): the call ends at once with
   * `transport_error` and is not delivered later (a queued HTTP loop message of it is dropped).
   * Idempotent; a call that already ended is left alone.
   */
  cancel(call: CallHandle): void {
    this.calls.cancel(call);
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
    return this.calls.drain();
  }

  /** Close every session (pending calls fail) and stop the liveness timer. Idempotent. */
  async close(): Promise<void> {
    void this.calls.drain(); // no new call from here on
    this.sessions.closed = true;
    for (const session of [...this.sessions]) this.closeSession(session, SESSION_CLOSE.shutdown);
    this.sessions.close();
    // Every call ended with its session; nothing should be left, but never leave a timer behind.
    this.calls.close();
  }
}
