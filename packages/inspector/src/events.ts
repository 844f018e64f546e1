/**
 * The inspector's push channel: a server-sent event stream of the client list's first page. Each
 * stream gets it when it opens, then again after clients come, change or go (changes within
 * `coalesceMs` are sent once). The host is watched only while a stream is open; one keep-alive
 * timer serves every stream.
 *
 *   open ─▶ "clients" ─▶ host.onChange ─(coalesceMs)─▶ "clients" to every stream ─▶ …
 *                          keep-alive comment every keepAliveMs ─┘     close() ends every stream
 *
 * An event is one page of the host's listing (SPEC §12.6): `{clients, nextCursor?}`, at most
 * `pageLimit` clients and `pageBytes` of JSON (a client larger than that alone comes alone), so a
 * huge catalog never makes one huge event, nor stops the feed. The page reads the rest, when it
 * wants it, from `GET /mdp/clients?cursor=`.
 *
 * Every event replaces the one before, so a reader that is behind needs only the latest one: while a
 * stream's last write is not yet flushed to its socket it is written nothing more, and gets the
 * latest list once that write is flushed. A stream holding more than `maxBufferedBytes` unsent when
 * a new list comes (a reader that stopped reading) is ended. At most `maxStreams` are open at once.
 */
import type { ServerResponse } from 'node:http';
import type { HostApi, Logger } from '@mdp/core';

export interface EventStreamsOptions {
  /** Changes within this long are sent as one event, ms. */
  readonly coalesceMs: number;
  /** A comment is written this often so proxies keep an idle stream open, ms. */
  readonly keepAliveMs: number;
  /** Streams open at once; one more is refused with 503. */
  readonly maxStreams: number;
  /** A stream with more unsent bytes than this when a new list comes is ended. */
  readonly maxBufferedBytes: number;
  /** Clients in one event (the first page of the listing). */
  readonly pageLimit: number;
  /** Bytes of JSON of one event's page. */
  readonly pageBytes: number;
  readonly logger: Logger;
}

/** What a stream needs of node's response (a fake in tests). */
export type EventSink = Pick<ServerResponse, 'writeHead' | 'flushHeaders' | 'write' | 'end' | 'destroy' | 'once' | 'writableLength'>;

const HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  // Proxies that buffer responses would hold the events back.
  'x-accel-buffering': 'no',
} as const;

const KEEP_ALIVE = ': keep-alive\n\n';

/** One open stream. */
interface Stream {
  /** A write is not yet flushed to the socket. */
  writing: boolean;
  /** The latest list waits for that write to be flushed. */
  behind: boolean;
}

function refuse(response: EventSink, body: string): void {
  response.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
}

export class EventStreams {
  private readonly open = new Map<EventSink, Stream>();
  /** The last list event, written to a stream that was behind once it drains. */
  private latest: string | undefined;
  private unsubscribe: (() => void) | undefined;
  private pending: NodeJS.Timeout | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly host: HostApi,
    private readonly options: EventStreamsOptions,
  ) {}

  /** Streams open now. */
  get size(): number {
    return this.open.size;
  }

  /** Timers held (0 once no stream is open, and after close). */
  get timers(): number {
    return (this.pending ? 1 : 0) + (this.keepAlive ? 1 : 0);
  }

  /** Turn `response` into a stream; it ends when the client goes or on close(). */
  add(response: EventSink): void {
    if (this.closed) return refuse(response, '{"error":{"code":"not_ready","message":"Server is shutting down"}}');
    if (this.open.size >= this.options.maxStreams) {
      this.options.logger.warn('inspector.too_many_streams', { maxStreams: this.options.maxStreams });
      return refuse(response, JSON.stringify({ error: { code: 'not_ready', message: `Too many inspector event streams (${this.options.maxStreams}); close one and try again` } }));
    }
    response.writeHead(200, HEADERS);
    response.flushHeaders();
    this.open.set(response, { writing: false, behind: false });
    response.once('close', () => this.remove(response));
    this.unsubscribe ??= this.host.onChange(() => this.schedule());
    this.keepAlive ??= setInterval(() => this.keepAll(), this.options.keepAliveMs);
    void this.sendList([response]);
  }

  /** End every stream and stop watching. Idempotent. */
  close(): void {
    this.closed = true;
    for (const response of [...this.open.keys()]) response.end();
    this.open.clear();
    this.stop();
  }

  private remove(response: EventSink): void {
    if (!this.open.delete(response)) return;
    if (this.open.size === 0) this.stop();
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.pending) clearTimeout(this.pending);
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.pending = this.keepAlive = undefined;
    this.latest = undefined;
  }

  private schedule(): void {
    this.pending ??= setTimeout(() => {
      this.pending = undefined;
      void this.sendList([...this.open.keys()]);
    }, this.options.coalesceMs);
  }

  private async sendList(targets: readonly EventSink[]): Promise<void> {
    let event: string;
    try {
      const page = await this.host.listClients({ limit: this.options.pageLimit }, { maxBytes: this.options.pageBytes });
      event = `event: clients\ndata: ${JSON.stringify(page)}\n\n`;
    } catch (error) {
      this.options.logger.error('inspector.list_failed', { error });
      return;
    }
    if (this.open.size === 0) return;
    this.latest = event;
    for (const response of targets) this.send(response, event);
  }

  /** Write the list now, or (the reader is behind) once the last write is flushed; end a stream that stopped reading. */
  private send(response: EventSink, event: string): void {
    const stream = this.open.get(response);
    if (!stream) return;
    const unsent = response.writableLength;
    if (unsent > this.options.maxBufferedBytes) {
      this.options.logger.info('inspector.stream_dropped', { unsentBytes: unsent, maxBufferedBytes: this.options.maxBufferedBytes });
      this.remove(response);
      response.destroy();
    } else if (stream.writing) {
      stream.behind = true;
    } else {
      this.write(response, stream, event);
    }
  }

  private write(response: EventSink, stream: Stream, text: string): void {
    stream.writing = true;
    response.write(text, () => {
      stream.writing = false;
      if (!stream.behind || !this.open.has(response) || this.latest === undefined) return;
      stream.behind = false;
      this.write(response, stream, this.latest);
    });
  }

  private keepAll(): void {
    // A stream whose last write is still unsent is not idle: it needs no comment to stay open.
    for (const [response, stream] of this.open) if (!stream.writing) this.write(response, stream, KEEP_ALIVE);
  }
}
