/**
 * Reproduction from the second adversarial review: what an HTTP loop session remembers of the
 * calls it was handed (kept so that a client working on a call is not taken for gone) must not
 * grow with every call the session ever answered.
 */
import { silentLogger } from '@mdp/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHonoApp } from '../src/hono-adapter.js';
import { LoopSessionRegistry } from '../src/registry.js';
import { createLoopRoutes } from '../src/routes.js';
import { SpyRouter, loopClient, polledMessage } from './helpers.js';

function loopOnRouter() {
  const router = new SpyRouter();
  const registry = new LoopSessionRegistry(router, silentLogger, {
    idleTimeoutMs: 10_000,
    sessionLimits: { total: 10, perAddress: 10 },
    queueLimits: { maxMessages: 100, maxBytes: 1024 * 1024 },
  });
  const routes = createLoopRoutes({
    registry,
    logger: silentLogger,
    longPollTimeoutMs: 1000,
    maxBodyBytes: 64 * 1024,
    extractAuth: () => undefined,
    authorize: undefined,
    principalOf: undefined,
    isClosed: () => false,
  });
  const app = createHonoApp(routes, silentLogger);
  return { router, registry, client: loopClient((path, init) => app.request(path, init)) };
}

let loop: ReturnType<typeof loopOnRouter>;

beforeEach(() => {
  loop = loopOnRouter();
});

afterEach(async () => {
  loop.registry.endAll('test over');
  await loop.router.close();
});

describe('review2: an HTTP loop session that keeps polling', () => {
  it('does not remember every call it has answered', async () => {
    const { router, registry, client } = loop;
    const sessionId = await client.register();
    const calls = 2000;
    for (let i = 0; i < calls; i++) {
      const call = router.invoke('c1', 'GET', '/hello');
      const message = await polledMessage(await client.poll(sessionId, 0));
      expect(message.type).toBe('callClient');
      expect((await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: i })).status).toBe(202);
      expect(await call).toEqual({ ok: true, data: i });
    }
    // Every call was answered; none is pending. A client that polls without pause is never idle
    // long enough for the idle check that prunes this list, so it grew by one request id per call
    // for the life of the session (a long-lived client: megabytes per million calls, and the first
    // idle check then walks all of it).
    expect(registry.get(sessionId)?.handed?.length ?? 0).toBeLessThan(100);
  });
});
