/** The HTTP loop sessions of one transport, keyed by their core session id. */
import { Admission, type AdmissionLimits, type Logger, type Router, type Session, type SessionTransport } from '@mdp/core';
import type { AuthContext } from '@mdp/protocol';
import { Mailbox, pollDeadlines, type MailboxLimits } from './mailbox.js';

export interface LoopSession {
  readonly session: Session;
  readonly mailbox: Mailbox;
  /** The remote address that connected it, counted against the per-address cap. */
  readonly address: string | undefined;
}

export class LoopSessionRegistry {
  private readonly entries = new Map<string, LoopSession>();
  private readonly admission: Admission;
  /** The long-poll time-outs of every session's mailbox. */
  private readonly waits = pollDeadlines();

  constructor(
    private readonly router: Router,
    private readonly logger: Logger,
    sessionLimits: AdmissionLimits,
    private readonly queueLimits: MailboxLimits,
  ) {
    this.admission = new Admission(sessionLimits, 'HTTP loop sessions');
  }

  get size(): number {
    return this.entries.size;
  }

  get(id: string): LoopSession | undefined {
    return this.entries.get(id);
  }

  /**
   * Open a core session whose messages queue in a mailbox, or return why not (over the session
   * caps). Throws MdpError(not_ready) while the router closes.
   */
  open(transportAuth: AuthContext | undefined, principal: string | undefined, address: string | undefined): LoopSession | string {
    const refusal = this.admission.admit(address);
    if (refusal !== undefined) {
      this.logger.info('session.refused', { address, reason: refusal });
      return refusal;
    }
    let id: string | undefined;
    // A call that ended (timed out, its caller gone) while queued is not delivered: its answer would be ignored.
    const mailbox = new Mailbox(
      (message) => message.type === 'callClient' && !this.router.isPending(message.requestId),
      this.queueLimits,
      (reason) => {
        this.logger.warn('session.queue_overflow', { sessionId: id, reason });
        if (id !== undefined) this.end(id, reason);
      },
      this.waits,
    );
    const transport: SessionTransport = {
      kind: 'http-loop',
      // Pinged like every session (SPEC §4): the ping reaches the waiting poll and the pong comes
      // back through /send, which keeps a client with long polls alive under short time-outs.
      wantsPing: true,
      send: (message) => mailbox.push(message),
      // Core closed the session (replaced, expired, shutdown): forget it and answer its poll.
      close: (code, reason) => {
        mailbox.close();
        if (id !== undefined) this.forget(id);
        this.logger.debug('session.closed', { sessionId: id, code, reason });
      },
    };
    let session: Session;
    try {
      session = this.router.openSession(transport, transportAuth, principal);
    } catch (error) {
      this.admission.release(address);
      throw error;
    }
    id = session.id;
    const entry: LoopSession = { session, mailbox, address };
    this.entries.set(id, entry);
    this.logger.debug('session.connected', { sessionId: id });
    return entry;
  }

  /**
   * The client disconnected, its queue overflowed, or the transport shuts down: forget the session,
   * answer its poll, end it in core (its pending calls fail at once with `reason`).
   */
  end(id: string, reason: string): void {
    const entry = this.forget(id);
    if (!entry) return;
    entry.mailbox.close();
    entry.session.end(reason);
    this.logger.debug('session.ended', { sessionId: id, reason });
  }

  /** End every session and stop the long-poll timers. */
  endAll(reason: string): void {
    for (const id of [...this.entries.keys()]) this.end(id, reason);
    this.waits.clear();
  }

  /** Drop the entry and release its place under the caps; the entry, if there was one. */
  private forget(id: string): LoopSession | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    this.admission.release(entry.address);
    return entry;
  }
}
