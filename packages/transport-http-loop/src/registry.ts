/** The HTTP loop sessions of one transport, keyed by their core session id. */
import type { Logger, Router, Session, SessionTransport } from '@mdp/core';
import type { AuthContext } from '@mdp/protocol';
import { Mailbox } from './mailbox.js';

export interface LoopSession {
  readonly session: Session;
  readonly mailbox: Mailbox;
}

export class LoopSessionRegistry {
  private readonly entries = new Map<string, LoopSession>();

  constructor(
    private readonly router: Router,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(id: string): LoopSession | undefined {
    return this.entries.get(id);
  }

  /**
   * Open a core session whose messages queue in a mailbox; `secure`: connected over TLS. Throws
   * MdpError(not_ready) while the router closes.
   */
  open(transportAuth: AuthContext | undefined, secure = false): LoopSession {
    // A call that ended (timed out) while queued is not delivered: its answer would be ignored.
    const mailbox = new Mailbox((message) => message.type === 'callClient' && !this.router.isPending(message.requestId));
    let id: string | undefined;
    const transport: SessionTransport = {
      kind: 'http-loop',
      // Pinged like every session (SPEC §4): the ping reaches the waiting poll and the pong comes
      // back through /send, which keeps a client with long polls alive under short time-outs.
      wantsPing: true,
      secure,
      send: (message) => mailbox.push(message),
      // Core closed the session (replaced, expired, shutdown): forget it and answer its poll.
      close: (code, reason) => {
        mailbox.close();
        if (id !== undefined) this.entries.delete(id);
        this.logger.debug('session.closed', { sessionId: id, code, reason });
      },
    };
    const session = this.router.openSession(transport, transportAuth);
    id = session.id;
    const entry: LoopSession = { session, mailbox };
    this.entries.set(id, entry);
    this.logger.debug('session.connected', { sessionId: id });
    return entry;
  }

  /** The client disconnected, or the transport shuts down: forget the session, answer its poll, end it in core (its pending calls fail at once). */
  end(id: string, reason: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    entry.mailbox.close();
    entry.session.end();
    this.logger.debug('session.ended', { sessionId: id, reason });
  }

  endAll(reason: string): void {
    for (const id of [...this.entries.keys()]) this.end(id, reason);
  }
}
