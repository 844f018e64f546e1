/**
 * Issue 18, finding 1: a websocket client that stops reading while ~1,000 skill reads per second
 * go to it (each reader gives up after 200 ms) grew the server without bound, was never closed, and
 * got every stale call when it resumed. Now: calls past the cap are refused (503) while it may still
 * be catching up; once it has not read for the stall time it is closed with 1013, its pending calls
 * fail at once with a clear error, and its socket is reset, so the calls the kernel held never reach
 * it. Memory stays bounded, another client is served meanwhile. Figures are the child server's own
 * (stress variant: bench/tools/hardening-stress.mjs).
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
  it('is refused, then closed with 1013 and reset; its calls fail at once, and the server stays small', { timeout: 30_000 }, async () => {
    const server = await startChild(['--max-ws-buffered-bytes', String(MB), '--ws-stall-timeout-ms', '2000']);
    const slow = await wsClientWithSkill(server.ws, 'slow');
    const healthy = await wsClientWithSkill(server.ws, 'healthy', 'fine');
    const before = await server.memory(true);
    slow.tcp.pause();

    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const results: Array<ReadResult | 'aborted'> = [];
    let healthyRead: ReadResult | 'aborted' | undefined;
    let closed: ReadResult | undefined;
    // Until the server gives up on the client (after the stall time) and a reader sees it.
    let gaveUp = false;
    void server.logged('ws.slow_client').then(() => (gaveUp = true));
    while (!(gaveUp && closed)) {
      const answers = await Promise.all(Array.from({ length: 64 }, () => read(server.http, '/skills/slow/s', { headers: PAD, abortAfterMs: 200, agent })));
      results.push(...answers);
      closed = answers.find((a): a is ReadResult => a !== 'aborted' && (a.status === 502 || a.status === 404));
      healthyRead ??= await read(server.http, '/skills/healthy/s');
    }
    agent.destroy();

    // First refused while it might still catch up, with a reason and a time to try again...
    const busy = results.find((a): a is ReadResult => a !== 'aborted' && a.status === 503);
    expect(busy?.headers['retry-after']).toBe('1');
    expect(busy && JSON.parse(busy.body)).toMatchObject({ error: { code: 'not_ready', message: expect.stringMatching(/^Client "slow" is behind: /) } });
    // ...then closed once its stall time was up. Readers still waiting then got 502 with the reason
    // (there may be none: the stall timer can close it while every reader of the moment had given
    // up; transport-ws's own tests hold pending calls across the close).
    for (const failed of results.filter((a): a is ReadResult => a !== 'aborted' && a.status === 502)) {
      expect(JSON.parse(failed.body)).toMatchObject({ error: { code: 'transport_error', message: expect.stringContaining('Client is not reading') } });
    }
    expect(healthyRead).toMatchObject({ status: 200, body: 'fine' });

    // Bounded: what the server holds after the flood is a few MB at most, not the flood.
    const after = await server.memory(true);
    expect(after.heapUsed + after.external - (before.heapUsed + before.external)).toBeLessThan(16 * MB);
    expect(after.maxRss).toBeLessThan(400 * MB);

    // The client reads again, long after the close: its connection was reset, and the calls the
    // kernel held for it are gone with it. (The few it gets were in its own process's read buffer
    // before the pause took hold.)
    await server.logged('ws.slow_client_reset');
    slow.tcp.resume();
    expect((await slow.closed).code).toBe(1006);
    expect(slow.calls.length).toBeLessThan(16);
    expect((await read(server.http, '/skills/slow/s')) as ReadResult).toMatchObject({ status: 404 });
    expect((await read(server.http, '/skills/healthy/s')) as ReadResult).toMatchObject({ status: 200 });
    healthy.socket.terminate();
  });
});
