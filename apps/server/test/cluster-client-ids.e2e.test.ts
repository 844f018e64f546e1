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

async function twoServerCluster(authTokens: string[] | undefined): Promise<{ leader: MdpServer; follower: MdpServer }> {
  const ports = await freePorts(2);
  const group = ports.map((port) =>
    createMdpServer({
      host: '127.0.0.1',
      port,
      logLevel: 'silent',
      clusterId: 'client-ids',
      ...(authTokens ? { authTokens } : {}),
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

describe('mirror proofs in a guarded cluster', () => {
  it("are accepted once: a copy of a mirror's upgrade registers nothing (4403, as without a proof), the mirror keeps its id", { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(TOKENS);
    // A wiretap on the leader: the headers of every MDP upgrade, as someone on the path would see them.
    const node = leader.cluster as NonNullable<MdpServer['cluster']>;
    const upgrades: Array<Record<string, string>> = [];
    const mirrorPeer = node.mirrorPeer.bind(node);
    node.mirrorPeer = (headers) => {
      upgrades.push(Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => typeof e[1] === 'string')));
      return mirrorPeer(headers);
    };
    const owner = await ownerOnFollower(leader, follower, bearer('token-a'));
    owner.handler = () => 'paid';
    const captured = upgrades.find((headers) => headers[MIRROR_PROOF_HEADER] !== undefined) as Record<string, string>;
    const prefix = follower.info?.serverId as string;
    const mirror = descriptor(`${prefix}.app`, [endpoint('POST', '/pay')], { metadata: { mdpProxy: { serverId: prefix, clientId: 'app' } } });
    // The id is held already: whether the copy is refused shows on its own socket.
    const copy = await TestClient.connect(leader.info?.urls.ws as string, { headers: { ...bearer('cluster-token'), [MIRROR_PROOF_HEADER]: captured[MIRROR_PROOF_HEADER] as string } });
    copy.send({ type: 'registerClient', client: mirror });
    expect(await Promise.race([copy.closed, copy.roundTrip().then(() => 'registered')])).toEqual({ code: 4403, reason: expect.stringContaining('mirror of cluster member') });
    expect(upgrades.at(-1)?.[MIRROR_PROOF_HEADER]).toBe(captured[MIRROR_PROOF_HEADER]);
    // The real mirror still holds the id, and calls reach the follower's client.
    const res = await post(`${leader.info?.urls.http}/mdp/call`, { clientId: `${prefix}.app`, method: 'POST', path: '/pay' }, bearer('token-b'));
    expect(await res.json()).toEqual({ ok: true, data: 'paid' });
  });
});

describe('client ids in an open cluster (no policy)', () => {
  it('follow SPEC §4 as before: any session takes any id, and mirrors are not asked for proof', { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(undefined);
    await ownerOnFollower(leader, follower, {});
    const socket = await TestClient.connect(leader.info?.urls.ws as string);
    const registered = clientChange(leader, 'app', true);
    socket.send({ type: 'registerClient', client: descriptor('app', []) });
    await registered;
  });
});
