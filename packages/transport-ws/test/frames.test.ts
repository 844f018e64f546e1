/** What each kind of bad frame closes the socket with (SPEC §5), and that the session ends with it. */
import { describe, expect, it, vi } from 'vitest';
import { Router } from '@mdp/core';
import type { ClientToServerMessage } from '@mdp/protocol';
import { descriptor, recordingLogger, until, type TestClient } from '@mdp/test-kit';
import { ROUTER_OPTIONS, harnessPerTest, rawUpgrade, sendRawText, type Harness } from './helpers.js';

const { start, client } = harnessPerTest();

async function connected(options?: Parameters<typeof start>[0]): Promise<{ h: Harness; socket: TestClient }> {
  const h = await start(options);
  return { h, socket: await client(h) };
}

/** Wait for the client to see the close and for the server to end the session. */
async function closedAndEnded(h: Harness, socket: TestClient) {
  const closed = await socket.closed;
  await h.sessions.ended(h.sessions.only);
  expect(h.router.sessionCount).toBe(0);
  return closed;
}

describe('close codes', () => {
  it('binary frame → 1003', async () => {
    const { h, socket } = await connected();
    socket.socket.send(Buffer.from('{"type":"ping"}'), { binary: true });
    expect(await closedAndEnded(h, socket)).toEqual({ code: 1003, reason: 'Binary frames are not supported; send JSON text' });
  });

  it('frame that is not JSON → 1008', async () => {
    const { h, socket } = await connected();
    socket.socket.send('{nope');
    expect(await closedAndEnded(h, socket)).toEqual({ code: 1008, reason: 'Frame is not valid JSON' });
  });

  it.each([
    ['JSON that is not an object', '[1,2]', /^Invalid message: /],
    ['unknown type', '{"type":"hello"}', /^Invalid message: /],
    ['registerClient with an empty id', JSON.stringify({ type: 'registerClient', client: { id: '', name: 'x', paths: [] } }), /client\.id/],
  ])('invalid message (%s) → 1008 naming the problem', async (_name, frame, reason) => {
    const { h, socket } = await connected();
    socket.socket.send(frame);
    const closed = await closedAndEnded(h, socket);
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(reason);
  });

  it('server-to-client type → 1008', async () => {
    const { h, socket } = await connected();
    socket.send({ type: 'callClient', requestId: 'r1', clientId: 'c1', method: 'GET', path: '/a', kind: 'tool', name: '/a', args: {} });
    expect(await closedAndEnded(h, socket)).toEqual({ code: 1008, reason: 'Invalid message: type: callClient is a server-to-client message' });
  });

  it('an MdpError from the router → 1008 with its message', async () => {
    const { h, socket } = await connected();
    socket.send({ type: 'updateClientCatalog', clientId: 'someone-else', paths: [] });
    expect(await closedAndEnded(h, socket)).toEqual({ code: 1008, reason: 'Client "someone-else" is not registered on this session' });
  });

  it('an unexpected error → 1011 "Internal error", logged and not echoed', async () => {
    const router = new Router(ROUTER_OPTIONS);
    vi.spyOn(router, 'handleMessage').mockImplementation(() => {
      throw new Error('secret detail');
    });
    const { logger, records } = recordingLogger();
    const { h, socket } = await connected({ router, transport: { logger } });
    socket.send({ type: 'ping' });
    expect(await closedAndEnded(h, socket)).toEqual({ code: 1011, reason: 'Internal error' });
    const failure = records.find((r) => r.event === 'ws.handler_failed');
    expect(failure).toMatchObject({ level: 'error', sessionId: h.sessions.only.id });
    expect(JSON.stringify(failure)).toContain('secret detail');
  });

  it('frame over maxMessageBytes → 1009; a frame of exactly maxMessageBytes is accepted', async () => {
    const MAX = 64;
    const { h, socket } = await connected({ transport: { maxMessageBytes: MAX } });
    const ping = '{"type":"ping","timestamp":5}';
    const exact = ping.padEnd(MAX, ' '); // JSON allows trailing whitespace
    expect(Buffer.byteLength(exact)).toBe(MAX);
    socket.socket.send(exact);
    expect(await socket.next((m) => m.type === 'pong')).toEqual({ type: 'pong', timestamp: 5 });

    socket.socket.send(`${exact} `);
    const closed = await closedAndEnded(h, socket);
    expect(closed.code).toBe(1009);
  });

  it('long reasons are cut to fit a close frame', async () => {
    const { h, socket } = await connected();
    const id = 'x'.repeat(200);
    socket.send({ type: 'updateClientCatalog', clientId: id, paths: [] });
    const closed = await closedAndEnded(h, socket);
    expect(closed.code).toBe(1008);
    expect(Buffer.byteLength(closed.reason)).toBe(123);
    expect(closed.reason).toMatch(/^Client "x+\.\.\.$/);
  });

  it('a refused session ends at once, even when the peer never answers the close frame', async () => {
    const h = await start();
    const raw = await rawUpgrade(h.port);
    sendRawText(raw, JSON.stringify({ type: 'registerClient', client: { id: 'raw', name: 'raw', paths: [{ type: 'skill', path: '/s/skill.md' }] } }));
    await until(
      (change) => h.router.onClientEvent(change),
      () => h.router.hasClient('raw'),
    );
    const pending = h.router.invoke('raw', 'GET', '/s/skill.md');
    sendRawText(raw, '{nope');
    expect(await raw.closeFrame).toEqual({ code: 1008, reason: 'Frame is not valid JSON' });
    // No close handshake from the peer, and the socket is still open: the session is over anyway.
    await h.sessions.ended(h.sessions.only);
    expect(raw.socket.destroyed).toBe(false);
    expect(h.router.getClient('raw')).toBeUndefined();
    expect(await pending).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    expect(await h.router.invoke('raw', 'GET', '/s/skill.md')).toMatchObject({ ok: false, error: { code: 'not_found' } });
    raw.socket.destroy();
  });

  it('ignores frames that arrive after the socket was refused', async () => {
    const { h, socket } = await connected();
    const events: string[] = [];
    h.router.onClientEvent((event) => events.push(event.type));
    socket.socket.send(Buffer.from([1, 2, 3]), { binary: true });
    const register: ClientToServerMessage = { type: 'registerClient', client: { ...descriptor('late'), paths: [] } };
    socket.send(register);
    expect((await closedAndEnded(h, socket)).code).toBe(1003);
    expect(events).toEqual([]);
  });
});
