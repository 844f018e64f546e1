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
 *
 * Under tenancy by principal each stream names its reader (`viewer`): the streams of one viewer
 * form a group that lists the host as that viewer sees it, hears only the changes it sees, and is
 * sent a list only when it differs from the one it was sent last.
 */
import type { ServerResponse } from 'node:http';
import { viewedBy, type HostApi, type Logger, type Viewer } from '@mdp/core';

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
  readonly group: Group;
}

/** The streams of one viewer (all of them, without tenancy), and the list they were sent last. */
interface Group {
  readonly key: string | symbol;
  /** The host as the viewer sees it. */
  readonly host: HostApi;
  readonly viewed: boolean;
  readonly streams: Set<EventSink>;
  /** The last list event, written to a stream that was behind once it drains. */
  latest: string | undefined;
  /** Changes came since the last list. */
  dirty: boolean;
  unsubscribe: () => void;
}

/** Group keys: the host itself, and a viewer without a principal. */
const ALL = Symbol('all');
const NOBODY = Symbol('nobody');

function refuse(response: EventSink, body: string): void {
  response.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
}

export class EventStreams {
  private readonly open = new Map<EventSink, Stream>();
  private readonly groups = new Map<string | symbol, Group>();
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

  /** Turn `response` into a stream of what `viewer` sees (default: everything); it ends when the client goes or on close(). */
  add(response: EventSink, viewer?: Viewer): void {
    if (this.closed) return refuse(response, '{"error":{"code":"not_ready","message":"Server is shutting down"}}');
    if (this.open.size >= this.options.maxStreams) {
      this.options.logger.warn('inspector.too_many_streams', { maxStreams: this.options.maxStreams });
      return refuse(
        response,
        JSON.stringify({ error: { code: 'not_ready', message: `Too many inspector event streams (${this.options.maxStreams}); close one and try again` } }),
      );
    }
    response.writeHead(200, HEADERS);
    response.flushHeaders();
    const group = this.groupOf(viewer);
    group.streams.add(response);
    this.open.set(response, { writing: false, behind: false, group });
    response.once('close', () => this.remove(response));
    this.keepAlive ??= setInterval(() => this.keepAll(), this.options.keepAliveMs);
    void this.sendList(group, [response], false);
  }

  private groupOf(viewer: Viewer | undefined): Group {
    const key = viewer === undefined ? ALL : (viewer.principal ?? NOBODY);
    let group = this.groups.get(key);
    if (!group) {
      const made: Group = {
        key,
        host: viewedBy(this.host, viewer),
        viewed: viewer !== undefined,
        streams: new Set(),
        latest: undefined,
        dirty: false,
        unsubscribe: () => undefined,
      };
      made.unsubscribe = this.host.onChange(() => {
        made.dirty = true;
        this.schedule();
      }, viewer);
      this.groups.set(key, made);
      group = made;
    }
    return group;
  }

  /** End every stream and stop watching. Idempotent. */
  close(): void {
    this.closed = true;
    for (const response of [...this.open.keys()]) response.end();
    this.open.clear();
    this.stop();
  }

  private remove(response: EventSink): void {
    const stream = this.open.get(response);
    if (!stream) return;
    this.open.delete(response);
    const { group } = stream;
    group.streams.delete(response);
    if (group.streams.size === 0) {
      group.unsubscribe();
      this.groups.delete(group.key);
    }
    if (this.open.size === 0) this.stop();
  }

  private stop(): void {
    for (const group of this.groups.values()) group.unsubscribe();
    this.groups.clear();
    if (this.pending) clearTimeout(this.pending);
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.pending = this.keepAlive = undefined;
  }

  private schedule(): void {
    this.pending ??= setTimeout(() => {
      this.pending = undefined;
      for (const group of this.groups.values()) {
        if (!group.dirty) continue;
        group.dirty = false;
        // A viewer's host may tell of changes it does not see (a cluster follower's): send only news.
        void this.sendList(group, [...group.streams], group.viewed);
      }
    }, this.options.coalesceMs);
  }

  private async sendList(group: Group, targets: readonly EventSink[], onlyNews: boolean): Promise<void> {
    let event: string;
    try {
      const page = await group.host.listClients({ limit: this.options.pageLimit }, { maxBytes: this.options.pageBytes });
      event = `event: clients\ndata: ${JSON.stringify(page)}\n\n`;
    } catch (error) {
      this.options.logger.error('inspector.list_failed', { error });
      return;
    }
    if (group.streams.size === 0 || (onlyNews && event === group.latest)) return;
    group.latest = event;
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
      const latest = stream.group.latest;
      if (!stream.behind || !this.open.has(response) || latest === undefined) return;
      stream.behind = false;
      this.write(response, stream, latest);
    });
  }

  private keepAll(): void {
    // A stream whose last write is still unsent is not idle: it needs no comment to stay open.
    for (const [response, stream] of this.open) if (!stream.writing) this.write(response, stream, KEEP_ALIVE);
  }
}
