/**
 * What both adapters must do alike on a real socket: the Hono routes under @hono/node-server and
 * `handleNode` under a bare node:http listener. A poll the client aborted must not take the message
 * that arrives afterwards; every send and poll refreshes the session.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { Router } from '@mdp/core';
import { loopClient, polledMessage, recordingLogger, watchSessions, type LoopClient, type RecordingLogger, type SessionWatch } from '@mdp/test-kit';
import { createHttpLoopTransport, type HttpLoopTransport } from '../src/index.js';
import { MOUNT, serveHandleNode, stopServing } from './helpers.js';


/** Serve the transport on 127.0.0.1:0 through one adapter; resolves with the port. */
type Adapter = (transport: HttpLoopTransport, onServer: (server: Server) => void) => Promise<number>;

const ADAPTERS: Array<[string, Adapter]> = [
  [
    'Hono routes on @hono/node-server',
    (transport, onServer) => {
      const app = new Hono();
      app.route(MOUNT, transport.app);
      return new Promise<number>((resolve) => {
        onServer(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(info.port)) as Server);
      });
    },
  ],
  [
    'handleNode on node:http',
    async (transport, onServer) => {
      const { server, port } = await serveHandleNode(transport);
      onServer(server);
      return port;
    },
  ],
];

describe.each(ADAPTERS)('HTTP loop over a socket: %s', (_name, adapter) => {
  let router: Router;
  let sessions: SessionWatch;
  let transport: HttpLoopTransport;
  let server: Server;
  let client: LoopClient;
  let logs: RecordingLogger;

  async function setUp(): Promise<void> {
    router = new Router();
    sessions = watchSessions(router);
    logs = recordingLogger();
    transport = createHttpLoopTransport(router, { logger: logs.logger });
    const port = await adapter(transport, (started) => (server = started));
    client = loopClient((path, init) => fetch(`http://127.0.0.1:${port}${MOUNT}${path}`, init));
  }

  afterEach(() => stopServing(transport, router, server));

  /** Start a long poll, wait until the server holds it, abort it from the client side. */
  async function abortedPoll(sessionId: string): Promise<void> {
    const controller = new AbortController();
    const started = logs.next('poll.start');
    const poll = client.poll(sessionId, 60_000, { signal: controller.signal });
    await started;
    controller.abort();
    await expect(poll).rejects.toThrow();
  }

  it('runs connect, register, poll, result and disconnect', async () => {
    await setUp();
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
    await setUp();
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
    await setUp();
    const sessionId = await client.register();
    await abortedPoll(sessionId);
    // No waiting for the server to notice: the message races the connection close.
    const outcome = router.invoke('c1', 'GET', '/hello');
    const message = await polledMessage(await client.poll(sessionId, 1000));
    expect(message.type).toBe('callClient');
    await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 1 });
    expect(await outcome).toEqual({ ok: true, data: 1 });
  });

  it('refreshes last-seen and replaces the transport auth on every send and poll', async () => {
    await setUp();
    const sessionId = await client.connect();
    const session = sessions.session(sessionId);
    session.lastSeen = 0;
    await client.poll(sessionId, 0, { headers: { authorization: 'Bearer p1' } });
    expect(session.lastSeen).toBeGreaterThan(0);
    expect(session.transportAuth).toMatchObject({ scheme: 'Bearer', token: 'p1' });
    session.lastSeen = 0;
    await client.send(sessionId, { type: 'pong' }, { 'x-mdp-auth-tenant': 't2' });
    expect(session.lastSeen).toBeGreaterThan(0);
    expect(session.transportAuth).toEqual({ headers: { 'x-mdp-auth-tenant': 't2' } });
    await client.poll(sessionId, 0);
    expect(session.transportAuth).toBeUndefined();
  });
});
