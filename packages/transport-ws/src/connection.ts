/**
 * One websocket connection as core sees it: the session's transport (send, close), the messages
 * held back while its peer falls behind, and its place in the registration deadlines.
 */
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { stringifyServerMessage, type ServerToClientMessage } from '@mdp/protocol';
import { closeReason, type Deadline, type Session, type SessionTransport } from '@mdp/core';
import { HOLD_FROM, HeldMessages } from './outbound.js';

/** What the connections of one transport share. */
export interface ConnectionContext {
  /** Batch writes to `socket` until the end of this event-loop turn. */
  corkUntilFlush(socket: Duplex): void;
  /** The cap on bytes waiting for one peer. */
  readonly maxBufferedBytes: number;
  /** Whether the call with this request id still waits for its answer. */
  readonly isPending: (requestId: string) => boolean;
  /** `connection`'s peer passed the cap with `waiting` bytes: close it. */
  onSlow(connection: WsConnection, waiting: number): void;
}

export class WsConnection implements SessionTransport, Deadline {
  readonly kind = 'ws';
  /** Set right after the session opens. */
  session: Session | undefined = undefined;
  /** True until the first `registerClient` (while the registration deadline runs). */
  awaitingRegistration = false;
  /** Bytes of calls sent since the peer last answered one (the transport resets it on each answer). */
  sentSinceAnswer = 0;
  deadlineAt = 0;
  deadlinePrev: Deadline | undefined = undefined;
  deadlineNext: Deadline | undefined = undefined;
  deadlineList: Deadline['deadlineList'] = undefined;
  private held: HeldMessages | undefined = undefined;
  private drainWatched = false;

  constructor(
    readonly ws: WebSocket,
    readonly socket: Duplex,
    private readonly context: ConnectionContext,
    /** The connection is encrypted (wss); listings report it. */
    readonly secure: boolean,
  ) {}

  send(message: ServerToClientMessage): void {
    const ws = this.ws;
    if (ws.readyState !== WebSocket.OPEN) return;
    const text = stringifyServerMessage(message);
    if (message.type === 'callClient' && this.stalled(text.length)) return;
    if (this.held === undefined && ws.bufferedAmount < HOLD_FROM) {
      // The router counts this call already: more than one pending means a busy client.
      if (message.type === 'callClient' && this.session !== undefined && this.session.pendingCount > 1) this.context.corkUntilFlush(this.socket);
      ws.send(text);
      return;
    }
    this.hold(text, message.type === 'callClient' ? message.requestId : undefined);
  }

  /**
   * Count a call of `bytes` towards what the peer owes; true when it is stalled: more than the cap
   * sent since its last answer while calls sent to it died unanswered meanwhile. The kernel takes
   * megabytes into a loopback socket before anything waits in node, so a peer that stopped reading
   * can be invisible to the socket's own buffer for a long time; the calls it lets die are not.
   * (A client working on large calls lets none die, so it is never taken for a stalled one.)
   */
  private stalled(bytes: number): boolean {
    this.sentSinceAnswer += bytes;
    if (this.sentSinceAnswer <= this.context.maxBufferedBytes || this.session === undefined || this.session.unansweredCalls === 0) return false;
    this.held = undefined;
    this.context.onSlow(this, this.sentSinceAnswer);
    return true;
  }

  close(code: number, reason: string): void {
    this.held = undefined;
    this.ws.close(code, closeReason(reason));
  }

  private hold(text: string, requestId: string | undefined): void {
    if (this.held === undefined) {
      this.held = new HeldMessages(this.ws, this.context.maxBufferedBytes, this.context.isPending);
      if (!this.drainWatched) {
        this.drainWatched = true;
        this.socket.on('drain', () => {
          if (this.held?.drain() === true) this.held = undefined;
        });
      }
    }
    const waiting = this.held.hold(text, requestId);
    if (waiting > 0) {
      this.held = undefined;
      this.context.onSlow(this, waiting);
    }
  }
}
