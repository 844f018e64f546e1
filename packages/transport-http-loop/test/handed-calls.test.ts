/**
 * What an HTTP loop session remembers of the calls it was handed (kept so that a client working on
 * a call is not taken for gone) is bounded by what is pending: it must not grow with every call the
 * session ever answered, nor with every call that timed out in the client's hands.
 */
import { Router, headersToMap, silentLogger } from '@mdp/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HandedCalls } from '../src/handed.js';
import { LoopSessionRegistry } from '../src/registry.js';
import { createLoopRoutes, type LoopRoutes } from '../src/routes.js';
import { loopClient, polledMessage, type LoopFetch } from '@mdp/test-kit';

/** The routes themselves, called with a request made from fetch's arguments (no adapter, no socket). */
function inProcess(routes: LoopRoutes): LoopFetch {
  return async (path, init = {}) => {
    const url = new URL(path, 'http://loop');
    const headers = new Headers(init.headers);
    const answer = await routes.handle(url.pathname, {
      method: init.method ?? 'GET',
      sessionHeader: headers.get('x-mdp-session-id') ?? undefined,
      query: (name) => (url.searchParams.has(name) ? url.searchParams.getAll(name) : undefined),
      headers: () => headersToMap(headers),
      readBody: async () => ({ ok: true, text: typeof init.body === 'string' ? init.body : '' }),
      connection: () => undefined,
      remoteAddress: () => undefined,
      secure: false,
    });
    return new Response(answer.body ?? null, { status: answer.status });
  };
}

function loopOnRouter() {
  const router = new Router();
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
  return { router, registry, client: loopClient(inProcess(routes)) };
}

let loop: ReturnType<typeof loopOnRouter>;

beforeEach(() => {
  loop = loopOnRouter();
});

afterEach(async () => {
  loop.registry.endAll('test over');
  await loop.router.close();
});

describe('an HTTP loop session that keeps polling', () => {
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
    expect(registry.get(sessionId)?.handed?.size ?? 0).toBeLessThan(100);
  });
});

describe('HandedCalls', () => {
  it('drops an id when its answer comes, whether or not the call still waits', () => {
    const pending = new Set(['a', 'b']);
    const handed = new HandedCalls((id) => pending.has(id));
    handed.add('a');
    handed.add('b');
    handed.answered('a');
    expect(handed.size).toBe(1);
    expect(handed.working()).toBe(true);
    pending.delete('b');
    handed.answered('b');
    expect(handed.size).toBe(0);
    expect(handed.working()).toBe(false);
  });

  it('is working while a handed call waits, and not once it ended unanswered', () => {
    const pending = new Set(['a']);
    const handed = new HandedCalls((id) => pending.has(id));
    handed.add('a');
    expect(handed.working()).toBe(true);
    pending.delete('a'); // timed out in the client's hands
    expect(handed.working()).toBe(false);
    expect(handed.size).toBe(0);
  });

  it('stays bounded by what is pending when calls end without an answer', () => {
    const pending = new Set<string>();
    const handed = new HandedCalls((id) => pending.has(id));
    let largest = 0;
    for (let i = 0; i < 10_000; i++) {
      pending.add(`c${i}`);
      handed.add(`c${i}`);
      largest = Math.max(largest, handed.size);
      // Three calls stay in hand; every older one times out unanswered.
      pending.delete(`c${i - 3}`);
    }
    expect(largest).toBeLessThanOrEqual(64);
    expect(handed.working()).toBe(true);
    expect(handed.size).toBe(3);
  });
});
