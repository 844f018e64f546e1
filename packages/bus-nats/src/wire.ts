/**
 * Request and reply over core NATS with messages larger than the server's `max_payload`: a body
 * over one part goes as several messages on the same subject with the same reply subject, each
 * with a `Mdp-Part: <index>/<count>` header. Messages of one publisher reach a subscriber in the
 * order they were published, so parts arrive in order; the receiver still places them by index.
 *
 *   caller                                  NATS                                   node
 *   request ──part 0/2, part 1/2 (reply=_INBOX_<prefix>.<node>.<token>)──▶ assemble ─▶ handler
 *      ◀──────── part 0/3, part 1/3, part 2/3 (or one message) ───────────────────── answer
 *      ◀──────── 503 status message: nobody subscribes to the subject (no responders)
 *
 * One subscription receives every reply (`<inboxPrefix>.*`); a pending request is one map entry
 * and one timer (and a listener on the caller's signal, when it has one: no AbortController of its
 * own). Requests to a node that leaves fail at once (`abortNode`). Losing the connection fails every
 * pending request at once, and a request made while disconnected fails at once: nats.js would
 * otherwise buffer it until it reconnects.
 *
 * What is published in one turn of the event loop goes out together: messages wait in an outbox
 * until `setImmediate`, after the loop has run every I/O callback that was ready, and are handed to
 * nats.js at once, which writes them to the socket in one write. Under load that is one write for
 * many calls and answers instead of one each (on loopback a write also pays for the receiver's TCP
 * work); a lone message waits for no more than the rest of its turn. The outbox keeps the order of
 * publishing, so parts and a cancel after its call still arrive in order.
 * Assembly on the receiving side is bounded in count, bytes and time (a caller that died after its
 * first part leaves nothing behind for long).
 */
import { headers as natsHeaders, nuid, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { CallSignal, Clock } from '@mdp/core';

export const PART_HEADER = 'Mdp-Part';

/** Bytes of each `max_payload` left for headers (ours are ~20 bytes; NATS counts them in). */
export const HEADER_ALLOWANCE = 1024;

/** Why a request failed below the call protocol. */
export type WireFailure = 'not_connected' | 'no_responders' | 'timeout' | 'too_large' | 'disconnected' | 'aborted' | 'node_gone' | 'closed' | 'malformed';

export class WireError extends Error {
  constructor(
    readonly kind: WireFailure,
    message: string,
  ) {
    super(message);
    this.name = 'WireError';
  }
}

export interface WireLimits {
  /** Largest body (request or answer), bytes. */
  readonly maxBodyBytes: number;
  /** Most requests being assembled from parts at once on the receiving side. */
  readonly maxAssemblies: number;
  /** A request still missing parts after this long is dropped, ms. */
  readonly assemblyTimeoutMs: number;
}

interface Pending {
  readonly parts: Uint8Array[];
  expected: number;
  received: number;
  bytes: number;
  readonly resolve: (body: Uint8Array) => void;
  readonly reject: (error: WireError) => void;
  timer: unknown;
  /** The node the request went to (`abortNode`), when it went to one. */
  readonly node: string | undefined;
  readonly signal: CallSignal | undefined;
  onAbort: (() => void) | undefined;
}

/** A message waiting in the outbox; `token` is the request it belongs to (failed if it cannot go). */
interface Outgoing {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly reply: string | undefined;
  readonly headers: MsgHdrs | undefined;
  readonly token: string | undefined;
}

interface Assembly {
  readonly parts: Uint8Array[];
  received: number;
  bytes: number;
  readonly startedAt: number;
  readonly subject: string;
}

/** A request as the receiving side hands it to its handler. */
export interface Incoming {
  readonly subject: string;
  readonly body: Uint8Array;
  /** Where the answer goes; undefined for a message sent without one (nothing to answer). */
  readonly reply: string | undefined;
}

/** Split `body` into parts of at most `partBytes` (at least one part, empty for an empty body). */
export function splitParts(body: Uint8Array, partBytes: number): Uint8Array[] {
  if (body.length <= partBytes) return [body];
  const parts: Uint8Array[] = [];
  for (let at = 0; at < body.length; at += partBytes) parts.push(body.subarray(at, Math.min(body.length, at + partBytes)));
  return parts;
}

/** `index/count` from a part header, or undefined when absent or malformed. */
export function parsePart(value: string | undefined): { index: number; count: number } | undefined {
  if (!value) return undefined;
  const match = /^(\d{1,6})\/(\d{1,6})$/.exec(value);
  if (!match) return undefined;
  const index = Number(match[1]);
  const count = Number(match[2]);
  return count >= 1 && index < count ? { index, count } : undefined;
}

function concat(parts: readonly Uint8Array[], bytes: number): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export class Wire {
  private readonly pending = new Map<string, Pending>();
  private readonly assemblies = new Map<string, Assembly>();
  private replySub: Subscription | undefined;
  private readonly replyPrefix: string;
  private up = false;
  private closed = false;
  private maxPayload: number;
  private outbox: Outgoing[] = [];
  private flushScheduled = false;
  private readonly flushOutbox = (): void => this.flush();

  constructor(
    private readonly nc: NatsConnection,
    inboxPrefix: string,
    private readonly limits: WireLimits,
    private readonly clock: Clock,
  ) {
    this.replyPrefix = `${inboxPrefix}.r`;
    this.maxPayload = nc.info?.max_payload ?? 1024 * 1024;
  }

  /** Subscribe to replies. Subscriptions survive reconnects (nats.js replays them). */
  start(): void {
    this.up = !this.nc.isClosed();
    this.replySub = this.nc.subscribe(`${this.replyPrefix}.*`, { callback: (_error, msg) => this.onReply(msg) });
  }

  /** The server's `max_payload` as of the last (re)connect, bytes. */
  get serverMaxPayload(): number {
    return this.maxPayload;
  }

  /** Bytes of body in each part. */
  get partBytes(): number {
    return Math.max(1024, this.maxPayload - HEADER_ALLOWANCE);
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  get assemblyCount(): number {
    return this.assemblies.size;
  }

  /** The connection is back: read `max_payload` again (another server of the cluster may differ). */
  connected(): void {
    this.up = true;
    this.maxPayload = this.nc.info?.max_payload ?? this.maxPayload;
  }

  /** The connection is lost: every pending request fails now, and new ones until `connected()`. */
  disconnected(): void {
    this.up = false;
    this.outbox = [];
    this.failAll('disconnected', 'the connection to NATS was lost');
    this.assemblies.clear();
  }

  /**
   * Send `body` to `subject` and wait for the answer. Rejects with a {@link WireError}: `aborted`
   * when `signal` aborts, `node_gone` when `abortNode(node)` is called meanwhile.
   */
  request(subject: string, body: Uint8Array, timeoutMs: number, signal?: CallSignal, node?: string): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new WireError('closed', 'the bus is closed'));
    if (!this.up) return Promise.reject(new WireError('not_connected', 'not connected to NATS'));
    if (body.length > this.limits.maxBodyBytes) {
      return Promise.reject(new WireError('too_large', `request of ${body.length} bytes is over the limit of ${this.limits.maxBodyBytes} bytes`));
    }
    if (signal?.aborted) return Promise.reject(new WireError('aborted', 'the caller went away'));
    const token = nuid.next();
    const reply = `${this.replyPrefix}.${token}`;
    return new Promise<Uint8Array>((resolve, reject) => {
      const entry: Pending = { parts: [], expected: 0, received: 0, bytes: 0, resolve, reject, timer: undefined, node, signal, onAbort: undefined };
      if (signal) {
        entry.onAbort = () => this.finish(token, new WireError('aborted', 'the caller went away'));
        signal.addEventListener('abort', entry.onAbort, { once: true });
      }
      // The caller's own time-out: the answer has this long from the first part's send.
      entry.timer = this.clock.setTimeout(() => this.finish(token, new WireError('timeout', `no answer within ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(token, entry);
      this.publishParts(subject, body, reply, token);
    });
  }

  /**
   * `node` left the fleet: every request sent to it fails now with `node_gone` (undefined: every
   * request sent to any node; those made without a node, to a session, are left alone).
   */
  abortNode(node: string | undefined): void {
    for (const [token, entry] of [...this.pending]) {
      if (entry.node !== undefined && (node === undefined || entry.node === node)) {
        this.finish(token, new WireError('node_gone', `node ${node ?? entry.node} left`));
      }
    }
  }

  /** Publish `body` to `subject` with no answer expected (a cancel notice). Dropped while disconnected. */
  notify(subject: string, body: Uint8Array): void {
    if (!this.up || this.closed || body.length > this.partBytes) return;
    this.enqueue({ subject, data: body, reply: undefined, headers: undefined, token: undefined });
  }

  /** Answer a request (in parts when needed). False when it cannot be sent (the bus is down or closed). */
  respond(reply: string, body: Uint8Array): boolean {
    if (this.closed || !this.up) return false;
    this.publishParts(reply, body, undefined, undefined);
    return true;
  }

  /**
   * Feed a message received on a request subject; returns the whole request once its last part is
   * in (at once for a message in one part), else undefined.
   */
  receive(msg: Msg): Incoming | undefined {
    const part = parsePart(msg.headers?.get(PART_HEADER));
    if (!part || part.count === 1) {
      if (msg.data.length > this.limits.maxBodyBytes) return undefined;
      return { subject: msg.subject, body: msg.data, reply: msg.reply };
    }
    const key = msg.reply;
    if (!key) return undefined;
    const now = this.clock.now();
    let assembly = this.assemblies.get(key);
    if (!assembly) {
      if (part.index !== 0) return undefined;
      if (part.count > Math.ceil(this.limits.maxBodyBytes / 1024) + 1) return undefined;
      this.dropStaleAssemblies(now);
      if (this.assemblies.size >= this.limits.maxAssemblies) return undefined;
      assembly = { parts: new Array<Uint8Array>(part.count), received: 0, bytes: 0, startedAt: now, subject: msg.subject };
      this.assemblies.set(key, assembly);
    }
    if (assembly.parts.length !== part.count || assembly.subject !== msg.subject || assembly.parts[part.index] !== undefined) {
      this.assemblies.delete(key);
      return undefined;
    }
    assembly.bytes += msg.data.length;
    if (assembly.bytes > this.limits.maxBodyBytes) {
      this.assemblies.delete(key);
      return undefined;
    }
    assembly.parts[part.index] = msg.data;
    assembly.received += 1;
    if (assembly.received < part.count) return undefined;
    this.assemblies.delete(key);
    return { subject: msg.subject, body: concat(assembly.parts, assembly.bytes), reply: key };
  }

  /** Fail every pending request and stop. Idempotent. */
  close(): void {
    if (this.closed) return;
    // Answers already given go out before the connection drains.
    this.flush();
    this.closed = true;
    this.failAll('closed', 'the bus is closed');
    this.assemblies.clear();
    try {
      this.replySub?.unsubscribe();
    } catch {
      // Already closed with the connection.
    }
  }

  /** Queue `body` for `subject` (as parts when over one), a request's when `token` is set. */
  private publishParts(subject: string, body: Uint8Array, reply: string | undefined, token: string | undefined): void {
    const parts = splitParts(body, this.partBytes);
    for (let i = 0; i < parts.length; i++) {
      let headers: MsgHdrs | undefined;
      if (parts.length > 1) {
        headers = natsHeaders();
        headers.set(PART_HEADER, `${i}/${parts.length}`);
      }
      this.enqueue({ subject, data: parts[i] as Uint8Array, reply, headers, token });
    }
  }

  private enqueue(message: Outgoing): void {
    this.outbox.push(message);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flushOutbox);
  }

  /**
   * Hand the outbox to nats.js (which writes what it is given in one turn together). A message of a
   * request that already ended (failed, timed out, the connection lost meanwhile) is not sent; one
   * nats.js refuses fails its request with `disconnected`.
   */
  private flush(): void {
    this.flushScheduled = false;
    const messages = this.outbox;
    if (messages.length === 0) return;
    this.outbox = [];
    if (this.closed || !this.up) return;
    for (const message of messages) {
      if (message.token !== undefined && !this.pending.has(message.token)) continue;
      try {
        const options = message.reply === undefined ? { headers: message.headers } : { reply: message.reply, headers: message.headers };
        this.nc.publish(message.subject, message.data, options);
      } catch (error) {
        if (message.token !== undefined) this.finish(message.token, new WireError('disconnected', `could not publish: ${(error as Error).message}`));
      }
    }
  }

  private onReply(msg: Msg): void {
    const token = msg.subject.slice(this.replyPrefix.length + 1);
    const entry = this.pending.get(token);
    if (!entry) return;
    if (msg.headers?.hasError) {
      const code = msg.headers.code;
      this.finish(token, code === 503 ? new WireError('no_responders', 'no node answers on that subject') : new WireError('malformed', `NATS status ${code}`));
      return;
    }
    const part = parsePart(msg.headers?.get(PART_HEADER)) ?? { index: 0, count: 1 };
    if (entry.expected === 0) entry.expected = part.count;
    if (part.count !== entry.expected || entry.parts[part.index] !== undefined) {
      this.finish(token, new WireError('malformed', 'answer parts do not fit together'));
      return;
    }
    entry.parts[part.index] = msg.data;
    entry.received += 1;
    entry.bytes += msg.data.length;
    if (entry.bytes > this.limits.maxBodyBytes) {
      this.finish(token, new WireError('too_large', `answer is over the limit of ${this.limits.maxBodyBytes} bytes`));
      return;
    }
    if (entry.received === entry.expected) this.finish(token, concat(entry.parts, entry.bytes));
  }

  private finish(token: string, outcome: Uint8Array | WireError): void {
    const entry = this.pending.get(token);
    if (!entry) return;
    this.pending.delete(token);
    this.clock.clearTimeout(entry.timer);
    if (entry.onAbort) entry.signal?.removeEventListener('abort', entry.onAbort);
    if (outcome instanceof WireError) entry.reject(outcome);
    else entry.resolve(outcome);
  }

  private failAll(kind: WireFailure, message: string): void {
    for (const token of [...this.pending.keys()]) this.finish(token, new WireError(kind, message));
  }

  private dropStaleAssemblies(now: number): void {
    for (const [key, assembly] of this.assemblies) {
      if (now - assembly.startedAt >= this.limits.assemblyTimeoutMs) this.assemblies.delete(key);
    }
  }
}
