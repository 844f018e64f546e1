/**
 * One websocket connection as core sees it: the session's transport (send, close), the messages
 * held back while its peer falls behind, and its place in the registration deadlines.
 */
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { stringifyServerMessage, type ServerToClientMessage } from '@mdp/protocol';
import { closeReason, type Clock, type Deadline, type InboundFrames, type Session, type SessionTransport } from '@mdp/core';
import { HOLD_FROM, HeldMessages, overCap } from './outbound.js';

/** What the connections of one transport share. */
export interface ConnectionContext {
  /** Batch writes to `socket` until the end of this event-loop turn. */
  corkUntilFlush(socket: Duplex): void;
  /** The cap on bytes waiting for one peer. */
  readonly maxBufferedBytes: number;
  /** How long a peer over the cap may go without reading before it is closed, ms. */
  readonly stallTimeoutMs: number;
  /** The clock of progress and of the stall check. */
  readonly clock: Clock;
  /** Whether the call with this request id still waits for its answer. */
  readonly isPending: (requestId: string) => boolean;
  /** `connection`'s peer is over the cap with `waiting` bytes and has not read for too long: close it. */
  onSlow(connection: WsConnection, waiting: number): void;
  /** `connection`'s peer is over the cap with `waiting` bytes but still reads: refuse this call. */
  onBusy(connection: WsConnection, requestId: string, waiting: number): void;
}

export class WsConnection implements SessionTransport, Deadline {
  readonly kind = 'ws';
  /** Set right after the session opens. */
  session: Session | undefined = undefined;
  /** True until the first `registerClient` (while the registration deadline runs). */
  awaitingRegistration = false;
  /** What its peer has sent of an unfinished message, counted against the in-flight budget. */
  inbound: InboundFrames<WebSocket> | undefined = undefined;
  /** Bytes of calls sent (or held) since the peer last answered one. */
  sentSinceAnswer = 0;
  /** When the peer last showed it reads: it answered one of its pending calls, or a held-up write drained. */
  private lastProgressAt: number;
  deadlineAt = 0;
  deadlinePrev: Deadline | undefined = undefined;
  deadlineNext: Deadline | undefined = undefined;
  deadlineList: Deadline['deadlineList'] = undefined;
  private held: HeldMessages | undefined = undefined;
  private drainWatched = false;
  /** Set while a peer over the cap is watched for its stall time (`watchStall`). */
  private stallTimer: unknown = undefined;
  /** A call to the peer was refused, and it has not caught up since (answered a call, or drained everything held). */
  private behind = false;

  constructor(
    readonly ws: WebSocket,
    readonly socket: Duplex,
    private readonly context: ConnectionContext,
    /** The connection is encrypted (wss); listings report it. */
    readonly secure: boolean,
    /** The `Origin` of the page that opened it; `undefined` for other programs. */
    readonly origin: string | undefined,
    /** The peer's address: its clients count against the router's `maxClientsPerAddress`. */
    readonly remoteAddress: string | undefined,
  ) {
    this.lastProgressAt = context.clock.now();
  }

  /**
   * The peer answered a call it was sent (`Session.answers`): it reads, and owes nothing sent before.
   * (Pongs and answers to made-up ids are not progress: a peer that reads nothing can send them.)
   */
  answered(): void {
    this.lastProgressAt = this.context.clock.now();
    this.sentSinceAnswer = 0;
    this.behind = false;
  }

  send(message: ServerToClientMessage): void {
    const ws = this.ws;
    if (ws.readyState !== WebSocket.OPEN) return;
    const text = stringifyServerMessage(message);
    const requestId = message.type === 'callClient' ? message.requestId : undefined;
    // A call to a peer that owes nothing (no other call pending, nothing held, none refused since it
    // last caught up) starts its stall clock: a peer idle for a while is not taken for one that
    // stopped reading when a burst then finds it over the cap. A peer that is behind keeps its clock
    // however its callers come and go. (The router counts this call already.)
    if (requestId !== undefined && !this.behind && this.held === undefined && this.session !== undefined && this.session.pendingCount <= 1) {
      this.lastProgressAt = this.context.clock.now();
    }
    if (requestId !== undefined && this.stalled(text.length)) {
      this.over(requestId, this.sentSinceAnswer + text.length);
      return;
    }
    if (this.held === undefined && ws.bufferedAmount < HOLD_FROM) {
      // The router counts this call already: more than one pending means a busy client.
      if (requestId !== undefined && this.session !== undefined && this.session.pendingCount > 1) this.context.corkUntilFlush(this.socket);
      ws.send(text);
    } else {
      const held = this.heldMessages();
      const owed = held.owedWith(text.length);
      if (owed > this.context.maxBufferedBytes && !this.over(requestId, owed)) return;
      held.hold(text, requestId);
    }
    if (requestId !== undefined) this.sentSinceAnswer += text.length;
  }

  /**
   * Whether a call of `bytes` takes what the peer owes past the cap though its socket never backed
   * up: more than the cap sent since its last answer while calls sent to it died unanswered
   * meanwhile. The kernel takes megabytes into a loopback socket before anything waits in node, so a
   * peer that stopped reading can be invisible to the socket's own buffer for a long time; the
   * calls it lets die are not. (A client working on large calls lets none die, so it is never taken
   * for a stalled one.)
   */
  private stalled(bytes: number): boolean {
    if (this.sentSinceAnswer + bytes <= this.context.maxBufferedBytes) return false;
    return this.session !== undefined && this.session.unansweredCalls > 0;
  }

  /**
   * A message would take the peer past the cap with `owed` bytes (outbound.ts `overCap`): a call to
   * a peer that still reads is refused, a peer that does not is closed. True when the message (not a
   * call) is to be held anyway.
   */
  private over(requestId: string | undefined, owed: number): boolean {
    const action = overCap(
      requestId !== undefined,
      owed,
      this.context.maxBufferedBytes,
      this.context.clock.now() - this.lastProgressAt,
      this.context.stallTimeoutMs,
    );
    if (action === 'hold') return true;
    if (action === 'refuse') {
      this.context.onBusy(this, requestId as string, owed);
      this.behind = true;
      this.watchStall();
    } else {
      this.slow(owed);
    }
    return false;
  }

  private slow(owed: number): void {
    this.held = undefined;
    this.stopStallWatch();
    this.context.onSlow(this, owed);
  }

  /**
   * A call to the peer was refused: check again once its stall time is up, whether or not anything
   * more is sent to it. A peer that stopped reading and is sent nothing more is closed then too, not
   * at the next ping. One timer, only while a peer is behind.
   */
  private watchStall(): void {
    if (this.stallTimer !== undefined) return;
    const { clock, stallTimeoutMs } = this.context;
    const wait = Math.max(0, this.lastProgressAt + stallTimeoutMs - clock.now());
    this.stallTimer = clock.setTimeout(() => {
      this.stallTimer = undefined;
      if (!this.behind || this.ws.readyState !== WebSocket.OPEN) return;
      if (clock.now() - this.lastProgressAt >= stallTimeoutMs) this.slow(this.owed());
      else this.watchStall();
    }, wait);
  }

  private stopStallWatch(): void {
    if (this.stallTimer === undefined) return;
    this.context.clock.clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }

  /** What the peer owes now: waiting in its socket and held, or sent since its last answer while calls died. */
  private owed(): number {
    const waiting = this.held?.owedWith(0) ?? this.ws.bufferedAmount;
    const unanswered = this.session !== undefined && this.session.unansweredCalls > 0 ? this.sentSinceAnswer : 0;
    return Math.max(waiting, unanswered);
  }

  close(code: number, reason: string): void {
    this.held = undefined;
    this.stopStallWatch();
    this.ws.close(code, closeReason(reason));
  }

  private heldMessages(): HeldMessages {
    if (this.held === undefined) {
      this.held = new HeldMessages(this.ws, this.context.isPending);
      if (!this.drainWatched) {
        this.drainWatched = true;
        this.socket.on('drain', () => {
          this.lastProgressAt = this.context.clock.now();
          if (this.held?.drain() === true) {
            this.held = undefined;
            this.behind = false;
          }
        });
      }
    }
    return this.held;
  }
}
