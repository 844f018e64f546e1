/**
 * The open HTTP connections of one server (those of its second ports too), tracked once for the two
 * things that look at them:
 *
 *   - the stall sweep (http-limits.ts): a connection with bytes waiting to be written that has
 *     written nothing more for the write time-out is closed (its reader does not read);
 *   - shutdown (listener.ts `closeListener`): a connection with no answer being written is cut at
 *     once, the others get a grace.
 *
 * Each connection counts the answers begun on it and not yet done. One that became a websocket is
 * `ws`'s and the transport's from then on: neither looks at it. No timers and no I/O here; the
 * sweep passes the time in (ms).
 */

/** What the tracker reads of a socket. */
export interface TrackedSocket {
  /** Bytes waiting to be written. */
  readonly writableLength: number;
  /** Bytes written so far. */
  readonly bytesWritten: number;
}

interface Connection {
  answering: number;
  upgraded: boolean;
  /** Write progress as the last sweep saw it, while bytes wait. */
  progress: { readonly bytesWritten: number; readonly since: number } | undefined;
}

/** A connection whose answer made no progress for the write time-out. */
export interface Stall<S> {
  readonly socket: S;
  readonly waitingBytes: number;
  readonly stalledMs: number;
}

export class ConnectionTracker<S extends TrackedSocket> {
  private readonly open = new Map<S, Connection>();

  /** Connections open now, websockets included. */
  get size(): number {
    return this.open.size;
  }

  opened(socket: S): void {
    this.open.set(socket, { answering: 0, upgraded: false, progress: undefined });
  }

  closed(socket: S): void {
    this.open.delete(socket);
  }

  /** An answer on `socket` began; the function returned says it is done. */
  answering(socket: S): () => void {
    const connection = this.open.get(socket);
    if (!connection) return () => undefined;
    connection.answering += 1;
    return () => {
      connection.answering -= 1;
    };
  }

  /** `socket` became a websocket. */
  upgraded(socket: S): void {
    const connection = this.open.get(socket);
    if (!connection) return;
    connection.upgraded = true;
    connection.progress = undefined;
  }

  /**
   * One sweep at `now`: the HTTP connections whose waiting bytes have not moved for `writeTimeoutMs`.
   * They are forgotten here (the caller destroys them); the others' progress is noted.
   */
  stalled(now: number, writeTimeoutMs: number): Stall<S>[] {
    const stalls: Stall<S>[] = [];
    for (const [socket, connection] of this.open) {
      if (connection.upgraded) continue;
      if (socket.writableLength === 0) {
        connection.progress = undefined;
        continue;
      }
      const seen = connection.progress;
      if (seen === undefined || seen.bytesWritten !== socket.bytesWritten) {
        connection.progress = { bytesWritten: socket.bytesWritten, since: now };
      } else if (now - seen.since >= writeTimeoutMs) {
        stalls.push({ socket, waitingBytes: socket.writableLength, stalledMs: now - seen.since });
        this.open.delete(socket);
      }
    }
    return stalls;
  }

  /** The HTTP connections writing no answer now: shutdown cuts them at once. */
  idle(): S[] {
    const idle: S[] = [];
    for (const [socket, connection] of this.open) if (!connection.upgraded && connection.answering === 0) idle.push(socket);
    return idle;
  }
}
