/** The HTTP loop sessions of one transport, keyed by their core session id. */
import { Admission, type AdmissionLimits, type Logger, type Router, type Session, type SessionTransport } from '@mdp/core';
import type { AuthContext } from '@mdp/protocol';
import { IdleWatch, type IdleClock, type IdleEntry } from './idle.js';
import { Mailbox, pollDeadlines, type MailboxLimits } from './mailbox.js';

export interface LoopSession {
  readonly session: Session;
  readonly mailbox: Mailbox;
  /** Its place in the idle watch (a session with no poll for the idle time-out ends). */
  readonly idle: IdleEntry;
  /** The remote address that connected it, counted against the per-address cap. */
  readonly address: string | undefined;
}

/**
 * Whether the client of `entry` holds a call it was handed and has not answered: its session has
 * more calls waiting for an answer than its queue holds (the others were polled). Nothing is kept
 * per call for this; it is worked out when the idle watch finds the session due.
 */
function holdsCall(entry: LoopSession): boolean {
  const pending = entry.session.pendingCount;
  return pending > 0 && pending > entry.mailbox.queuedCalls();
}

export interface LoopSessionRegistryOptions {
  /** A session with no poll waiting and none started for this long ends, ms. */
  readonly idleTimeoutMs: number;
  /** The idle watch's clock; default the system's. */
  readonly clock?: IdleClock;
  /** Most sessions, in all and from one remote address. */
  readonly sessionLimits: AdmissionLimits;
  /** Bounds of each session's queue: past either the session ends. */
  readonly queueLimits: MailboxLimits;
  /** Told once of each session that leaves (ended, closed by core): a fleet stops holding it. */
  readonly onForget?: ((sessionId: string) => void) | undefined;
}

export class LoopSessionRegistry {
  private readonly entries = new Map<string, LoopSession>();
  private readonly idle: IdleWatch;
  private readonly admission: Admission;
  private readonly queueLimits: MailboxLimits;
  private readonly onForget: ((sessionId: string) => void) | undefined;
  /** The long-poll time-outs of every session's mailbox. */
  private readonly waits = pollDeadlines();

  constructor(
    private readonly router: Router,
    private readonly logger: Logger,
    options: LoopSessionRegistryOptions,
  ) {
    const reason = `no poll for ${options.idleTimeoutMs} ms`;
    this.idle = new IdleWatch(
      options.idleTimeoutMs,
      (id) => {
        const clientId = this.entries.get(id)?.session.clientId;
        // A lifecycle event: the client is gone and its pending calls fail now.
        this.logger.info('session.vanished', { sessionId: id, clientId, reason });
        this.end(id, reason);
      },
      options.clock,
      // A client that was handed a call and has not answered it yet is working on it, not gone.
      (id) => {
        const entry = this.entries.get(id);
        return entry !== undefined && holdsCall(entry);
      },
    );
    this.admission = new Admission(options.sessionLimits, 'HTTP loop sessions');
    this.queueLimits = options.queueLimits;
    this.onForget = options.onForget;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Messages queued for every session, not yet polled. Walks every session: for a scrape. */
  get queuedMessages(): number {
    let total = 0;
    for (const entry of this.entries.values()) total += entry.mailbox.size;
    return total;
  }

  /** Whether the idle watch holds a timer (for tests: none once closed). */
  get idleTimerArmed(): boolean {
    return this.idle.timerArmed;
  }

  get(id: string): LoopSession | undefined {
    return this.entries.get(id);
  }

  /**
   * Open a core session whose messages queue in a mailbox, or return why not (over the session
   * caps). `principal`: who connected (under an auth policy the credential's, without one
   * `originPrincipal(origin)`); `address`: from where; `secure`: connected over TLS; `origin`: the
   * connecting page's `Origin`. Throws MdpError(not_ready) while the router closes.
   */
  open(
    transportAuth: AuthContext | undefined,
    principal: string | undefined,
    address: string | undefined,
    secure = false,
    origin: string | undefined = undefined,
  ): LoopSession | string {
    const refusal = this.admission.admit(address);
    if (refusal !== undefined) {
      this.logger.info('session.refused', { address, reason: refusal });
      return refusal;
    }
    let entry: LoopSession | undefined;
    // A call that ended (timed out, its caller gone) while queued is not delivered: its answer would be ignored.
    const mailbox = new Mailbox(
      (message) => message.type === 'callClient' && !this.router.isPending(message.requestId),
      this.queueLimits,
      (reason) => {
        this.logger.warn('session.queue_overflow', { sessionId: entry?.session.id, reason });
        if (entry) this.end(entry.session.id, reason);
      },
      this.waits,
    );
    const transport: SessionTransport = {
      kind: 'http-loop',
      // Pinged like every session (SPEC §4): the ping reaches the waiting poll and the pong comes
      // back through /send, which keeps a client with long polls alive under short time-outs.
      wantsPing: true,
      secure,
      origin,
      remoteAddress: address,
      send: (message) => {
        const refusal = mailbox.push(message);
        // A call the full queue cannot take fails at once, retry later; the session goes on.
        if (refusal !== undefined && message.type === 'callClient') entry?.session.refuseCall(message.requestId, refusal);
      },
      // Core closed the session (replaced, expired, shutdown): forget it and answer its poll.
      close: (code, reason) => {
        mailbox.close();
        if (entry) this.forget(entry);
        this.logger.debug('session.closed', { sessionId: entry?.session.id, code, reason });
      },
    };
    let session: Session;
    try {
      session = this.router.openSession(transport, transportAuth, principal);
    } catch (error) {
      this.admission.release(address);
      throw error;
    }
    entry = { session, mailbox, idle: this.idle.open(session.id), address };
    this.entries.set(session.id, entry);
    this.logger.debug('session.connected', { sessionId: session.id });
    return entry;
  }

  /** A poll of `entry` starts waiting: the session is not idle. */
  pollStarted(entry: LoopSession): void {
    this.idle.pollStarted(entry.idle);
  }

  /** A poll of `entry` was answered. */
  pollEnded(entry: LoopSession): void {
    this.idle.pollEnded(entry.idle);
  }

  /**
   * The client of `entry` answered a call it was sent (core counted it in `Session.answers`): it is
   * there, whether or not a poll waits (a client that worked on the call without polling is idle
   * from now). Other sends do not count: a client that never polls could send pings or made-up
   * answers for ever.
   */
  answered(entry: LoopSession): void {
    this.idle.touch(entry.idle);
  }

  /**
   * The client disconnected, vanished, its queue overflowed, or the transport shuts down: forget the
   * session, answer its poll, end it in core (its pending calls fail at once with `reason`).
   */
  end(id: string, reason: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.forget(entry);
    entry.mailbox.close();
    entry.session.end(reason);
    this.logger.debug('session.ended', { sessionId: id, reason });
  }

  /** End every session and stop the idle watch and the long-poll timers (no timer is left). */
  endAll(reason: string): void {
    this.idle.close();
    for (const id of [...this.entries.keys()]) this.end(id, reason);
    this.waits.clear();
  }

  /** Drop the entry, its idle watch and its place under the caps. Idempotent. */
  private forget(entry: LoopSession): void {
    if (this.entries.get(entry.session.id) !== entry) return;
    this.entries.delete(entry.session.id);
    this.idle.remove(entry.idle);
    this.admission.release(entry.address);
    if (this.onForget) {
      try {
        this.onForget(entry.session.id);
      } catch (error) {
        this.logger.error('session.forget_failed', { sessionId: entry.session.id, error });
      }
    }
  }
}
