/**
 * A connection as core sees it: the contract a transport fulfils (`SessionTransport`), the
 * `Session` core hands back for it, and the calls waiting for its answers (`PendingCall`).
 */
import { CLOSE_CODES, type AuthContext, type ClientToServerMessage, type ServerToClientMessage } from '@mdp/protocol';
import type { CallHandle, InvokeOutcome } from './call-table.js';
import type { RateBucket } from './catalog-limits.js';
import type { ClientRecord } from './client-registry.js';
import type { Clock } from './clock.js';
import type { Deadline } from './deadlines.js';
import type { Logger } from './logger.js';
import type { Scopes } from './scopes.js';
import { randomUuid } from './uuid.js';

/**
 * What a transport hands to core for one connection. Core never knows whether it is a websocket,
 * an HTTP loop queue or a proxy link.
 */
export interface SessionTransport {
  /** Short name for logs and listings: `ws`, `http-loop`, `proxy`… */
  readonly kind: string;
  /** Deliver one message. Must not throw; a dead transport drops it (its session is closing). */
  send(message: ServerToClientMessage): void;
  /** Close the connection because core decided so (replaced, expired, shutdown). */
  close(code: number, reason: string): void;
  /** Whether core should send heartbeat pings on this transport (default true). */
  readonly wantsPing?: boolean;
  /** The connection is encrypted (TLS); listings report it. Default false. */
  readonly secure?: boolean;
  /**
   * The `Origin` of the web page that opened the connection (its upgrade or HTTP-loop connect);
   * `undefined` for programs that send none. Without an auth policy it is who holds the ids the
   * session registers (ownership.ts), and a page of that origin may read their skills.
   */
  readonly origin?: string;
  /**
   * The peer's remote address (`socket.remoteAddress`), if known: its clients count against the
   * router's `maxClientsPerAddress`. Leave it out for in-process sessions (not counted).
   */
  readonly remoteAddress?: string | undefined;
}

/** Why core closed a session, with the websocket close status each maps to. */
export const SESSION_CLOSE = {
  replaced: { code: CLOSE_CODES.replaced, reason: 'Replaced by newer client session' },
  /** A cluster member's client registered the id first, under another principal (ownership.ts). */
  heldByAnother: { code: CLOSE_CODES.clientIdTaken, reason: 'Client id held by another principal' },
  expired: { code: CLOSE_CODES.heartbeatTimeout, reason: 'Heartbeat timeout' },
  shutdown: { code: CLOSE_CODES.goingAway, reason: 'Server shutting down' },
} as const;

/**
 * A websocket close reason that fits in a control frame: 123 bytes of UTF-8 (RFC 6455 §5.5). A
 * longer one is cut to 120 bytes of whole characters and `...`, for every websocket edge.
 */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= 123) return text;
  let cut = text.slice(0, 120);
  // Drop whole characters: a high surrogate left without its pair would be sent as U+FFFD.
  while (Buffer.byteLength(cut) > 120 || /[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}...`;
}

export type AuthSource = 'none' | 'message' | 'transport' | 'transport+message';

/** Read-only view of a session for transports and listings. */
export interface SessionInfo {
  readonly id: string;
  readonly transportKind: string;
  readonly clientId: string | undefined;
  readonly lastSeen: number;
  readonly transportAuth: AuthContext | undefined;
  readonly messageAuth: AuthContext | undefined;
  readonly closed: boolean;
  /** Calls that ended without this session's answer since it last answered a pending one. */
  readonly unansweredCalls: number;
}

export function authSourceOf(session: Pick<SessionInfo, 'transportAuth' | 'messageAuth'>): AuthSource {
  if (session.transportAuth) return session.messageAuth ? 'transport+message' : 'transport';
  return session.messageAuth ? 'message' : 'none';
}

/** How long after a call ended unanswered its answer still shows that the client reads, ms. */
export const LATE_ANSWER_MS = 60_000;
/** How many such calls a session remembers. */
const LATE_ANSWERS_KEPT = 64;

/** What a session asks of the router that opened it. */
export interface SessionOwner {
  handleMessage(session: Session, message: ClientToServerMessage): void;
  endSession(session: Session, reason: string): void;
  refuseCall(session: Session, requestId: string, reason: string): void;
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
  /** Last message (or poll), ms since the epoch: what listings report. */
  lastSeen: number;
  /** The same moment on the monotonic clock (`clock.now()`): what liveness measures silence by. */
  heardAt: number;
  transportAuth: AuthContext | undefined;
  messageAuth: AuthContext | undefined;
  closed = false;
  /** Catalog changes this session may still make (made on its first one). */
  catalogBucket: RateBucket | undefined;
  /**
   * The scopes of the credential that opened the session (or, on the HTTP loop, sent its latest
   * message), set by its transport under an auth policy; `undefined` for every scope (scopes.ts).
   */
  scopes: Scopes = undefined;
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
    private readonly owner: SessionOwner,
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
    readonly peer: string | undefined,
    private readonly clock: Clock,
  ) {
    this.transportAuth = transportAuth;
    this.lastSeen = clock.wallNow();
    this.heardAt = clock.now();
  }

  get transportKind(): string {
    return this.transport.kind;
  }

  get clientId(): string | undefined {
    return this.client?.id;
  }

  /** Handle one parsed client message. Throws MdpError(bad_request) when it cannot be applied. */
  handle(message: ClientToServerMessage): void {
    this.owner.handleMessage(this, message);
  }

  /** Record activity; when `transportAuth` is given it replaces the stored one. */
  touch(transportAuth?: AuthContext | null): void {
    this.lastSeen = this.clock.wallNow();
    this.heardAt = this.clock.now();
    if (transportAuth !== undefined) this.transportAuth = transportAuth ?? undefined;
  }

  /**
   * The transport's connection ended: unregister and end pending calls, which fail with `reason`.
   * Idempotent.
   */
  end(reason = 'connection closed'): void {
    this.owner.endSession(this, reason);
  }

  /**
   * The transport declines a call it was just handed, because its peer is behind (more bytes wait
   * for it than the transport's cap) but still reading: the call fails at once with `not_ready`
   * and a retry hint, and is never sent. It does not count as unanswered: the peer never had it.
   * A request id that is not one of this session's pending calls is ignored.
   */
  refuseCall(requestId: string, reason: string): void {
    this.owner.refuseCall(this, requestId, reason);
  }

  /**
   * Note that the call `requestId` sent to this session ended unanswered at `now` (ms, the clock's
   * `now()`): an answer to it within {@link LATE_ANSWER_MS} still shows that the session reads.
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

/**
 * Hand a message to a session's transport. Transports must not throw; if one does anyway it is
 * logged and `false` returned (a call it carried then fails at once instead of timing out).
 */
export function deliver(session: Session, message: ServerToClientMessage, logger: Logger): boolean {
  try {
    session.transport.send(message);
    return true;
  } catch (error) {
    logger.error('session.send_failed', { sessionId: session.id, type: message.type, error });
    return false;
  }
}

/**
 * The remote address a client of `session` counts against (`maxClientsPerAddress`): none for a
 * session without one (in-process) or a proven mirror link of a cluster member, whose clients
 * were counted on their own server.
 */
export function countedAddress(session: Session): string | undefined {
  return session.peer === undefined ? session.transport.remoteAddress : undefined;
}
