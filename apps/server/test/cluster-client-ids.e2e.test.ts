/**
 * Client ids in a cluster under an auth policy: an id belongs to its principal on every server.
 * A follower mirrors its clients into the leader as `<follower>.<id>` over links that prove they
 * come from the follower (the cluster secret) and carry the principal of the client mirrored; the
 * leader keeps the bare id for that principal, and a member's mirrored ids for that member.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MIRROR_PROOF_HEADER } from '@mdp/cluster';
import { createMdpServer, type MdpServer } from '../src/index.js';
import { TestClient, descriptor, freePorts, stopAll } from '@mdp/test-kit';
import { TEST_CLUSTER_TIMING, clientChange } from './harness.js';

const servers: MdpServer[] = [];

afterEach(async () => {
  await stopAll();
  for (const server of servers.splice(0)) await server.close();
});

const FAST = { mode: 'auto' as const, ...TEST_CLUSTER_TIMING };
// Mirror links present the first token; the clients' principals below hold other ones.
const TOKENS = ['cluster-token', 'token-a', 'token-b'];
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const endpoint = (method: 'GET' | 'POST', path: string) => ({ type: 'endpoint' as const, method, path });
const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

async function twoServerCluster(authTokens: string[] | undefined, secret?: string): Promise<{ leader: MdpServer; follower: MdpServer }> {
  const ports = await freePorts(2);
  const group = ports.map((port) =>
    createMdpServer({
      host: '127.0.0.1',
      port,
      logLevel: 'silent',
      clusterId: 'client-ids',
      ...(authTokens ? { authTokens } : {}),
      cluster: { ...FAST, ...(secret ? { secret } : {}), discovery: { startPort: ports[0] as number, attempts: 2, intervalMs: 150, probeTimeoutMs: 200 } },
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

/** A's client `app` on the follower, once the leader holds its mirror. */
async function ownerOnFollower(leader: MdpServer, follower: MdpServer, headers: Record<string, string>): Promise<TestClient> {
  const owner = await TestClient.connect(follower.info?.urls.ws as string, { headers });
  const mirrored = clientChange(leader, `${follower.info?.serverId}.app`, true);
  owner.send({ type: 'registerClient', client: descriptor('app', [endpoint('POST', '/pay')]) });
  await mirrored;
  return owner;
}

/** Register `client` on the leader as `token`: 'registered', or the close the server answered with. */
async function registerOnLeader(leader: MdpServer, token: string, client: ReturnType<typeof descriptor>, extra: Record<string, string> = {}) {
  const socket = await TestClient.connect(leader.info?.urls.ws as string, { headers: { ...bearer(token), ...extra } });
  socket.send({ type: 'registerClient', client });
  return Promise.race([clientChange(leader, client.id, true).then(() => 'registered' as const), socket.closed]);
}

describe('client ids in a guarded cluster', () => {
  // The second list is the review's reproduction, where the owner's token is also the mirrors'.
  it.each([[TOKENS], [['token-a', 'token-b']]])("another principal cannot take an id on the leader that lives on a follower; the call reaches the owner (tokens %j)", { timeout: 20_000 }, async (tokens) => {
    const { leader, follower } = await twoServerCluster(tokens);
    const owner = await ownerOnFollower(leader, follower, bearer('token-a'));
    expect(await registerOnLeader(leader, 'token-b', descriptor('app', [endpoint('POST', '/pay')]))).toEqual({ code: 4403, reason: 'Client id held by another principal' });
    for (const at of [follower, leader]) {
      const res = await post(`${at.info?.urls.http}/mdp/call`, { clientId: 'app', method: 'POST', path: '/pay', body: { amount: 1 } }, bearer('token-a'));
      expect(res.status).toBe(200);
    }
    expect(owner.calls).toHaveLength(2);
    // Nothing of the agent's token crossed to the client, through the leader and the mirror either.
    expect(JSON.stringify(owner.calls)).not.toContain('token-a');
  });

  it('its owner may still register the id on the leader itself (a client that moves after a failover)', { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(TOKENS);
    await ownerOnFollower(leader, follower, bearer('token-a'));
    expect(await registerOnLeader(leader, 'token-a', descriptor('app', [endpoint('POST', '/pay')]))).toBe('registered');
  });

  it("nobody but the follower's own links registers its mirrored ids, marked or not, proof or no proof", { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(TOKENS);
    const prefix = follower.info?.serverId as string;
    const forged = descriptor(`${prefix}.app`, [endpoint('POST', '/pay')], { metadata: { mdpProxy: { serverId: prefix, clientId: 'app' } } });
    const refused = { code: 4403, reason: expect.stringContaining(`mirror of cluster member`) };
    expect(await registerOnLeader(leader, 'token-b', forged)).toEqual(refused);
    expect(await registerOnLeader(leader, 'token-b', descriptor(`${prefix}.other`, []))).toEqual(refused);
    // A proof header that proves nothing (not signed with the cluster secret) changes nothing.
    const fake = Buffer.from(JSON.stringify({ serverId: prefix, to: leader.info?.serverId, timestamp: Date.now(), proof: 'x' })).toString('base64url');
    expect(await registerOnLeader(leader, 'cluster-token', forged, { [MIRROR_PROOF_HEADER]: fake })).toEqual(refused);
    // The follower's real mirror is still accepted.
    const owner = await ownerOnFollower(leader, follower, bearer('token-a'));
    owner.handler = () => 'paid';
    const res = await post(`${leader.info?.urls.http}/mdp/call`, { clientId: `${prefix}.app`, method: 'POST', path: '/pay' }, bearer('token-b'));
    expect(await res.json()).toEqual({ ok: true, data: 'paid' });
  });
});

describe('client ids in a cluster without a policy', () => {
  it('follow SPEC §4 as before: any local program takes any id, and mirrors are not asked for proof', { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(undefined);
    await ownerOnFollower(leader, follower, {});
    const socket = await TestClient.connect(leader.info?.urls.ws as string);
    const registered = clientChange(leader, 'app', true);
    socket.send({ type: 'registerClient', client: descriptor('app', []) });
    await registered;
  });

  /** Register `client` on the leader from a page of `origin`: 'registered', or the close it got. */
  async function registerFromPage(leader: MdpServer, origin: string, client: ReturnType<typeof descriptor>) {
    const socket = await TestClient.connect(leader.info?.urls.ws as string, { headers: { origin } });
    socket.send({ type: 'registerClient', client });
    return Promise.race([clientChange(leader, client.id, true).then(() => 'registered' as const), socket.closed]);
  }

  // Review finding: the leader did not keep mirrored ids for their owner without a policy, so any
  // site's page took `app` there and got the agent's calls meant for the program on the follower.
  it("a page of another site cannot take on the leader the id of a local program that lives on a follower", { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(undefined, 'a-cluster-secret-for-the-test');
    const owner = await ownerOnFollower(leader, follower, {});
    owner.handler = () => 'paid';
    expect(await registerFromPage(leader, 'http://evil.example', descriptor('app', [endpoint('POST', '/pay')]))).toEqual({ code: 4403, reason: 'Client id held by another principal' });
    for (const at of [follower, leader]) {
      const res = await post(`${at.info?.urls.http}/mdp/call`, { clientId: 'app', method: 'POST', path: '/pay' });
      expect(await res.json()).toEqual({ ok: true, data: 'paid' });
    }
    expect(owner.calls).toHaveLength(2);
  });

  it("a page's id on a follower stays its origin's on the leader: that origin may register it there, another may not", { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(undefined, 'a-cluster-secret-for-the-test');
    await ownerOnFollower(leader, follower, { origin: 'https://app.example' });
    expect(await registerFromPage(leader, 'http://evil.example', descriptor('app', []))).toEqual({ code: 4403, reason: 'Client id held by another principal' });
    expect(await registerFromPage(leader, 'https://app.example', descriptor('app', []))).toBe('registered');
  });
});
