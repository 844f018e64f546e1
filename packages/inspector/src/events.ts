/**
 * The inspector's push channel: a server-sent event stream of the client list. Each stream gets
 * the list when it opens, then again after clients come, change or go (changes within
 * `coalesceMs` are sent once). The host is watched only while a stream is open; one keep-alive
 * timer serves every stream.
 *
 *   open ─▶ "clients" ─▶ host.onChange ─(coalesceMs)─▶ "clients" to every stream ─▶ …
 *                          keep-alive comment every keepAliveMs ─┘     close() ends every stream
 */
import type { ServerResponse } from 'node:http';
import type { HostApi, Logger } from '@mdp/core';

export interface EventStreamsOptions {
  /** Changes within this long are sent as one event, ms. */
  readonly coalesceMs: number;
  /** A comment is written this often so proxies keep an idle stream open, ms. */
  readonly keepAliveMs: number;
  readonly logger: Logger;
}

const HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  // Proxies that buffer responses would hold the events back.
  'x-accel-buffering': 'no',
} as const;

export class EventStreams {
  private readonly open = new Set<ServerResponse>();
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
  add(response: ServerResponse): void {
    if (this.closed) {
      response.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"code":"not_ready","message":"Server is shutting down"}}');
      return;
    }
    response.writeHead(200, HEADERS);
    response.flushHeaders();
    this.open.add(response);
    response.once('close', () => this.remove(response));
    this.unsubscribe ??= this.host.onChange(() => this.schedule());
    this.keepAlive ??= setInterval(() => this.writeAll(': keep-alive\n\n'), this.options.keepAliveMs);
    void this.sendList([response]);
  }

  /** End every stream and stop watching. Idempotent. */
  close(): void {
    this.closed = true;
    for (const response of [...this.open]) response.end();
    this.open.clear();
    this.stop();
  }

  private remove(response: ServerResponse): void {
    this.open.delete(response);
    if (this.open.size === 0) this.stop();
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.pending) clearTimeout(this.pending);
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.pending = this.keepAlive = undefined;
  }

  private schedule(): void {
    this.pending ??= setTimeout(() => {
      this.pending = undefined;
      void this.sendList([...this.open]);
    }, this.options.coalesceMs);
  }

  private async sendList(targets: readonly ServerResponse[]): Promise<void> {
    try {
      const list = await this.host.listClients();
      const event = `event: clients\ndata: ${JSON.stringify(list)}\n\n`;
      for (const response of targets) if (this.open.has(response)) response.write(event);
    } catch (error) {
      this.options.logger.error('inspector.list_failed', { error });
    }
  }

  private writeAll(text: string): void {
    for (const response of this.open) response.write(text);
  }
}
