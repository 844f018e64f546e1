/**
 * The registry and router: sessions, registered clients, target resolution and pending
 * invocations (SPEC §4). Transport-agnostic: transports open a session with a SessionTransport,
 * feed it parsed messages and report when the connection ends.
 */
import {
  concretePathProblem,
  type AuthContext,
  type CallClientMessage,
  type CallClientResultMessage,
  type ClientDescriptor,
  type ClientToServerMessage,
  type EndpointMethod,
  type PathDescriptor,
  type SerializedError,
  type ServerToClientMessage,
} from '@mdp/protocol';
import { CATALOG_LIMIT_DEFAULTS, catalogProblem, fullBucket, measureCatalog, takeToken, type CatalogLimits, type CatalogSize, type RateBucket } from './catalog-limits.js';
import { CatalogTotals, type Counted } from './catalog-totals.js';
import { Deadlines, MAX_TIMER_MS, type Deadline } from './deadlines.js';
import { randomUuid } from './uuid.js';
import { IdTable } from './id-table.js';
import { MdpError } from './errors.js';
import { silentLogger, type Logger } from './logger.js';
import { NO_SERVER_IDS, type IsServerId } from './aliases.js';
import { mirrorOutranks, registrationRefusal, trustedMirror, type MirrorOwner } from './ownership.js';
import { PathIndex, type ResolvedTarget } from './path-index.js';
import { SESSION_CLOSE, authSourceOf, type AuthSource, type SessionInfo, type SessionTransport } from './session.js';

export interface RouterOptions extends Partial<CatalogLimits> {
  /** Time a client has to answer a callClient, ms. Default 15000. */
  invocationTimeoutMs?: number;
  /** How often every session is pinged and checked for silence, ms. Default 30000. */
  heartbeatIntervalMs?: number;
  /** A session silent for this long is closed, ms. Default 90000. */
  heartbeatTimeoutMs?: number;
  /**
   * Most calls waiting for one client's answer. A call over it ends at once, before anything is
   * sent, with `not_ready` (the HTTP edge answers 503 with `Retry-After`). Default 1000.
   */
  maxPendingCalls?: number;
  /**
   * Whether an id is a server id of this server's cluster (read at each registration, so it may
   * learn members as they join). Under an auth policy the ids named like a member's mirrors
   * (`<member>.<clientId>`) are that member's alone (ownership.ts). Default: none.
   */
  isServerId?: IsServerId;
  logger?: Logger;
  /**
   * Called once as each call ends, whatever its outcome (metrics, access and audit logs). Runs on
   * the call's path: keep it cheap; what it throws is logged. Without it calls are not timed.
   */
  onCallEnd?: (record: CallRecord) => void;
}

export const ROUTER_DEFAULTS = {
  invocationTimeoutMs: 15_000,
  heartbeatIntervalMs: 30_000,
  heartbeatTimeoutMs: 90_000,
  maxPendingCalls: 1000,
  ...CATALOG_LIMIT_DEFAULTS,
} as const;

/** How long after a call ended unanswered its answer still shows that the client reads, ms. */
const LATE_ANSWER_MS = 60_000;
/** How many such calls a session remembers. */
const LATE_ANSWERS_KEPT = 64;

/**
 * The outcome of a call refused because its client is behind (too many calls waiting, or
 * `Session.refuseCall`): `not_ready`, to be tried again in a second (HTTP edges: 503 + Retry-After).
 */
function busy(message: string): InvokeOutcome {
  return { ok: false, source: 'server', error: { code: 'not_ready', message, details: { retryAfterMs: 1000 } } };
}

/** Sessions pinged or expired per turn of the event loop by the liveness sweep. */
const SWEEP_BATCH = 256;

/** A registered client as listings show it. */
export interface ClientInfo {
  readonly id: string;
  readonly descriptor: ClientDescriptor;
  readonly paths: readonly PathDescriptor[];
  readonly sessionId: string;
  readonly transportKind: string;
  readonly authSource: AuthSource;
  readonly registeredAt: number;
  /** Last message (or poll) on its session, ms since the epoch. */
  readonly lastSeen: number;
  /** Its connection is encrypted (TLS). */
  readonly secure: boolean;
  /**
   * The principal its id belongs to (ownership.ts): under an auth policy a hash, never a secret,
   * which a mirror of it carries to the hub so that the id stays that principal's there too;
   * without one its page's origin, or `undefined` for a local program.
   */
  readonly principal: string | undefined;
  /** The `Origin` of the web page that registered it; `undefined` for other programs. */
  readonly origin: string | undefined;
}

export type ClientEvent =
  | { readonly type: 'registered'; readonly client: ClientInfo }
  | { readonly type: 'updated'; readonly client: ClientInfo }
  | { readonly type: 'unregistered'; readonly clientId: string };

/**
 * A session opened or ended, as {@link Router.onSessionEvent} reports it: `end` comes once per
 * session, after its client was removed and its pending calls failed, with the reason it ended.
 */
export type SessionEvent = { readonly type: 'open'; readonly session: Session } | { readonly type: 'end'; readonly session: Session; readonly reason: string };

/** How an invocation ended. `source` tells whether the client answered or the server gave up. */
export type InvokeOutcome =
  | { readonly ok: true; readonly data: unknown }
  | { readonly ok: false; readonly error: SerializedError; readonly source: 'client' | 'server' };

/**
 * A call in flight, as {@link Router.dispatch} returns it: hand it to {@link Router.cancel} when the
 * caller goes away. Opaque; holding one after the call ended is harmless.
 */
export interface CallHandle {
  readonly requestId: string;
}

/** The surface a call came through: a skill route, the host API, the MCP bridge, a cluster peer. */
export type InvokeRoute = 'skill' | 'host' | 'mcp' | 'cluster';

/** A call that ended, as {@link RouterOptions.onCallEnd} sees it. */
export interface CallRecord {
  readonly route: InvokeRoute;
  readonly clientId: string;
  readonly method: EndpointMethod;
  /** The concrete path called. */
  readonly path: string;
  /** Who asked (the caller's transport auth), if known. */
  readonly caller: AuthContext | undefined;
  readonly outcome: InvokeOutcome;
  /** From the call's start to its outcome, ms (fractional). */
  readonly durationMs: number;
}

export interface InvokeOptions {
  query?: Record<string, string>;
  body?: unknown;
  headers?: Record<string, string>;
  auth?: AuthContext;
  /** Overrides the router's invocation time-out for this call, ms. */
  timeoutMs?: number;
  /**
   * The caller went away (an aborted HTTP request, a cancelled MCP call): the call ends at once and
   * is not delivered later (a queued HTTP loop message whose call ended is dropped).
   */
  signal?: CallSignal;
  /** The surface the call came through, for the call-end observer. Default `host`. */
  route?: InvokeRoute;
  /** Who asked, when it is not `auth` (a host call may forward another credential to the client). Default `auth`. */
  caller?: AuthContext;
}

/**
 * What tells a call that its caller went away: an `AbortSignal`, or any object with the part of
 * its API used here (an HTTP edge can answer it from its response's 'close' event, which costs far
 * less per call than an AbortController).
 */
export interface CallSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

interface ClientRecord {
  readonly id: string;
  descriptor: ClientDescriptor;
  index: PathIndex;
  readonly session: Session;
  readonly registeredAt: number;
  /** What it adds to the totals: its paths, its bytes, its address (catalog-totals.ts). */
  counted: Counted;
  /** Bytes of its descriptor's JSON with `paths: []`: what a catalog update keeps. */
  headBytes: number;
  /** The id it mirrors, when it is a trusted mirror (registered by a proven link of its member). */
  mirrorOf: string | undefined;
}

/**
 * A call waiting for its client's answer. It is also a node of two lists, so keeping it allocates
 * nothing more: its time-out list, and its session's calls (to fail them when the session ends).
 */
export class PendingCall implements Deadline, CallHandle {
  deadlineAt = 0;
  deadlinePrev: Deadline | undefined = undefined;
  deadlineNext: Deadline | undefined = undefined;
  deadlineList: Deadline['deadlineList'] = undefined;
  sessionPrev: PendingCall | undefined = undefined;
  sessionNext: PendingCall | undefined = undefined;
  /** Set while the caller's abort signal is watched. */
  unwatch: (() => void) | undefined = undefined;
  /** Set once the call has its outcome. */
  ended = false;

  constructor(
    readonly requestId: string,
    readonly session: Session,
    readonly clientId: string,
    readonly timeoutMs: number,
    readonly done: (outcome: InvokeOutcome) => void,
  ) {}
}

/** One connection as core sees it. Transports keep the object and call its methods. */
export class Session implements SessionInfo {
  readonly id: string = randomUuid();
  lastSeen: number = Date.now();
  transportAuth: AuthContext | undefined;
  messageAuth: AuthContext | undefined;
  closed = false;
  /** Catalog changes this session may still make (made on its first one). */
  catalogBucket: RateBucket | undefined;
  /** Client registered on this session, if any. */
  client: ClientRecord | undefined;
  /** Newest call waiting for this session's answer; the calls link to each other (no set per session). */
  lastCall: PendingCall | undefined;
  /** How many calls are waiting for this session's answer (sent, not yet answered, failed or timed out). */
  pendingCount = 0;
  /**
   * Calls sent to this session that ended without its answer (timed out, their caller gone) since it
   * last answered one in time. One that keeps letting calls die is stalled, which transports use to
   * tell a slow peer from a busy one.
   */
  unansweredCalls = 0;
  /**
   * Answers that showed the session reads what it is sent: to one of its pending calls, or, late, to
   * a call of its that ended unanswered within {@link LATE_ANSWER_MS} (each once). An answer to an id
   * it was never sent shows nothing: a peer that reads nothing can make one up. Transports compare
   * it before and after handing in a message.
   */
  answers = 0;
  /** The last {@link LATE_ANSWERS_KEPT} calls that ended unanswered, with when (made on the first). */
  private late: { ids: string[]; at: number[]; next: number } | undefined;

  constructor(
    private readonly router: Router,
    readonly transport: SessionTransport,
    transportAuth: AuthContext | undefined,
    /**
     * Who opened the session under an auth policy (`AuthGate.principalOf`); `undefined` without one.
     * A client id registered here belongs to it: another principal cannot take it over.
     */
    readonly principal: string | undefined,
    /**
     * The cluster member this session proved it is a mirror link of (with the cluster secret), if
     * any: only such a session registers that member's mirrored ids (ownership.ts).
     */
    readonly peer: string | undefined = undefined,
  ) {
    this.transportAuth = transportAuth;
  }

  get transportKind(): string {
    return this.transport.kind;
  }

  get clientId(): string | undefined {
    return this.client?.id;
  }

  /** Handle one parsed client message. Throws MdpError(bad_request) when it cannot be applied. */
  handle(message: ClientToServerMessage): void {
    this.router.handleMessage(this, message);
  }

  /** Record activity; when `transportAuth` is given it replaces the stored one. */
  touch(transportAuth?: AuthContext | null): void {
    this.lastSeen = Date.now();
    if (transportAuth !== undefined) this.transportAuth = transportAuth ?? undefined;
  }

  /**
   * The transport's connection ended: unregister and end pending calls, which fail with `reason`.
   * Idempotent.
   */
  end(reason = 'connection closed'): void {
    this.router.endSession(this, reason);
  }

  /**
   * The transport declines a call it was just handed, because its peer is behind (more bytes wait
   * for it than the transport's cap) but still reading: the call fails at once with `not_ready`
   * and a retry hint, and is never sent. It does not count as unanswered: the peer never had it.
   * A request id that is not one of this session's pending calls is ignored.
   */
  refuseCall(requestId: string, reason: string): void {
    this.router.refuseCall(this, requestId, reason);
  }

  /**
   * Note that the call `requestId` sent to this session ended unanswered at `now` (ms): an answer to
   * it within {@link LATE_ANSWER_MS} still shows that the session reads (see `answers`).
   */
  noteUnanswered(requestId: string, now: number): void {
    const late = (this.late ??= { ids: [], at: [], next: 0 });
    late.ids[late.next] = requestId;
    late.at[late.next] = now;
    late.next = (late.next + 1) % LATE_ANSWERS_KEPT;
  }

  /** Whether `requestId` is a call of this session that ended unanswered lately; it counts once. */
  takeLate(requestId: string, now: number): boolean {
    const late = this.late;
    if (late === undefined) return false;
    const at = late.ids.indexOf(requestId);
    if (at < 0) return false;
    late.ids[at] = '';
    return now - (late.at[at] as number) <= LATE_ANSWER_MS;
  }
}

type Listener = (event: ClientEvent) => void;
type SessionListener = (event: SessionEvent) => void;

/**
 * The remote address a client of `session` counts against (`maxClientsPerAddress`): none for a
 * session without one (in-process) or a proven mirror link of a cluster member, whose clients
 * were counted on their own server.
 */
function countedAddress(session: Session): string | undefined {
  return session.peer === undefined ? session.transport.remoteAddress : undefined;
}

/** The outcome of a call whose caller went away before it was answered. */
const CALLER_GONE: InvokeOutcome = Object.freeze({
  ok: false,
  source: 'server',
  error: Object.freeze({ code: 'transport_error', message: 'The caller went away before the client answered' }),
});

export class Router {
  readonly options: Required<Omit<RouterOptions, 'logger' | 'onCallEnd' | 'isServerId'>>;
  private readonly logger: Logger;
  private readonly isServerId: IsServerId;
  private readonly onCallEnd: ((record: CallRecord) => void) | undefined;
  private readonly sessions = new Set<Session>();
  private readonly clients = new Map<string, ClientRecord>();
  /** What the catalogs of `clients` add up to (`maxTotalPaths`, `maxTotalCatalogBytes`, `maxClientsPerAddress`). */
  private readonly totals: CatalogTotals;
  /** Trusted mirrors by the id they mirror (that id lives on their member): to see a bare id shadow one. */
  private readonly mirrors = new Map<string, Set<ClientRecord>>();
  private readonly pending = new IdTable<PendingCall>();
  private readonly deadlines = new Deadlines<PendingCall>((call) =>
    this.finish(call, {
      ok: false,
      source: 'server',
      error: { code: 'timeout', message: `Client ${JSON.stringify(call.clientId)} did not answer within ${call.timeoutMs} ms` },
    }),
  );
  private readonly listeners = new Set<Listener>();
  private readonly sessionListeners = new Set<SessionListener>();
  private heartbeat: NodeJS.Timeout | undefined;
  /** Set while a liveness sweep goes through its sessions batch by batch. */
  private sweeping: NodeJS.Immediate | undefined;
  private closing = false;
  /** Set by `drain()`: new calls fail with `not_ready`; these resolve once no call is pending. */
  private drained: (() => void)[] | undefined;

  constructor(options: RouterOptions = {}) {
    this.options = {
      invocationTimeoutMs: options.invocationTimeoutMs ?? ROUTER_DEFAULTS.invocationTimeoutMs,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? ROUTER_DEFAULTS.heartbeatIntervalMs,
      heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? ROUTER_DEFAULTS.heartbeatTimeoutMs,
      maxPendingCalls: options.maxPendingCalls ?? ROUTER_DEFAULTS.maxPendingCalls,
      maxPathLength: options.maxPathLength ?? ROUTER_DEFAULTS.maxPathLength,
      maxPathSegments: options.maxPathSegments ?? ROUTER_DEFAULTS.maxPathSegments,
      maxCatalogPaths: options.maxCatalogPaths ?? ROUTER_DEFAULTS.maxCatalogPaths,
      maxTotalPaths: options.maxTotalPaths ?? ROUTER_DEFAULTS.maxTotalPaths,
      maxDescriptionLength: options.maxDescriptionLength ?? ROUTER_DEFAULTS.maxDescriptionLength,
      maxSchemaLength: options.maxSchemaLength ?? ROUTER_DEFAULTS.maxSchemaLength,
      maxCatalogBytes: options.maxCatalogBytes ?? ROUTER_DEFAULTS.maxCatalogBytes,
      maxTotalCatalogBytes: options.maxTotalCatalogBytes ?? ROUTER_DEFAULTS.maxTotalCatalogBytes,
      maxClientsPerAddress: options.maxClientsPerAddress ?? ROUTER_DEFAULTS.maxClientsPerAddress,
      catalogUpdatesPerMinute: options.catalogUpdatesPerMinute ?? ROUTER_DEFAULTS.catalogUpdatesPerMinute,
    };
    for (const [name, value] of Object.entries(this.options)) {
      if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
    }
    this.totals = new CatalogTotals(this.options);
    this.logger = options.logger ?? silentLogger;
    this.onCallEnd = options.onCallEnd;
    this.isServerId = options.isServerId ?? NO_SERVER_IDS;
  }

  // ------------------------------------------------------------------------------------------
  // Sessions

  /**
   * Open a session for one connection. `principal` names who opened it: under an auth policy
   * `AuthGate.principalOf`, without one `originPrincipal(transport.origin)` (ownership.ts). `peer`:
   * the cluster member the connection proved it is a mirror link of, if any.
   */
  openSession(transport: SessionTransport, transportAuth?: AuthContext, principal?: string, peer?: string): Session {
    if (this.closing) throw new MdpError('not_ready', 'Server is shutting down');
    const session = new Session(this, transport, transportAuth, principal, peer);
    this.sessions.add(session);
    // The liveness sweep runs only while there are sessions, so an idle router holds no timer.
    this.heartbeat ??= setInterval(() => this.sweep(), Math.min(this.options.heartbeatIntervalMs, MAX_TIMER_MS));
    this.logger.debug('session.open', { sessionId: session.id, transport: transport.kind });
    if (this.sessionListeners.size > 0) this.emitSession({ type: 'open', session });
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
    if (session.client) this.removeClient(session.client, `client session ended: ${reason}`);
    this.failPending(session, undefined, `client session ended: ${reason}`);
    if (this.sessions.size === 0) {
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = undefined;
      if (this.sweeping) clearImmediate(this.sweeping);
      this.sweeping = undefined;
      // No session, so no pending call: let go of the time-out timers kept for reuse.
      this.deadlines.clear();
    }
    this.logger.debug('session.end', { sessionId: session.id, reason });
    if (this.sessionListeners.size > 0) this.emitSession({ type: 'end', session, reason });
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
   * Ping every session and close the silent ones, {@link SWEEP_BATCH} per turn of the event loop:
   * thousands of sessions gone silent together must not hold every other request meanwhile.
   */
  private sweep(): void {
    // A sweep still under way (a huge number of sessions) is not started again.
    if (this.sweeping) return;
    const sessions = [...this.sessions];
    const now = Date.now();
    let next = 0;
    const step = (): void => {
      this.sweeping = undefined;
      const end = Math.min(next + SWEEP_BATCH, sessions.length);
      for (; next < end; next++) {
        const session = sessions[next] as Session;
        if (session.closed) continue;
        if (now - session.lastSeen >= this.options.heartbeatTimeoutMs) {
          this.logger.info('session.expired', { sessionId: session.id, clientId: session.clientId });
          this.closeSession(session, SESSION_CLOSE.expired);
        } else if (session.transport.wantsPing !== false) {
          this.deliver(session, { type: 'ping', timestamp: now });
        }
      }
      if (next < sessions.length && !this.closing) this.sweeping = setImmediate(step);
    };
    step();
  }

  // ------------------------------------------------------------------------------------------
  // Messages

  handleMessage(session: Session, message: ClientToServerMessage): void {
    if (session.closed) throw new MdpError('transport_error', 'Session is closed');
    session.lastSeen = Date.now();
    switch (message.type) {
      case 'callClientResult': {
        const call = this.pending.get(message.requestId);
        // A result for an unknown call, or from a session the call was not sent to, settles nothing.
        const mine = call !== undefined && call.session === session ? call : undefined;
        // An answer to one of its pending calls shows the client reads and answers. One to an id
        // that waits for nothing shows nothing: a peer that reads nothing can send it.
        if (mine !== undefined || session.takeLate(message.requestId, Date.now())) {
          session.unansweredCalls = 0;
          session.answers++;
        }
        this.settle(session, message, mine);
        return;
      }
      case 'registerClient':
        this.register(session, message.client, message.auth);
        return;
      case 'updateClientCatalog':
        this.updateCatalog(session, message.clientId, message.paths);
        return;
      case 'unregisterClient':
        if (session.client && session.client.id === message.clientId) {
          this.removeClient(session.client, 'client unregistered');
        }
        return;
      case 'ping':
        this.deliver(session, { type: 'pong', timestamp: message.timestamp ?? Date.now() });
        return;
      case 'pong':
        return;
    }
  }

  /**
   * Measure a catalog, refused (`bad_request`, nothing changes) when it is over a limit of its own:
   * a path's shape, its number of paths, a text or schema in it, or its bytes (`too_large`).
   * `head`: the client descriptor, or the bytes of the one it keeps (`updateClientCatalog`).
   */
  private measure(paths: readonly PathDescriptor[], head: ClientDescriptor | number): CatalogSize {
    const problem = catalogProblem(paths, this.options);
    if (problem) throw new MdpError('bad_request', problem);
    const size = measureCatalog(paths, head, this.options);
    if ('problem' in size) throw new MdpError('bad_request', size.problem, { refusal: 'too_large' });
    return size;
  }

  /**
   * Refuse a measured catalog (`counted`) that would take the paths or bytes of all catalogs past
   * their limit (`leaving`: the catalogs it replaces), or a change over the session's rate.
   * Changes nothing but the session's rate.
   */
  private admitCatalog(session: Session, counted: Counted, leaving: readonly (Counted | undefined)[]): void {
    const full = this.totals.fullProblem(counted.paths, counted.bytes, leaving);
    if (full) {
      const { paths, bytes } = this.totals;
      this.logger.warn('catalog.server_full', { sessionId: session.id, totalPaths: paths, totalBytes: bytes, adding: counted.paths, addingBytes: counted.bytes });
      throw new MdpError('not_ready', full);
    }
    const perMinute = this.options.catalogUpdatesPerMinute;
    const now = Date.now();
    const wait = takeToken((session.catalogBucket ??= fullBucket(perMinute, now)), now, perMinute);
    if (wait > 0) {
      throw new MdpError('bad_request', `Catalog changes over the limit of ${perMinute} per minute; retry in ${wait} ms`, {
        refusal: 'rate_limited',
        retryAfterMs: wait,
      });
    }
  }

  /**
   * Refuse a new client from `address` when it holds `maxClientsPerAddress` already, not counting
   * `leaving` (the clients the registration replaces).
   */
  private checkAddress(session: Session, address: string | undefined, leaving: readonly (Counted | undefined)[]): void {
    const problem = this.totals.addressProblem(address, leaving);
    if (problem === undefined) return;
    this.logger.info('client.address_full', { sessionId: session.id, address, held: this.totals.clientsOf(address as string) });
    throw new MdpError('bad_request', problem, { refusal: 'too_many_clients' });
  }

  private register(session: Session, descriptor: ClientDescriptor, auth: AuthContext | undefined): void {
    const holder = this.clients.get(descriptor.id);
    // An id belongs to whoever registered it first (here, or on the member that mirrors it here):
    // under an auth policy the credential's principal, without one the page's origin; a session
    // without a principal (a local program, no policy) replaces any, as SPEC §4 says (ownership.ts).
    const refusal = registrationRefusal({
      descriptor,
      registrant: session,
      holder: holder && holder.session !== session ? holder.session : undefined,
      mirrors: this.mirrorOwners(descriptor.id, session),
      isServerId: this.isServerId,
    });
    if (refusal !== undefined) {
      this.logger.info('client.takeover_refused', { clientId: descriptor.id, holderSessionId: holder?.session.id, sessionId: session.id, reason: refusal });
      throw new MdpError('bad_request', refusal, { refusal: 'client_id_taken' });
    }
    const previous = session.client;
    const replacedHolder = holder && holder !== previous ? holder : undefined;
    // The catalog's own limits first, then its address's (only a new client adds to it), then the
    // server's totals and the session's rate.
    const size = this.measure(descriptor.paths, descriptor);
    const address = countedAddress(session);
    const counted: Counted = { paths: descriptor.paths.length, bytes: size.bytes, address };
    const leaving = [previous?.counted, replacedHolder?.counted];
    if (previous === undefined) this.checkAddress(session, address, leaving);
    this.admitCatalog(session, counted, leaving);
    if (previous && previous.id !== descriptor.id) this.removeClient(previous, 'replaced by another registration on its session');
    if (holder && holder.session !== session) {
      this.logger.info('client.replaced', { clientId: descriptor.id, oldSessionId: holder.session.id, sessionId: session.id });
      this.closeSession(holder.session, SESSION_CLOSE.replaced);
    }
    session.messageAuth = auth;
    const existing = session.client;
    if (existing && existing.id === descriptor.id) {
      // The same client, so the same address: only its catalog changes.
      const same: Counted = { ...counted, address: existing.counted.address };
      this.totals.replace(existing.counted, same);
      existing.counted = same;
      existing.headBytes = size.headBytes;
      existing.descriptor = descriptor;
      existing.index = new PathIndex(descriptor.paths);
      this.trackMirror(existing);
      this.emit({ type: 'updated', client: this.info(existing) });
      return;
    }
    const record: ClientRecord = {
      id: descriptor.id,
      descriptor,
      index: new PathIndex(descriptor.paths),
      session,
      registeredAt: Date.now(),
      counted,
      headBytes: size.headBytes,
      mirrorOf: undefined,
    };
    session.client = record;
    this.clients.set(record.id, record);
    this.totals.add(counted);
    this.trackMirror(record);
    this.logger.debug('client.registered', {
      clientId: record.id,
      sessionId: session.id,
      transport: session.transport.kind,
      authSource: authSourceOf(session),
      paths: descriptor.paths.length,
    });
    this.emit({ type: 'registered', client: this.info(record) });
    if (!this.evictLaterOwner(record)) this.noteShadows(record);
  }

  /** The principals of the trusted mirrors of `id` on sessions other than `session`. */
  private *mirrorOwners(id: string, session: Session): Iterable<MirrorOwner> {
    const mirrors = this.mirrors.get(id);
    if (!mirrors) return;
    for (const mirror of mirrors) if (mirror.session !== session) yield mirror.session;
  }

  /**
   * A trusted mirror `record` of `x` just registered: when its client registered `x` first under
   * another principal than the bare holder of `x` here (owner-first, ownership.ts), that holder loses
   * the id (4403), as it would have been refused had the mirror come first. Returns whether it did.
   */
  private evictLaterOwner(record: ClientRecord): boolean {
    if (record.mirrorOf === undefined) return false;
    const bare = this.clients.get(record.mirrorOf);
    if (bare === undefined || bare.session === record.session) return false;
    const since = trustedMirror(record.descriptor, record.session)?.registeredAt ?? record.registeredAt;
    const outranks = mirrorOutranks(
      { principal: bare.session.principal, registeredAt: bare.registeredAt },
      { principal: record.session.principal, registeredAt: since },
    );
    if (!outranks) return false;
    this.logger.warn('client.owner_returned', { clientId: bare.id, sessionId: bare.session.id, mirrorId: record.id, member: record.session.peer });
    this.closeSession(bare.session, SESSION_CLOSE.heldByAnother);
    return true;
  }

  private updateCatalog(session: Session, clientId: string, paths: PathDescriptor[]): void {
    const record = session.client;
    if (!record || record.id !== clientId) {
      throw new MdpError('bad_request', `Client ${JSON.stringify(clientId)} is not registered on this session`);
    }
    const size = this.measure(paths, record.headBytes);
    const counted: Counted = { paths: paths.length, bytes: size.bytes, address: record.counted.address };
    this.admitCatalog(session, counted, [record.counted]);
    this.totals.replace(record.counted, counted);
    record.counted = counted;
    record.descriptor = { ...record.descriptor, paths };
    record.index = new PathIndex(paths);
    this.logger.debug('client.catalog_updated', { clientId, paths: paths.length });
    this.emit({ type: 'updated', client: this.info(record) });
  }

  /**
   * Log a bare id that shadows a trusted mirror of it, whichever of the two `record` is: both stay,
   * the bare one answers for the id (owner-first, ownership.ts). At warn when they belong to
   * different principals: an agent that meant the mirrored client reaches another's by the bare id.
   */
  private noteShadows(record: ClientRecord): void {
    const bare = record.mirrorOf === undefined ? record : this.clients.get(record.mirrorOf);
    const mirrors = record.mirrorOf === undefined ? this.mirrors.get(record.id) : [record];
    if (bare === undefined || mirrors === undefined) return;
    for (const mirror of mirrors) {
      const otherPrincipal = mirror.session.principal !== bare.session.principal;
      this.logger[otherPrincipal ? 'warn' : 'debug']('client.mirror_shadowed', { clientId: bare.id, mirrorId: mirror.id, member: mirror.session.peer, otherPrincipal });
    }
  }

  /** Index `record` by the id it mirrors when it is a trusted mirror (and only then). */
  private trackMirror(record: ClientRecord): void {
    const mirrored = trustedMirror(record.descriptor, record.session)?.clientId;
    if (mirrored === record.mirrorOf) return;
    this.untrackMirror(record);
    record.mirrorOf = mirrored;
    if (mirrored === undefined) return;
    let set = this.mirrors.get(mirrored);
    if (!set) this.mirrors.set(mirrored, (set = new Set()));
    set.add(record);
  }

  private untrackMirror(record: ClientRecord): void {
    if (record.mirrorOf === undefined) return;
    const set = this.mirrors.get(record.mirrorOf);
    set?.delete(record);
    if (set?.size === 0) this.mirrors.delete(record.mirrorOf);
    record.mirrorOf = undefined;
  }

  private removeClient(record: ClientRecord, reason: string): void {
    if (this.clients.get(record.id) === record) {
      this.clients.delete(record.id);
      this.totals.remove(record.counted);
    }
    this.untrackMirror(record);
    if (record.session.client === record) record.session.client = undefined;
    this.failPending(record.session, record.id, reason);
    this.logger.debug('client.unregistered', { clientId: record.id, reason });
    this.emit({ type: 'unregistered', clientId: record.id });
  }

  // ------------------------------------------------------------------------------------------
  // Invocations

  /** Resolve (clientId, method, path) to a target; `undefined` when nothing matches or `path` is not a valid concrete path. */
  findTarget(clientId: string, method: EndpointMethod, path: string): ResolvedTarget | undefined {
    if (concretePathProblem(path) !== undefined) return undefined;
    return this.clients.get(clientId)?.index.resolve(method, path);
  }

  /**
   * The skill a skill route names on `clientId` (SPEC §8: the name itself when it is a skill
   * path, then `<name>/skill.md`, `<name>/SKILL.md`, `<name>.skill.md`), or `undefined`.
   */
  findSkillRead(clientId: string, name: string): ResolvedTarget | undefined {
    return this.clients.get(clientId)?.index.resolveSkillRead(name);
  }

  /** Resolve and invoke; a target that does not resolve ends as `not_found`. */
  invoke(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions = {}): Promise<InvokeOutcome> {
    const target = this.findTarget(clientId, method, path);
    if (!target) {
      const outcome: InvokeOutcome = {
        ok: false,
        source: 'server',
        error: { code: 'not_found', message: `No ${method} ${path} on client ${JSON.stringify(clientId)}` },
      };
      if (this.onCallEnd) this.observe(clientId, method, path, options, outcome, 0);
      return Promise.resolve(outcome);
    }
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
  dispatch(
    clientId: string,
    target: ResolvedTarget,
    options: InvokeOptions,
    done: (outcome: InvokeOutcome) => void,
  ): CallHandle | undefined {
    // Timed only when observed: without an observer a call allocates nothing for it.
    if (this.onCallEnd) done = this.timed(clientId, target, options, done);
    const record = this.clients.get(clientId);
    if (options.signal?.aborted) {
      done(CALLER_GONE);
      return undefined;
    }
    if (this.drained) {
      done({ ok: false, source: 'server', error: { code: 'not_ready', message: 'Server is shutting down' } });
      return undefined;
    }
    if (!record) {
      done({
        ok: false,
        source: 'server',
        error: { code: 'not_found', message: `Client ${JSON.stringify(clientId)} is not connected` },
      });
      return undefined;
    }
    const limit = this.options.maxPendingCalls;
    if (record.session.pendingCount >= limit) {
      // Refused before anything is queued or sent: a client that stopped answering holds at most
      // `limit` calls, whatever the readers do.
      done(busy(`Client ${JSON.stringify(clientId)} has ${limit} calls waiting for an answer; try again later`));
      return undefined;
    }
    const requestId = randomUuid();
    const message: CallClientMessage = {
      type: 'callClient',
      requestId,
      clientId,
      method: target.method,
      path: target.path,
      params: target.params,
      query: options.query,
      body: options.body,
      headers: options.headers,
      auth: options.auth,
      kind: target.kind,
      name: target.path,
      args: { params: target.params, query: options.query, body: options.body, headers: options.headers },
    };
    const session = record.session;
    const call = new PendingCall(requestId, session, clientId, options.timeoutMs ?? this.options.invocationTimeoutMs, done);
    this.deadlines.add(call.timeoutMs, call);
    this.pending.set(requestId, call);
    call.sessionPrev = session.lastCall;
    if (session.lastCall) session.lastCall.sessionNext = call;
    session.lastCall = call;
    session.pendingCount++;
    const { signal } = options;
    if (signal) {
      const onAbort = (): void => this.finish(call, CALLER_GONE);
      signal.addEventListener('abort', onAbort, { once: true });
      call.unwatch = () => signal.removeEventListener('abort', onAbort);
    }
    this.deliver(session, message, call);
    // A transport may fail the call while delivering it (or a client answer at once, in tests).
    return call.ended ? undefined : call;
  }

  /**
   * The caller of a call went away (its HTTP request was aborted): the call ends at once with
   * `transport_error` and is not delivered later (a queued HTTP loop message of it is dropped).
   * Idempotent; a call that already ended is left alone.
   */
  cancel(call: CallHandle): void {
    if (call instanceof PendingCall) this.finish(call, CALLER_GONE);
  }

  /** `done`, then the call-end observer with the call's duration (the caller's answer goes first). */
  private timed(clientId: string, target: ResolvedTarget, options: InvokeOptions, done: (outcome: InvokeOutcome) => void): (outcome: InvokeOutcome) => void {
    const startedAt = performance.now();
    return (outcome) => {
      const durationMs = performance.now() - startedAt;
      try {
        done(outcome);
      } finally {
        this.observe(clientId, target.method, target.path, options, outcome, durationMs);
      }
    };
  }

  private observe(clientId: string, method: EndpointMethod, path: string, options: InvokeOptions, outcome: InvokeOutcome, durationMs: number): void {
    try {
      this.onCallEnd?.({ route: options.route ?? 'host', clientId, method, path, caller: options.caller ?? options.auth, outcome, durationMs });
    } catch (error) {
      // An observer must not keep the caller from its answer.
      this.logger.error('call.observer_failed', { clientId, path, error });
    }
  }

  /**
   * Hand a message to a transport. Transports must not throw; if one does anyway, the call it
   * carried fails at once instead of waiting for its time-out, and the sweep goes on.
   */
  private deliver(session: Session, message: ServerToClientMessage, call?: PendingCall): void {
    try {
      session.transport.send(message);
    } catch (error) {
      this.logger.error('session.send_failed', { sessionId: session.id, type: message.type, error });
      if (call) this.finish(call, { ok: false, source: 'server', error: { code: 'transport_error', message: 'Could not deliver the call' } });
    }
  }

  /** Apply `message` to `call`, the pending call of `session` it answers; without one it is ignored. */
  private settle(session: Session, message: CallClientResultMessage, call: PendingCall | undefined): void {
    if (call === undefined) {
      this.logger.debug('result.ignored', { requestId: message.requestId, sessionId: session.id });
      return;
    }
    if (message.ok) {
      this.finish(call, { ok: true, data: message.data });
    } else {
      this.finish(call, {
        ok: false,
        source: 'client',
        error: message.error ?? { code: 'handler_error', message: 'Client reported a failure without details' },
      });
    }
  }

  /** See {@link Session.refuseCall}. */
  refuseCall(session: Session, requestId: string, reason: string): void {
    const call = this.pending.get(requestId);
    if (!call || call.session !== session) return;
    this.logger.debug('call.refused_busy', { requestId, sessionId: session.id, clientId: call.clientId });
    this.finish(call, busy(reason), false);
  }

  /** `unanswered`: the outcome counts towards the session's `unansweredCalls` when it is a server-side failure. */
  private finish(call: PendingCall, outcome: InvokeOutcome, unanswered = true): void {
    if (this.pending.get(call.requestId) !== call) return;
    this.pending.delete(call.requestId);
    if (this.drained && this.pending.size === 0) queueMicrotask(() => this.settleDrain());
    call.ended = true;
    const { session, sessionPrev, sessionNext } = call;
    if (sessionPrev) sessionPrev.sessionNext = sessionNext;
    if (sessionNext) sessionNext.sessionPrev = sessionPrev;
    else session.lastCall = sessionPrev;
    call.sessionPrev = call.sessionNext = undefined;
    session.pendingCount--;
    if (unanswered && !outcome.ok && outcome.source === 'server') {
      session.unansweredCalls++;
      if (!session.closed) session.noteUnanswered(call.requestId, Date.now());
    }
    this.deadlines.remove(call);
    if (call.unwatch) {
      call.unwatch();
      call.unwatch = undefined;
    }
    try {
      call.done(outcome);
    } catch (error) {
      // A caller's callback must not break the router (a result would be left half-applied).
      this.logger.error('call.callback_failed', { requestId: call.requestId, error });
    }
  }

  /** Fail the pending calls of `session` (only those to `clientId`, when given). */
  private failPending(session: Session, clientId: string | undefined, reason: string): void {
    const calls: PendingCall[] = [];
    for (let call = session.lastCall; call; call = call.sessionPrev) {
      if (clientId === undefined || call.clientId === clientId) calls.push(call);
    }
    // Oldest first, as they were made; finish() unlinks each one.
    for (let i = calls.length - 1; i >= 0; i--) {
      this.finish(calls[i] as PendingCall, { ok: false, source: 'server', error: { code: 'transport_error', message: reason } });
    }
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Whether the call with this request id still waits for its client's answer. */
  isPending(requestId: string): boolean {
    return this.pending.has(requestId);
  }

  // ------------------------------------------------------------------------------------------
  // Listings and events

  hasClient(clientId: string): boolean {
    return this.clients.has(clientId);
  }

  getClient(clientId: string): ClientInfo | undefined {
    const record = this.clients.get(clientId);
    return record && this.info(record);
  }

  listClients(): ClientInfo[] {
    return [...this.clients.values()].map((record) => this.info(record));
  }

  get clientCount(): number {
    return this.clients.size;
  }

  /** Bytes of JSON in every registered catalog together, as `maxTotalCatalogBytes` counts them. */
  get catalogBytes(): number {
    return this.totals.bytes;
  }

  private info(record: ClientRecord): ClientInfo {
    return {
      id: record.id,
      descriptor: record.descriptor,
      paths: record.descriptor.paths,
      sessionId: record.session.id,
      transportKind: record.session.transport.kind,
      authSource: authSourceOf(record.session),
      registeredAt: record.registeredAt,
      lastSeen: record.session.lastSeen,
      secure: record.session.transport.secure === true,
      principal: record.session.principal,
      origin: record.session.transport.origin,
    };
  }

  /** Subscribe to client registrations, catalog updates and removals. Returns the unsubscribe. */
  onClientEvent(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(event: ClientEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.error('client_event.listener_failed', { error });
      }
    }
  }

  /**
   * Subscribe to sessions opening and ending (whoever ends them: the transport, a replacement, the
   * liveness sweep, shutdown). Returns the unsubscribe. What a listener throws is logged.
   */
  onSessionEvent(listener: SessionListener): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  private emitSession(event: SessionEvent): void {
    for (const listener of [...this.sessionListeners]) {
      try {
        listener(event);
      } catch (error) {
        this.logger.error('session_event.listener_failed', { error });
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // Lifecycle

  /**
   * Graceful shutdown, first half: from now on a new call fails at once with `not_ready`, and the
   * calls in flight go on; resolves once none is pending (at once when none is). `close()` ends what
   * is left. Idempotent.
   */
  drain(): Promise<void> {
    this.drained ??= [];
    const waiting = this.drained;
    return new Promise((resolve) => {
      waiting.push(resolve);
      if (this.pending.size === 0) this.settleDrain();
    });
  }

  private settleDrain(): void {
    if (!this.drained || this.pending.size > 0) return;
    for (const resolve of this.drained.splice(0)) resolve();
  }

  /** Close every session (pending calls fail) and stop the liveness timer. Idempotent. */
  async close(): Promise<void> {
    this.drained ??= [];
    this.closing = true;
    for (const session of [...this.sessions]) this.closeSession(session, SESSION_CLOSE.shutdown);
    if (this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
    if (this.sweeping) clearImmediate(this.sweeping);
    this.sweeping = undefined;
    // Every call ended with its session; nothing should be left, but never leave a timer behind.
    this.deadlines.clear();
    this.settleDrain();
  }
}
