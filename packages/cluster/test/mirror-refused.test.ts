/**
 * A hub that opens a mirror's websocket and closes it at once (a refusal: 4401 without a
 * credential, 4403) is dialled again with a growing wait, not every `reconnectMinMs` for ever; a
 * link the hub has spoken on counts as working, and its loss starts the waits from the shortest.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { Router, type TimerSet } from '@mdp/core';
import { descriptor, manualClock, recordingLogger } from '@mdp/test-kit';
import { Mirror } from '../src/mirror.js';

const hubs: WebSocketServer[] = [];

afterEach(async () => {
  for (const hub of hubs.splice(0)) {
    for (const ws of hub.clients) ws.terminate();
    await new Promise((resolve) => hub.close(resolve));
  }
});

/** A hub on loopback that does `onLink` with each mirror socket it accepts. */
async function hub(onLink: (ws: WebSocket) => void): Promise<string> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  hubs.push(wss);
  wss.on('connection', onLink);
  await new Promise((resolve) => wss.once('listening', resolve));
  return `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
}

/** Timers the test runs by hand: each wait asked for, and the callback of the latest. */
function recordingTimers() {
  const waits: number[] = [];
  let due: (() => void) | undefined;
  const timers = {
    after(ms: number, callback: () => void) {
      waits.push(ms);
      due = callback;
      return () => undefined;
    },
  } as unknown as TimerSet;
  return { timers, waits, fire: () => due?.() };
}

function mirrorOf(wsUrl: string, timers: TimerSet) {
  const { logger, next } = recordingLogger();
  const clock = manualClock();
  const router = new Router();
  const mirror = new Mirror(
    {
      router,
      serverId: 'edge:1',
      wsUrl,
      upstreamServerId: 'hub:1',
      clock,
      timers,
      logger,
      random: () => 0.5, // no jitter: the waits are the back-off itself
      reconnectMinMs: 100,
      reconnectMaxMs: 1000,
      connectTimeoutMs: 2000,
      maxPayloadBytes: 1 << 20,
    },
    { id: 'app', descriptor: descriptor('app'), principal: undefined, registeredAt: 0 } as never,
  );
  return { mirror, next, router };
}

describe('a mirror refused by its hub', () => {
  it('waits longer after each refusal, up to the largest wait', async () => {
    const url = await hub((ws) => ws.close(4401, 'Unauthorized'));
    const { timers, waits, fire } = recordingTimers();
    const { mirror, next, router } = mirrorOf(url, timers);
    mirror.start();
    for (let i = 0; i < 5; i++) {
      await next('proxy.mirror_dropped', { code: 4401 });
      fire();
    }
    await next('proxy.mirror_dropped', { code: 4401 });
    mirror.stop();
    await router.close();
    expect(waits).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('starts from the shortest wait again once the hub has spoken on a link', async () => {
    let refuse = true;
    const url = await hub((ws) => {
      if (refuse) return ws.close(4401, 'Unauthorized');
      // A working hub pings its peers; the link then drops (the hub restarts).
      ws.send(JSON.stringify({ type: 'ping', timestamp: 1 }));
      ws.once('message', () => ws.close(1001, 'Going away'));
    });
    const { timers, waits, fire } = recordingTimers();
    const { mirror, next, router } = mirrorOf(url, timers);
    mirror.start();
    await next('proxy.mirror_dropped', { code: 4401 });
    fire();
    await next('proxy.mirror_dropped', { code: 4401 });
    refuse = false;
    fire();
    await next('proxy.mirror_dropped', { code: 1001 });
    mirror.stop();
    await router.close();
    expect(waits).toEqual([100, 200, 100]);
  });
});
