/**
 * The event streams against slow readers, on fake responses that flush only when told: a reader
 * that is behind gets the latest list once it catches up (never a queue of lists), one that stopped
 * reading is ended, and the number of streams is capped.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Router, createLocalHost, createTenancy, silentLogger, type Tenancy } from '@mdp/core';
import { fakeClient, settle } from '@mdp/test-kit';
import type { ListClientsResult } from '@mdp/protocol';
import { EventStreams, type EventSink } from '../src/events.js';

/** A response whose writes stay unsent until `flush()`. */
class SlowSink extends EventEmitter {
  status = 0;
  readonly written: string[] = [];
  ended = false;
  destroyed = false;
  private unsent: Array<{ text: string; done: () => void }> = [];

  get writableLength(): number {
    return this.unsent.reduce((sum, chunk) => sum + Buffer.byteLength(chunk.text), 0);
  }

  writeHead(status: number): this {
    this.status = status;
    return this;
  }

  flushHeaders(): void {}

  write(text: string, done?: () => void): boolean {
    this.written.push(text);
    this.unsent.push({ text, done: done ?? (() => undefined) });
    return true;
  }

  /** The reader takes everything written so far. */
  flush(): void {
    const chunks = this.unsent;
    this.unsent = [];
    for (const chunk of chunks) chunk.done();
  }

  end(): this {
    this.ended = true;
    this.emit('close');
    return this;
  }

  destroy(): this {
    this.destroyed = true;
    this.emit('close');
    return this;
  }

  /** The client names in each list event written. */
  lists(): string[][] {
    return this.written
      .filter((text) => text.startsWith('event: clients'))
      .map((text) => (JSON.parse(text.slice(text.indexOf('data: ') + 6)) as { clients: Array<{ id: string }> }).clients.map((c) => c.id));
  }
}

const sink = (): SlowSink & EventSink => new SlowSink() as SlowSink & EventSink;

let router: Router;
let streams: EventStreams;

function start(options: { maxStreams?: number; maxBufferedBytes?: number; pageLimit?: number; pageBytes?: number; tenancy?: Tenancy } = {}): void {
  streams = new EventStreams(createLocalHost(router, options.tenancy ? { tenancy: options.tenancy } : {}), {
    coalesceMs: 10,
    keepAliveMs: 1000,
    maxStreams: options.maxStreams ?? 8,
    maxBufferedBytes: options.maxBufferedBytes ?? 1_000_000,
    pageLimit: options.pageLimit ?? 100,
    pageBytes: options.pageBytes ?? 256 * 1024,
    logger: silentLogger,
  });
}

function register(id: string): void {
  fakeClient(router, { id, name: id, paths: [] });
}

/**
 * Fake time for the streams' timers; the listing's own turns of the event loop (`@mdp/core`
 * listing.ts) stay real, and `tick` lets them run.
 */
async function tick(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
  await settle(3);
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  router = new Router();
});

afterEach(async () => {
  streams.close();
  expect(streams.timers).toBe(0);
  await router.close();
  vi.useRealTimers();
});

describe('EventStreams and a large catalog', () => {
  it('sends the first page of the listing, bounded, with the cursor to read the rest, and goes on sending', async () => {
    start({ pageBytes: 64 * 1024 });
    // 400 clients of 15 kB each (the description cap is 16 KiB): 6 MB of catalog, far more than one event should carry.
    const description = 'd'.repeat(15_000);
    for (let i = 0; i < 400; i++) fakeClient(router, { id: `c${String(i).padStart(3, '0')}`, name: `C${i}`, description, paths: [] });
    const reader = sink();
    streams.add(reader);
    await tick(0);
    reader.flush();
    const events = () =>
      reader.written.filter((text) => text.startsWith('event: clients')).map((text) => JSON.parse(text.slice(text.indexOf('data: ') + 6)) as ListClientsResult);
    const [first] = events();
    expect(Buffer.byteLength(reader.written[0] as string)).toBeLessThanOrEqual(64 * 1024 + 64);
    expect(first?.clients.map((c) => c.id).slice(0, 2)).toEqual(['c000', 'c001']);
    expect(first?.nextCursor).toEqual(expect.any(String));
    // The rest, as the page reads it: every client once.
    const host = createLocalHost(router);
    const ids = [...(first?.clients ?? []).map((c) => c.id)];
    for (let cursor = first?.nextCursor; cursor !== undefined; ) {
      const page = await host.listClients({ limit: 100, cursor });
      ids.push(...page.clients.map((c) => c.id));
      cursor = page.nextCursor;
    }
    expect(new Set(ids).size).toBe(400);
    // The feed goes on: a change sends the new first page.
    fakeClient(router, { id: 'a-new-one', name: 'new', paths: [] });
    await tick(10);
    expect(events().at(-1)?.clients[0]?.id).toBe('a-new-one');
  });
});

describe('EventStreams and slow readers', () => {
  it('a reader that is behind gets only the latest list once it catches up', async () => {
    start();
    const slow = sink();
    const quick = sink();
    streams.add(slow);
    streams.add(quick);
    await tick(0);
    quick.flush();
    for (const id of ['a', 'b', 'c']) {
      register(id);
      await tick(10);
      quick.flush();
    }
    // The quick reader got every list; the slow one still holds its first, unsent.
    expect(quick.lists()).toEqual([[], ['a'], ['a', 'b'], ['a', 'b', 'c']]);
    expect(slow.lists()).toEqual([[]]);
    slow.flush();
    // One write of the latest list, not the three it missed.
    expect(slow.lists()).toEqual([[], ['a', 'b', 'c']]);
    slow.flush();
    expect(slow.lists()).toHaveLength(2);
  });

  it('ends a stream that stopped reading once its unsent bytes pass the cap', async () => {
    start({ maxBufferedBytes: 20 });
    const stuck = sink();
    const reading = sink();
    streams.add(stuck);
    streams.add(reading);
    await tick(0);
    reading.flush();
    expect(stuck.writableLength).toBeGreaterThan(20);
    register('a');
    await tick(10);
    expect(stuck.destroyed).toBe(true);
    expect(reading.destroyed).toBe(false);
    expect(streams.size).toBe(1);
    expect(reading.lists()).toEqual([[], ['a']]);
  });

  it('keep-alive comments go only to streams whose last write was sent', async () => {
    start();
    const stuck = sink();
    const idle = sink();
    streams.add(stuck);
    streams.add(idle);
    await tick(0);
    idle.flush();
    await tick(1000);
    expect(idle.written.at(-1)).toBe(': keep-alive\n\n');
    expect(stuck.written).toHaveLength(1);
  });

  it('refuses a stream beyond maxStreams with 503, and takes one again once another ends', async () => {
    start({ maxStreams: 2 });
    const [a, b, c] = [sink(), sink(), sink()];
    streams.add(a);
    streams.add(b);
    streams.add(c);
    expect([a.status, b.status, c.status]).toEqual([200, 200, 503]);
    expect(c.ended).toBe(true);
    expect(streams.size).toBe(2);
    a.destroy();
    const d = sink();
    streams.add(d);
    expect(d.status).toBe(200);
  });
});

describe('EventStreams under tenancy by principal', () => {
  const owned = (id: string, principal: string): void => {
    const session = router.openSession({ kind: 'fake', send: () => undefined, close: () => undefined }, undefined, principal);
    session.handle({ type: 'registerClient', client: { id, name: id, paths: [] } });
  };

  it('lists to each reader the clients it sees, and tells it only of changes to those', async () => {
    start({ tenancy: createTenancy({ mode: 'principal', sharedClients: ['lobby'] }) });
    owned('alice-ide', 'token:a');
    owned('bob-ide', 'token:b');
    owned('lobby', 'token:b');
    const alice = sink();
    const bob = sink();
    const server = sink();
    streams.add(alice, { principal: 'token:a' });
    streams.add(bob, { principal: 'token:b' });
    streams.add(server);
    // Listings are made one per turn of the event loop.
    for (let i = 0; i < 3; i++) await tick(0);
    for (const reader of [alice, bob, server]) reader.flush();
    expect(alice.lists()).toEqual([['alice-ide', 'lobby']]);
    expect(bob.lists()).toEqual([['bob-ide', 'lobby']]);
    expect(server.lists()).toEqual([['alice-ide', 'bob-ide', 'lobby']]);
    owned('bob-cli', 'token:b');
    await tick(10);
    await tick(0);
    for (const reader of [alice, bob, server]) reader.flush();
    expect(alice.lists()).toHaveLength(1);
    expect(bob.lists().at(-1)).toEqual(['bob-cli', 'bob-ide', 'lobby']);
    expect(server.lists()).toHaveLength(2);
    owned('alice-cli', 'token:a');
    await tick(10);
    alice.flush();
    expect(alice.lists().at(-1)).toEqual(['alice-cli', 'alice-ide', 'lobby']);
  });
});
