/**
 * Issue 18, finding 1: a websocket client that stops reading while ~1,000 skill reads per second
 * go to it (each reader gives up after 200 ms) grew the server without bound, was never closed, and
 * got every stale call when it resumed. Now: closed with 1013 once its waiting bytes pass the cap,
 * its pending calls fail at once with a clear error, memory stays bounded, another client is served
 * meanwhile. Figures are the child server's own (stress variant: bench/tools/hardening-stress.mjs).
 */
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { stopAll } from '@mdp/test-kit';
import { MB, startChild, stopChildren } from './child.js';
import { read, wsClientWithSkill, type ReadResult } from './clients.js';

afterEach(async () => {
  await stopAll();
  await stopChildren();
});

// Each call carries the reader's headers: 8 KB of them make each callClient about 8.5 KB.
const PAD = { 'x-pad': 'p'.repeat(8 * 1024) };

describe('a websocket client that stops reading', () => {
  it('is closed with 1013, its calls fail at once, and the server stays small', { timeout: 30_000 }, async () => {
    const server = await startChild(['--max-ws-buffered-bytes', String(MB)]);
    const slow = await wsClientWithSkill(server.ws, 'slow');
    const healthy = await wsClientWithSkill(server.ws, 'healthy', 'fine');
    const before = await server.memory(true);
    slow.tcp.pause();

    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const results: Array<ReadResult | 'aborted'> = [];
    let healthyRead: ReadResult | 'aborted' | undefined;
    let refused: ReadResult | undefined;
    for (let wave = 0; wave < 60 && !refused; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 64 }, () => read(server.http, '/skills/slow/s', { headers: PAD, abortAfterMs: 200, agent })),
      );
      results.push(...answers);
      refused = answers.find((a): a is ReadResult => a !== 'aborted' && (a.status === 502 || a.status === 404));
      healthyRead ??= await read(server.http, '/skills/healthy/s');
    }
    agent.destroy();

    // Refused, with a reason a reader can act on, long before the flood ended.
    expect(refused).toBeDefined();
    expect(results.length).toBeLessThan(60 * 64);
    const failed = results.find((a): a is ReadResult => a !== 'aborted' && a.status === 502);
    expect(failed && JSON.parse(failed.body)).toMatchObject({
      error: { code: 'transport_error', message: expect.stringContaining('Client is not reading') },
    });
    expect(healthyRead).toMatchObject({ status: 200, body: 'fine' });

    // Bounded: what the server holds after the flood is a few MB at most, not the flood.
    const after = await server.memory(true);
    expect(after.heapUsed + after.external - (before.heapUsed + before.external)).toBeLessThan(16 * MB);
    expect(after.maxRss).toBeLessThan(400 * MB);

    // The client reads again: the close frame (1013) comes right behind what was already written,
    // and no call reaches it afterwards.
    slow.tcp.resume();
    const closed = await slow.closed;
    expect(closed.code).toBe(1013);
    expect(closed.reason).toMatch(/^Client is not reading/);
    expect(slow.calls.length).toBeLessThan(results.length);
    expect((await read(server.http, '/skills/slow/s')) as ReadResult).toMatchObject({ status: 404 });
    expect((await read(server.http, '/skills/healthy/s')) as ReadResult).toMatchObject({ status: 200 });
    healthy.socket.terminate();
  });
});
