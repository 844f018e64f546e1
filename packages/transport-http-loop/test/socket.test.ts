/**
 * On a real socket with @hono/node-server: a poll the client aborted must not take the message
 * that arrives afterwards.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpLoopTransport, type HttpLoopTransport } from '../src/index.js';
import { SpyRouter, loopClient, polledMessage, watchLogs, type LogWatcher, type LoopClient } from './helpers.js';

let router: SpyRouter;
let transport: HttpLoopTransport;
let server: Server;
let client: LoopClient;
let logs: LogWatcher;

beforeEach(async () => {
  router = new SpyRouter();
  logs = watchLogs();
  transport = createHttpLoopTransport(router, { logger: logs.logger });
  const app = new Hono();
  app.route('/mdp/http-loop', transport.app);
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(info.port)) as Server;
  });
  client = loopClient((path, init) => fetch(`http://127.0.0.1:${port}/mdp/http-loop${path}`, init));
});

afterEach(async () => {
  await transport.close();
  await router.close();
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
});

/** Start a long poll, wait until the server holds it, abort it from the client side. */
async function abortedPoll(sessionId: string): Promise<AbortController> {
  const controller = new AbortController();
  const started = logs.next('poll.start');
  const poll = client.poll(sessionId, 60_000, { signal: controller.signal });
  await started;
  controller.abort();
  await expect(poll).rejects.toThrow();
  return controller;
}

describe('HTTP loop over a socket', () => {
  it('runs connect, register, poll, result and disconnect', async () => {
    const sessionId = await client.register();
    const outcome = router.invoke('c1', 'GET', '/hello', { query: { q: 'x' } });
    const message = await polledMessage(await client.poll(sessionId, 1000));
    expect(message).toMatchObject({ type: 'callClient', clientId: 'c1', path: '/hello', query: { q: 'x' } });
    await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 42 });
    expect(await outcome).toEqual({ ok: true, data: 42 });
    expect((await client.disconnect(sessionId)).status).toBe(204);
    expect(transport.sessionCount).toBe(0);
  });

  it('does not lose a callClient to a poll aborted before it arrived', async () => {
    const sessionId = await client.register();
    const gone = logs.next('poll.abandoned');
    await abortedPoll(sessionId);
    await gone; // the server has seen the connection close
    const outcome = router.invoke('c1', 'GET', '/hello');
    const message = await polledMessage(await client.poll(sessionId, 1000));
    expect(message.type).toBe('callClient');
    await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 'late but there' });
    expect(await outcome).toEqual({ ok: true, data: 'late but there' });
  });

  it('does not lose a callClient that arrives right as the poll is aborted', async () => {
    const sessionId = await client.register();
    await abortedPoll(sessionId);
    // No waiting for the server to notice: the message races the connection close.
    const outcome = router.invoke('c1', 'GET', '/hello');
    const message = await polledMessage(await client.poll(sessionId, 1000));
    expect(message.type).toBe('callClient');
    await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 1 });
    expect(await outcome).toEqual({ ok: true, data: 1 });
  });
});
