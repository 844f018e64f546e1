/**
 * Client ids in a cluster. A follower mirrors its clients into the leader as `<follower>.<id>`
 * over links that prove they come from the follower (the cluster secret, each proof accepted once)
 * and carry the principal of the client mirrored; under an auth policy only those links register
 * a member's mirrored ids. A bare id on the leader and a follower's mirror of it coexist, the bare
 * one answering for the id, whichever arrived first (owner-first).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '@mdp/core';
import { MIRROR_PROOF_HEADER } from '@mdp/cluster';
import type { MdpServer } from '../src/index.js';
import { TestClient, descriptor, skill, stopAll, track } from '@mdp/test-kit';
import { TEST_CLUSTER_TIMING, clientChange, startTwoServerCluster } from './harness.js';

afterEach(stopAll);

// The first election follows discovery at once; a lease of seconds keeps the leader where it is for
// a whole test, even when a loaded machine holds a server's event loop for a while.
const FAST = { mode: 'auto' as const, ...TEST_CLUSTER_TIMING, leaseDurationMs: 3000, electionTimeoutMinMs: 3500, electionTimeoutMaxMs: 4500 };
// Mirror links present the first token; the clients' principals below hold other ones.
const TOKENS = ['cluster-token', 'token-a', 'token-b'];
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const endpoint = (method: 'GET' | 'POST', path: string) => ({ type: 'endpoint' as const, method, path });
const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

const twoServerCluster = (authTokens: string[] | undefined, secret?: string) =>
  startTwoServerCluster({ clusterId: 'client-ids', ...(authTokens ? { authTokens } : {}) }, { ...FAST, ...(secret ? { secret } : {}) });

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
  it("nobody but the follower's own links registers its mirrored ids, marked or not, proof or no proof", { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(TOKENS);
    const prefix = follower.info?.serverId as string;
    const forged = descriptor(`${prefix}.app`, [endpoint('POST', '/pay')], { metadata: { mdpProxy: { serverId: prefix, clientId: 'app' } } });
    const refused = { code: 4403, reason: expect.stringContaining(`mirror of cluster member`) };
    expect(await registerOnLeader(leader, 'token-b', forged)).toEqual(refused);
    expect(await registerOnLeader(leader, 'token-b', descriptor(`${prefix}.other`, []))).toEqual(refused);
    // A proof header that proves nothing (not signed with the cluster secret) changes nothing.
    const fake = Buffer.from(JSON.stringify({ serverId: prefix, to: leader.info?.serverId, timestamp: systemClock.wallNow(), proof: 'x' })).toString(
      'base64url',
    );
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
    const copy = await TestClient.connect(leader.info?.urls.ws as string, {
      headers: { ...bearer('cluster-token'), [MIRROR_PROOF_HEADER]: captured[MIRROR_PROOF_HEADER] as string },
    });
    copy.send({ type: 'registerClient', client: mirror });
    expect(await Promise.race([copy.closed, copy.roundTrip().then(() => 'registered')])).toEqual({
      code: 4403,
      reason: expect.stringContaining('mirror of cluster member'),
    });
    expect(upgrades.at(-1)?.[MIRROR_PROOF_HEADER]).toBe(captured[MIRROR_PROOF_HEADER]);
    // The real mirror still holds the id, and calls reach the follower's client.
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
  it('a page of another site cannot take on the leader the id of a local program that lives on a follower', { timeout: 20_000 }, async () => {
    const { leader, follower } = await twoServerCluster(undefined, 'a-cluster-secret-for-the-test');
    const owner = await ownerOnFollower(leader, follower, {});
    owner.handler = () => 'paid';
    expect(await registerFromPage(leader, 'http://evil.example', descriptor('app', [endpoint('POST', '/pay')]))).toEqual({
      code: 4403,
      reason: 'Client id held by another principal',
    });
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

describe("a bare id on the leader and a follower's mirror of it (owner-first)", () => {
  // Who holds `app` where: [leader's client, follower's client, the agents asking]. With one
  // principal both clients stay and `app` reaches the leader's own; with two, the client registered
  // first keeps `app` (the other is refused, or stays only under the follower's prefix).
  const cases = [
    ['an open cluster', undefined, {}, {}, {}],
    ['one principal', TOKENS, bearer('token-a'), bearer('token-a'), bearer('token-a')],
    ['two principals', TOKENS, bearer('token-b'), bearer('token-a'), bearer('token-a')],
    // The review's reproduction: the mirrors present the follower's owner's token too.
    ["two principals, the owner's token the mirrors'", ['token-a', 'token-b'], bearer('token-b'), bearer('token-a'), bearer('token-a')],
  ] as const;
  const app = () => descriptor('app', [endpoint('POST', '/pay'), skill('/docs/skill.md')]);
  /** A client that answers with where it is connected. */
  const answering = (client: TestClient, where: string): TestClient => {
    client.handler = (call) => (call.path === '/docs/skill.md' ? `# ${where}` : where);
    return client;
  };

  it.each(cases.flatMap(([name, ...rest]) => (['bare first', 'mirror first'] as const).map((order) => [name, order, ...rest] as const)))(
    '%s, %s',
    { timeout: 30_000 },
    async (name, order, tokens, onLeader, onFollower, asking) => {
      const { leader, follower } = await twoServerCluster(tokens ? [...tokens] : undefined);
      const prefix = follower.info?.serverId as string;
      const twoPrincipals = name.startsWith('two principals');
      const bare = async (): Promise<TestClient | { code: number; reason: string }> => {
        const client = await TestClient.connect(leader.info?.urls.ws as string, { headers: onLeader });
        const listed = clientChange(leader, 'app', true);
        client.send({ type: 'registerClient', client: app() });
        return Promise.race([listed.then(() => answering(client, 'leader')), client.closed]);
      };
      const mirrored = async (): Promise<TestClient> => {
        const client = await TestClient.connect(follower.info?.urls.ws as string, { headers: onFollower });
        const listed = clientChange(leader, `${prefix}.app`, true);
        client.send({ type: 'registerClient', client: app() });
        await listed;
        return answering(client, 'follower');
      };
      if (order === 'mirror first' && twoPrincipals) {
        // The follower's client registered first: the leader keeps `app` for it. Its mirror says when.
        const onF = await mirrored();
        const marker = leader.router.getClient(`${prefix}.app`)?.descriptor.metadata?.mdpProxy as { registeredAt?: number } | undefined;
        expect(marker?.registeredAt).toBe(follower.router.getClient('app')?.registeredAt);
        expect(await bare()).toEqual({ code: 4403, reason: 'Client id held by another principal' });
        for (const at of [leader, follower]) {
          const res = await post(`${at.info?.urls.http}/mdp/call`, { clientId: 'app', method: 'POST', path: '/pay' }, asking);
          expect(await res.json()).toEqual({ ok: true, data: 'follower' });
        }
        expect(onF.calls).toHaveLength(2);
        return;
      }
      let onL: TestClient | { code: number; reason: string };
      let onF: TestClient;
      if (order === 'bare first') {
        onL = await bare();
        onF = await mirrored();
      } else {
        onF = await mirrored();
        onL = await bare();
      }
      if (!(onL instanceof TestClient)) throw new Error(`bare app refused: ${JSON.stringify(onL)}`);

      // What the leader lists: both, the mirror without the bare alias (the leader's own client has it).
      const listing = (await (await fetch(`${leader.info?.urls.http}/mdp/clients`, { headers: asking })).json()) as {
        clients: Array<{ id: string; aliases?: string[] }>;
      };
      expect(listing.clients.map((c) => [c.id, c.aliases ?? []]).sort()).toEqual(
        [
          ['app', []],
          [`${prefix}.app`, []],
        ].sort(),
      );
      // `app` reaches the leader's own client from every member; the mirror stays reachable by its full id.
      const call = async (at: MdpServer, clientId: string) =>
        (await (await post(`${at.info?.urls.http}/mdp/call`, { clientId, method: 'POST', path: '/pay' }, asking)).json()) as unknown;
      for (const at of [leader, follower]) {
        expect(await call(at, 'app')).toEqual({ ok: true, data: 'leader' });
        expect(await call(at, `${prefix}.app`)).toEqual({ ok: true, data: 'follower' });
      }
      // A skill read takes the id as registered on the server asked; an MCP call goes where the host API does.
      const read = async (at: MdpServer) => (await fetch(`${at.info?.urls.http}/skills/app/docs/skill.md`, { headers: asking })).text();
      expect(await read(leader)).toBe('# leader');
      expect(await read(follower)).toBe('# follower');
      const agent = new Client({ name: 'race', version: '1.0.0' });
      await agent.connect(new StreamableHTTPClientTransport(new URL(`${leader.info?.urls.http}/mcp`), { requestInit: { headers: asking } }));
      track({ close: () => agent.close().catch(() => undefined) });
      const mcp = await agent.callTool({ name: 'callPath', arguments: { clientId: 'app', method: 'POST', path: '/pay' } });
      expect(mcp.structuredContent).toEqual({ ok: true, data: 'leader' });
      // Nobody was refused or replaced: both sessions are open and registered.
      await Promise.all([onL.roundTrip(), onF.roundTrip()]);
      expect(onF.calls.map((c) => c.path)).toEqual(['/pay', '/pay', '/docs/skill.md']);
      // Nothing of the agent's token crossed to a client, through the leader and the mirror either.
      expect(JSON.stringify([...onL.calls, ...onF.calls])).not.toContain('token-a');
    },
  );
});
