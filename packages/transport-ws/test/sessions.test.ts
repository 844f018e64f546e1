/** One core session per websocket connection, and the transport auth of its upgrade request. */
import { describe, expect, it } from 'vitest';
import { encodeAuthCookie, type HeaderMap } from '@mdp/core';
import type { AuthContext } from '@mdp/protocol';
import { descriptor } from '@mdp/test-kit';
import { harnessPerTest } from './helpers.js';

const { start, client } = harnessPerTest();

describe('sessions', () => {
  it('opens one ws session per connection and ends it when the socket closes', async () => {
    const h = await start();
    const a = await client(h);
    const b = await client(h);
    expect(h.router.sessionCount).toBe(2);
    expect(h.transport.connectionCount).toBe(2);
    const [first, second] = h.sessions.opened;
    expect(first?.transportKind).toBe('ws');
    expect(first?.id).not.toBe(second?.id);

    a.socket.close(1000, 'bye');
    await h.sessions.ended(first!);
    expect(await a.closed).toEqual({ code: 1000, reason: 'bye' });
    expect(h.router.sessionCount).toBe(1);
    expect(second?.closed).toBe(false);

    // An abrupt drop (no closing handshake) ends the session too.
    b.socket.terminate();
    await h.sessions.ended(second!);
    expect(h.router.sessionCount).toBe(0);
  });

  it('delivers server messages as JSON text frames and feeds client frames to the session', async () => {
    const h = await start();
    const socket = await client(h);
    socket.send({ type: 'registerClient', client: descriptor('c1') });
    const call = socket.next((m) => m.type === 'callClient');
    // The registration is applied before the next frame, so invoking right after a ping round trip is safe.
    socket.send({ type: 'ping', timestamp: 7 });
    expect(await socket.next((m) => m.type === 'pong')).toEqual({ type: 'pong', timestamp: 7 });

    const outcome = h.router.invoke('c1', 'GET', '/docs/skill.md');
    const message = await call;
    expect(message).toMatchObject({ type: 'callClient', clientId: 'c1', method: 'GET', path: '/docs/skill.md', kind: 'skill' });
    socket.send({ type: 'callClientResult', requestId: message.requestId, ok: true, data: '# Docs' });
    expect(await outcome).toEqual({ ok: true, data: '# Docs' });
  });

  it('fails a pending call at once when its socket closes', async () => {
    const h = await start();
    const socket = await client(h);
    socket.send({ type: 'registerClient', client: descriptor('c1') });
    socket.send({ type: 'ping' });
    await socket.next((m) => m.type === 'pong');
    const outcome = h.router.invoke('c1', 'GET', '/docs/skill.md');
    await socket.next((m) => m.type === 'callClient');
    socket.socket.close();
    expect(await outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    expect(h.router.pendingCount).toBe(0);
  });
});

describe('transport auth from the upgrade request', () => {
  /** Connect with `headers`, register a client and return what the session holds. */
  async function authOf(headers: Record<string, string>, messageAuth?: AuthContext) {
    const h = await start();
    const socket = await client(h, headers);
    socket.send({ type: 'registerClient', client: descriptor('c1'), auth: messageAuth });
    socket.send({ type: 'ping' });
    await socket.next((m) => m.type === 'pong');
    const [info] = h.router.listClients();
    return { transportAuth: h.sessions.only.transportAuth, authSource: info?.authSource };
  }

  it('is absent when the upgrade carries no credential', async () => {
    expect(await authOf({})).toEqual({ transportAuth: undefined, authSource: 'none' });
  });

  it('reads Authorization as scheme and token', async () => {
    expect(await authOf({ Authorization: 'Bearer tok-1' })).toEqual({
      transportAuth: { scheme: 'Bearer', token: 'tok-1', headers: { authorization: 'Bearer tok-1' } },
      authSource: 'transport',
    });
  });

  it('reads the mdp_auth cookie and copies the raw cookie header', async () => {
    const cookie = `theme=dark; mdp_auth=${encodeAuthCookie({ scheme: 'Bearer', token: 'from-cookie', metadata: { user: 'u1' } })}`;
    expect(await authOf({ Cookie: cookie })).toEqual({
      transportAuth: { scheme: 'Bearer', token: 'from-cookie', metadata: { user: 'u1' }, headers: { cookie } },
      authSource: 'transport',
    });
  });

  it('copies x-mdp-auth-* headers', async () => {
    expect(await authOf({ 'X-MDP-Auth-Tenant': 't9', 'x-other': 'ignored' })).toEqual({
      transportAuth: { headers: { 'x-mdp-auth-tenant': 't9' } },
      authSource: 'transport',
    });
  });

  it('keeps transport and message auth side by side', async () => {
    const result = await authOf({ authorization: 'tok-bare' }, { token: 'from-message' });
    expect(result).toEqual({ transportAuth: { token: 'tok-bare', headers: { authorization: 'tok-bare' } }, authSource: 'transport+message' });
    expect((await authOf({}, { token: 'from-message' })).authSource).toBe('message');
  });

  it('uses a custom extractAuth with the lower-case upgrade headers', async () => {
    const seen: HeaderMap[] = [];
    const h = await start({
      transport: {
        extractAuth: (headers) => {
          seen.push(headers);
          return { token: String(headers['x-api-key']) };
        },
      },
    });
    await client(h, { 'X-Api-Key': 'k-42' });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.['x-api-key']).toBe('k-42');
    expect(h.sessions.only.transportAuth).toEqual({ token: 'k-42' });
  });

  it('lets authorize refuse a connection with 4401 before any session opens', async () => {
    const seen: Array<AuthContext | undefined> = [];
    const h = await start({ transport: { authorize: (auth) => (seen.push(auth), auth?.token === 'good') } });
    const refused = await client(h, { authorization: 'Bearer bad' });
    expect(await refused.closed).toEqual({ code: 4401, reason: 'Unauthorized' });
    expect(h.sessions.opened).toHaveLength(0);

    await client(h, { authorization: 'Bearer good' });
    expect(h.router.sessionCount).toBe(1);
    expect(seen.map((auth) => auth?.token)).toEqual(['bad', 'good']);
  });
});
