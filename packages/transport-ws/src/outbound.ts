/**
 * Messages held back from a websocket whose peer reads slower than it is sent to. While the peer
 * keeps up, the connection writes straight to the socket; once more than {@link HOLD_FROM} bytes wait
 * in the socket, it holds messages here instead, in order, until the socket drains. A held call
 * whose caller went away meanwhile is dropped, never sent. What waits in the socket plus every byte
 * held since the peer last caught up (nothing held; dropped calls count too: they were meant for
 * this peer, which did not take them) is what the peer owes; a message that would take it past the
 * cap is not held, and {@link overCap} decides what happens instead.
 *
 *   send ─▶ nothing held and socket < HOLD_FROM? ─ yes ─▶ socket
 *                          │ no
 *                          ▼
 *           owed + message > cap? ─ yes ─▶ overCap: refuse the call, or close the peer
 *                          │ no
 *                          ▼
 *           held ─(socket 'drain')─▶ caller still there? ─ yes ─▶ socket
 *                                                        └ no ──▶ dropped
 *
 * Holding back, rather than writing everything to the socket, keeps the close frame close behind:
 * a peer that reads again finds at most about HOLD_FROM bytes (plus what the kernel buffers) before
 * the 1013, not every call made while it stalled. An object exists only for connections that have
 * fallen behind; idle and healthy ones pay nothing.
 */

/** Bytes waiting in the socket above which messages are held back. Above the socket's own 16 KiB high-water mark, so 'drain' is sure to follow. */
export const HOLD_FROM = 64 * 1024;

/** What the held queue needs of a `ws` WebSocket. */
export interface OutboundSocket {
  /** Bytes accepted by `send` not yet handed to the kernel. */
  readonly bufferedAmount: number;
  send(text: string): void;
}

export class HeldMessages {
  /** Held texts and, for calls, their request ids (parallel arrays: no object per message). */
  private texts: string[] = [];
  private requestIds: Array<string | undefined> = [];
  private head = 0;
  /** Bytes held now. */
  private heldBytes = 0;
  /** Bytes held since the peer last caught up (nothing held), dropped ones included. */
  private owed = 0;

  /**
   * @param socket Where messages go once it drains.
   * @param isWanted Whether the call with this request id still waits for its answer.
   */
  constructor(
    private readonly socket: OutboundSocket,
    private readonly isWanted: (requestId: string) => boolean,
  ) {}

  /** Messages held now. */
  get size(): number {
    return this.texts.length - this.head;
  }

  /** Bytes the peer would owe with `bytes` more held: what waits in the socket and what was held since it last caught up. */
  owedWith(bytes: number): number {
    return this.socket.bufferedAmount + this.owed + bytes;
  }

  /** Hold `text` (a call's, when `requestId` is given) behind the others. The caller checked the cap ({@link owedWith}). */
  hold(text: string, requestId: string | undefined): void {
    this.texts.push(text);
    this.requestIds.push(requestId);
    this.heldBytes += text.length;
    this.owed += text.length;
  }

  /** The socket drained: send what is held until it backs up again. True once nothing is held. */
  drain(): boolean {
    const texts = this.texts;
    while (this.head < texts.length && this.socket.bufferedAmount < HOLD_FROM) {
      const text = texts[this.head] as string;
      const requestId = this.requestIds[this.head];
      this.head++;
      this.heldBytes -= text.length;
      if (requestId === undefined || this.isWanted(requestId)) this.socket.send(text);
    }
    if (this.head < texts.length) return false;
    // The peer caught up: it owes nothing any more.
    this.clear();
    return true;
  }

  /** Forget everything held. */
  clear(): void {
    this.texts = [];
    this.requestIds = [];
    this.head = 0;
    this.heldBytes = 0;
    this.owed = 0;
  }
}

/** The rule for a message over the cap, shared with the cluster's links (`@mdp/core`). */
export { overCap, type OverCap } from '@mdp/core';
