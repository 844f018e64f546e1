/**
 * Bodies read under the node's in-flight budget: counted while they arrive, freed once complete or
 * refused, and a body the budget evicts is answered 503 with the limit named. A fake request stream
 * delivers the chunks; no sockets.
 */
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { CHUNK_COST, InflightBudget, readBodyText, readNodeBody } from '../src/index.js';

/** A request whose body the test writes chunk by chunk. */
function request(headers: Record<string, string> = {}): PassThrough & IncomingMessage {
  const stream = new PassThrough() as PassThrough & IncomingMessage;
  (stream as { headers: Record<string, string> }).headers = headers;
  return stream;
}

/** Let the stream deliver what was written. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('readNodeBody under an in-flight budget', () => {
  it('counts a body while it arrives and frees it once complete', async () => {
    const budget = new InflightBudget(1 << 20);
    const req = request();
    const read = readNodeBody(req, 1000, budget);
    req.write('{"a":');
    await turn();
    expect(budget.total).toBe(5 + CHUNK_COST);
    req.write('1}');
    await turn();
    expect(budget.total).toBe(7 + 2 * CHUNK_COST);
    req.end();
    expect(await read).toEqual({ ok: true, text: '{"a":1}' });
    expect(budget.total).toBe(0);
    expect(budget.holders).toBe(0);
  });

  it('frees a body refused as too large, or left unfinished by its client', async () => {
    const budget = new InflightBudget(1 << 20);
    const large = request();
    const tooLarge = readNodeBody(large, 10, budget);
    large.write('12345');
    await turn();
    large.write('678901');
    expect(await tooLarge).toMatchObject({ ok: false, status: 413 });
    expect(budget.total).toBe(0);
    const gone = request();
    const unfinished = readNodeBody(gone, 1000, budget);
    gone.write('{"a"');
    await turn();
    expect(budget.total).toBeGreaterThan(0);
    gone.destroy();
    expect(await unfinished).toMatchObject({ ok: false, status: 400 });
    expect(budget.total).toBe(0);
  });

  it('answers 503 naming the limit for the body whose reading began first, when a newer one needs the room', async () => {
    const budget = new InflightBudget(2 * CHUNK_COST + 1000);
    const [slow, next] = [request(), request()];
    const slowRead = readNodeBody(slow, 10_000, budget);
    const nextRead = readNodeBody(next, 10_000, budget);
    slow.write('x'.repeat(600));
    await turn();
    next.write('y'.repeat(600));
    await turn();
    expect(await slowRead).toEqual({ ok: false, status: 503, error: budget.reason });
    // The one evicted is not counted any more; the newer one goes on and completes.
    expect(budget.holders).toBe(1);
    next.end('}');
    expect(await nextRead).toEqual({ ok: true, text: `${'y'.repeat(600)}}` });
    expect(budget.total).toBe(0);
    // What the evicted one still sends is dropped, never counted.
    slow.write('x'.repeat(600));
    await turn();
    expect(budget.total).toBe(0);
  });

  it('reads as before without a budget', async () => {
    const req = request();
    const read = readNodeBody(req, 1000);
    req.end('{}');
    expect(await read).toEqual({ ok: true, text: '{}' });
  });
});

describe('readBodyText under an in-flight budget', () => {
  /** A Fetch request whose body the test enqueues chunk by chunk. */
  function fetchRequest(): { request: Request; push(text: string): void; end(): void } {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
    const request = new Request('http://127.0.0.1/', { method: 'POST', body, duplex: 'half' } as RequestInit);
    return { request, push: (text) => controller.enqueue(new TextEncoder().encode(text)), end: () => controller.close() };
  }

  it('counts while it arrives, frees once complete', async () => {
    const budget = new InflightBudget(1 << 20);
    const body = fetchRequest();
    const read = readBodyText(body.request, 1000, budget);
    body.push('{"a":');
    await turn();
    expect(budget.total).toBe(5 + CHUNK_COST);
    body.push('1}');
    body.end();
    expect(await read).toEqual({ ok: true, text: '{"a":1}' });
    expect(budget.total).toBe(0);
  });

  it('cancels the body whose reading began first with 503 when a newer one needs the room', async () => {
    const budget = new InflightBudget(2 * CHUNK_COST + 1000);
    const [slow, next] = [fetchRequest(), fetchRequest()];
    const slowRead = readBodyText(slow.request, 10_000, budget);
    const nextRead = readBodyText(next.request, 10_000, budget);
    slow.push('x'.repeat(600));
    await turn();
    next.push('y'.repeat(600));
    await turn();
    expect(await slowRead).toEqual({ ok: false, status: 503, error: budget.reason });
    next.end();
    expect(await nextRead).toEqual({ ok: true, text: 'y'.repeat(600) });
    expect(budget.total).toBe(0);
  });

  it('frees a body refused as too large', async () => {
    const budget = new InflightBudget(1 << 20);
    const body = fetchRequest();
    const read = readBodyText(body.request, 10, budget);
    body.push('12345');
    await turn();
    body.push('678901');
    expect(await read).toMatchObject({ ok: false, status: 413 });
    expect(budget.total).toBe(0);
  });
});
