/**
 * How much of a websocket message a peer has sent so far, read from the bytes as they arrive (RFC
 * 6455 §5.2) rather than from the websocket library's private state: the frame headers are parsed
 * as they pass and the payloads skipped, so the in-flight budget (inflight.ts) can count a frame
 * that is still arriving. Per chunk it costs a few steps per frame; nothing is copied.
 *
 *   byte 0: FIN · RSV1-3 · opcode        byte 1: MASK · length 0–125 (126: 2 more bytes, 127: 8)
 *   [extended length] [mask key: 4 bytes when MASK] payload
 *
 * Held for the message in progress: the payloads of its finished fragments (the library keeps
 * them until the last one) and the frame arriving now, header included. Control frames (ping,
 * pong, close) may come between fragments; they hold bytes only while they arrive. After a close
 * frame nothing more is read (the library ignores it too). Assumes no extension changes payload
 * sizes: the server offers no permessage-deflate.
 */

const FIRST = 0;
const SECOND = 1;
const LENGTH = 2;
const MASK_KEY = 3;
const PAYLOAD = 4;
/** A close frame came: what follows is not read. */
const CLOSED = 5;

// Bits of `kind`, the frame in progress.
const FIN = 1;
const CONTROL = 2;
const CLOSE = 4;
const MASKED = 8;

export class FrameProgress {
  private step = FIRST;
  private kind = 0;
  /** Bytes still to come of the extended length or the mask key. */
  private headerLeft = 0;
  private payloadLength = 0;
  private payloadLeft = 0;
  /** Bytes of the frame in progress so far, header and payload. */
  private frameBytes = 0;
  /** Payload bytes of the finished fragments of the message in progress. */
  private fragments = 0;
  /**
   * Chunks holding part of the message in progress (the library keeps each chunk a frame spans until
   * the frame is complete, and a fragment may keep a view of one), counted until the message ends.
   */
  chunks = 0;

  /** Bytes held for the message in progress now (0 between messages). */
  get held(): number {
    return this.fragments + this.frameBytes;
  }

  /** Read the next bytes the peer sent; returns {@link held} after them. */
  feed(chunk: Uint8Array): number {
    const n = chunk.length;
    let i = 0;
    /** A message ended in this chunk: older chunks are free, this one may hold the next. */
    let ended = false;
    for (;;) {
      if (this.step === PAYLOAD) {
        const take = Math.min(this.payloadLeft, n - i);
        i += take;
        this.frameBytes += take;
        this.payloadLeft -= take;
        if (this.payloadLeft > 0) break;
        // The frame is complete.
        const kind = this.kind;
        this.frameBytes = 0;
        this.step = FIRST;
        if ((kind & CLOSE) !== 0) {
          this.step = CLOSED;
          this.fragments = 0;
          ended = true;
          break;
        }
        if ((kind & CONTROL) === 0) {
          if ((kind & FIN) !== 0) {
            this.fragments = 0;
            ended = true;
          } else {
            this.fragments += this.payloadLength;
          }
        }
        continue;
      }
      if (i >= n || this.step === CLOSED) break;
      const byte = chunk[i++] as number;
      this.frameBytes++;
      switch (this.step) {
        case FIRST: {
          const opcode = byte & 0x0f;
          this.kind = ((byte & 0x80) !== 0 ? FIN : 0) | (opcode >= 8 ? CONTROL : 0) | (opcode === 8 ? CLOSE : 0);
          this.step = SECOND;
          break;
        }
        case SECOND: {
          if ((byte & 0x80) !== 0) this.kind |= MASKED;
          const length = byte & 0x7f;
          if (length < 126) {
            this.payloadLength = length;
            this.afterLength();
          } else {
            this.payloadLength = 0;
            this.headerLeft = length === 126 ? 2 : 8;
            this.step = LENGTH;
          }
          break;
        }
        case LENGTH:
          // Past 2^53 this loses precision; the library refuses such a frame anyway (and any over its maxPayload).
          this.payloadLength = this.payloadLength * 256 + byte;
          if (--this.headerLeft === 0) this.afterLength();
          break;
        case MASK_KEY:
          if (--this.headerLeft === 0) this.startPayload();
          break;
      }
    }
    const held = this.fragments + this.frameBytes;
    this.chunks = held === 0 ? 0 : ended ? 1 : this.chunks + 1;
    return held;
  }

  private afterLength(): void {
    if ((this.kind & MASKED) !== 0) {
      this.headerLeft = 4;
      this.step = MASK_KEY;
    } else {
      this.startPayload();
    }
  }

  private startPayload(): void {
    this.payloadLeft = this.payloadLength;
    this.step = PAYLOAD;
  }
}
