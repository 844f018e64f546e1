/**
 * Reproductions from the second adversarial review: the sealed auth cookie, principals, /mcp
 * session eviction and client ids in a cluster. Each test fails on the code it was written against
 * and states the behaviour the fix must give; the review report explains what an attacker gains
 * and the suggested fix.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AUTH_COOKIE_NAME, createAuthGate, createTokenPolicy } from '@mdp/core';
import { createMdpServer, type MdpServer } from '../src/index.js';
import { createAuthRoutes } from '../src/auth-routes.js';
import { TestClient, clientChange, descriptor, registeredClient, skill, startServer, stopAll } from './harness.js';
import { freePorts } from './ports.js';

const servers: MdpServer[] = [];

afterEach(async () => {
  await stopAll();
  for (const server of servers.splice(0)) await server.close();
});

const endpoint = (method: 'GET' | 'POST', path: string) => ({ type: 'endpoint' as const, method, path });
const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
/** The `mdp_auth=<value>` pair of a Set-Cookie answer. */
const cookiePair = (res: Response): string => (res.headers.get('set-cookie') ?? '').split(';')[0] as string;

describe("review2: one principal's credential", () => {
  it('is not handed to a client of another principal by a host API call', async () => {
    const t = await startServer({ authTokens: ['agent-token', 'client-token'] });
    const client = await registeredClient(t, descriptor('app', [endpoint('POST', '/x')]), { authorization: 'Bearer client-token' });
    const res = await post(`${t.http}/mdp/call`, { clientId: 'app', method: 'POST', path: '/x' }, { authorization: 'Bearer agent-token' });
    expect(res.status).toBe(200);
    expect(client.calls).toHaveLength(1);
    // The client's principal receives the agent's server token in clear (callClient.auth.token and
    // auth.headers.authorization). With it the client may do all the agent may: call every client,
    // and replace the agent's own client ids, which principals are there to prevent.
    expect(JSON.stringify(client.calls[0])).not.toContain('agent-token');
  });

  it('is not handed, nor is the sealed cookie, to the client whose skill a browser reads', async () => {
    const t = await startServer({ authTokens: ['reader-token', 'client-token'] });
    const client = await registeredClient(t, descriptor('app', [skill('/docs/skill.md')]), { authorization: 'Bearer client-token' });
    const minted = await fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { authorization: 'Bearer reader-token' } });
    expect(minted.status).toBe(204);
    const cookie = cookiePair(minted);
    const read = await fetch(`${t.http}/skills/app/docs`, { headers: { cookie } });
    expect(read.status).toBe(200);
    expect(client.calls).toHaveLength(1);
    const seen = JSON.stringify(client.calls[0]);
    // The cookie is sealed so that whoever holds it cannot read the token; the server opens it and
    // forwards the token to the client, and the sealed value with it (a bearer credential of its own).
    expect(seen).not.toContain('reader-token');
    expect(seen).not.toContain(cookie.slice(AUTH_COOKIE_NAME.length + 1));
  });
});

describe('review2: the sealed cookie', () => {
  it('cannot be renewed by itself past the expiry it was sealed with', async () => {
    let now = 1_000_000;
    const gate = createAuthGate(createTokenPolicy(['t0ken']), { now: () => now });
    const app = createAuthRoutes(gate);
    const first = await app.request('/', { method: 'POST', headers: { authorization: 'Bearer t0ken' } });
    expect(first.status).toBe(204);
    // 50 minutes on, the cookie alone (no token) is posted back: a fresh one-hour cookie comes out.
    now += 50 * 60_000;
    const renewed = await app.request('/', { method: 'POST', headers: { cookie: cookiePair(first) } });
    if (renewed.status !== 204) return; // refusing to mint from a cookie alone is a fix too
    // 70 minutes after the token was shown, past the first cookie's hour: whoever copied the cookie
    // once (another service on the same host receives it too) must not still hold a credential.
    now += 20 * 60_000;
    expect(gate.extract({ cookie: cookiePair(renewed) })?.token).toBeUndefined();
  });
});

describe('review2: /mcp session eviction', () => {
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'r', version: '0' } } };
  const mcp = async (url: string, token: string, body: unknown, sessionId?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' };
    if (sessionId) Object.assign(headers, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' });
    const res = await post(url, body, headers);
    await res.text();
    return { status: res.status, sessionId: res.headers.get('mcp-session-id') ?? undefined };
  };

  it("never ends another principal's session for a request that opens none", async () => {
    const t = await startServer({ authTokens: ['agent-a', 'agent-b'], mcp: { maxSessions: 2 } });
    const url = `${t.http}/mcp`;
    const a = await mcp(url, 'agent-a', init);
    expect(a.status).toBe(200);
    expect((await mcp(url, 'agent-b', init)).status).toBe(200);
    // The table is full. B posts something that is no initialize, without a session id: 400, and no
    // session is opened, so there is nothing to make room for.
    expect((await mcp(url, 'agent-b', { jsonrpc: '2.0', id: 2, method: 'tools/list' })).status).toBe(400);
    // A's idle session was evicted for it all the same.
    expect((await mcp(url, 'agent-a', { jsonrpc: '2.0', id: 3, method: 'tools/list' }, a.sessionId)).status).toBe(200);
  });
});

describe('review2: client ids in a cluster', () => {
  const FAST = { mode: 'auto' as const, heartbeatIntervalMs: 30, leaseDurationMs: 300, electionTimeoutMinMs: 350, electionTimeoutMaxMs: 600 };

  async function twoServerCluster(authTokens: string[]): Promise<{ leader: MdpServer; follower: MdpServer }> {
    const ports = await freePorts(2);
    const group = ports.map((port) =>
      createMdpServer({
        host: '127.0.0.1',
        port,
        logLevel: 'silent',
        clusterId: 'review2',
        authTokens,
        cluster: { ...FAST, discovery: { startPort: ports[0] as number, attempts: 2, intervalMs: 150, probeTimeoutMs: 200 } },
      }),
    );
    servers.push(...group);
    await Promise.all(group.map((s) => s.listen()));
    const leader = await new Promise<MdpServer>((resolve) => {
      const check = (): void => {
        const leaders = group.filter((s) => s.cluster?.meta().role === 'leader');
        const only = leaders[0];
        if (leaders.length === 1 && only && group.every((s) => s.cluster?.meta().leaderId === only.info?.serverId)) {
          for (const off of offs) off();
          resolve(only);
        }
      };
      const offs = group.map((s) => (s.cluster as NonNullable<MdpServer['cluster']>).onLeaderChange(check));
      check();
    });
    return { leader, follower: group.find((s) => s !== leader) as MdpServer };
  }

  it("do not let another principal take a client id by registering it on another server", { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(['token-a', 'token-b']);
    // Principal A's client `app` on the follower, mirrored into the leader.
    const owner = await TestClient.connect(follower.info?.urls.ws as string, { headers: { authorization: 'Bearer token-a' } });
    const mirrored = clientChange(leader, `${follower.info?.serverId}.app`, true);
    owner.send({ type: 'registerClient', client: descriptor('app', [endpoint('POST', '/pay')]) });
    await mirrored;
    // On the follower, principal B cannot take `app` (4403). On the leader it can: the leader holds
    // only the mirror's id, so the bare id looks free.
    const intruder = await TestClient.connect(leader.info?.urls.ws as string, { headers: { authorization: 'Bearer token-b' } });
    intruder.send({ type: 'registerClient', client: descriptor('app', [endpoint('POST', '/pay')]) });
    await Promise.race([clientChange(leader, 'app', true), intruder.closed]);
    // An agent on the follower, where A's `app` is connected, calls `app`: the host API asks the
    // leader, which resolves `app` to B's client. The call, its body and the agent's auth go to B.
    const res = await post(`${follower.info?.urls.http}/mdp/call`, { clientId: 'app', method: 'POST', path: '/pay', body: { amount: 1 } }, { authorization: 'Bearer token-a' });
    expect(res.status).toBe(200);
    expect(intruder.calls).toHaveLength(0);
    expect(owner.calls).toHaveLength(1);
  });
});
