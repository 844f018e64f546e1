import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { ClusterHello } from '@mdp/protocol';
import { Router, systemClock } from '@mdp/core';
import { createClusterNode, type ClusterConfigError } from '../src/index.js';
import { SECRET_REFUSAL } from '../src/join-rules.js';
import { helloProof, membershipFingerprint } from '../src/membership.js';
import { PROOFS_FULL_REFUSAL } from '../src/proof-memory.js';
import { FAST, agreedLeader, metaDocumentOf, startCluster, startNode, until, type TestNode } from './harness.js';

const running: TestNode[] = [];

afterEach(async () => {
  const nodes = running.splice(0);
  await Promise.all(nodes.map((n) => n.stop()));
  for (const n of nodes) expect(n.node.activeTimers).toBe(0);
});

async function track<T extends TestNode | TestNode[]>(value: Promise<T>): Promise<T> {
  const v = await value;
  running.push(...(Array.isArray(v) ? v : [v]));
  return v;
}

/** Dial a node's /mdp/cluster, send `hello`, and resolve with how the node answered. */
function helloExchange(node: TestNode, hello: Partial<ClusterHello>): Promise<{ code: number; reason: string; reply: unknown }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${node.port}/mdp/cluster`);
    let reply: unknown;
    ws.on('open', () =>
      ws.send(
        JSON.stringify({
          type: 'clusterHello',
          clusterId: 'test',
          serverId: '127.0.0.1:1',
          term: 0,
          timestamp: systemClock.wallNow(),
          membershipMode: 'dynamic',
          membershipFingerprint: 'dynamic',
          role: 'follower',
          wsUrl: 'ws://127.0.0.1:1',
          clusterUrl: 'ws://127.0.0.1:1/mdp/cluster',
          ...hello,
        }),
      ),
    );
    ws.on('message', (data) => {
      reply = JSON.parse(String(data));
      ws.close(1000);
    });
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString(), reply }));
    ws.on('error', reject);
  });
}

describe('membership', () => {
  it('fingerprints: dynamic, or the sorted distinct static ids', () => {
    expect(membershipFingerprint({ mode: 'dynamic' })).toBe('dynamic');
    expect(membershipFingerprint({ mode: 'static', members: ['b:2', 'a:1', 'b:2'] })).toBe('["a:1","b:2"]');
  });

  it('answers a compatible hello with its own', async () => {
    const node = await track(startNode({}));
    const answer = await helloExchange(node, {});
    expect(answer.reply).toMatchObject({ type: 'clusterHello', clusterId: 'test', serverId: node.id, membershipMode: 'dynamic' });
    expect(answer.code).toBe(1000);
  });

  it('refuses a foreign cluster id with close 1008', async () => {
    const node = await track(startNode({}));
    const answer = await helloExchange(node, { clusterId: 'other' });
    expect(answer.code).toBe(1008);
    expect(answer.reason).toMatch(/cluster id/);
    expect(answer.reply).toBeUndefined();
  });

  it('refuses another membership mode or fingerprint, and a non-member of a static set', async () => {
    const members = ['127.0.0.1:1', 'x:2'];
    const node = await track(startNode({ serverId: 'x:2', membership: { mode: 'static', members } }));
    const fingerprint = membershipFingerprint({ mode: 'static', members });
    expect((await helloExchange(node, {})).code).toBe(1008);
    const wrong = await helloExchange(node, { membershipMode: 'static', membershipFingerprint: '["127.0.0.1:1","x:2","y:3"]' });
    expect(wrong).toMatchObject({ code: 1008, reason: 'membership fingerprint differs' });
    const stranger = await helloExchange(node, { serverId: 'z:9', membershipMode: 'static', membershipFingerprint: fingerprint });
    expect(stranger.code).toBe(1008);
    const member = await helloExchange(node, { membershipMode: 'static', membershipFingerprint: fingerprint });
    expect(member.code).toBe(1000);
  });

  it('refuses a first frame that is not a hello, and binary frames', async () => {
    const node = await track(startNode({}));
    const notHello = await helloExchange(node, { type: 'clusterHeartbeat' } as unknown as Partial<ClusterHello>);
    expect(notHello.code).toBe(1008);
    const binary = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${node.port}/mdp/cluster`);
      ws.on('open', () => ws.send(Buffer.from([1, 2, 3])));
      ws.on('close', (code) => resolve(code));
    });
    expect(binary).toBe(1003);
  });

  it('after the hello, closes with 1008 on a frame that is not JSON or that claims another server id', async () => {
    const node = await track(startNode({}));
    const after = (frame: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${node.port}/mdp/cluster`);
        ws.on('open', () =>
          ws.send(
            JSON.stringify({
              type: 'clusterHello',
              clusterId: 'test',
              serverId: '127.0.0.1:1',
              term: 0,
              timestamp: systemClock.wallNow(),
              membershipMode: 'dynamic',
              membershipFingerprint: 'dynamic',
              role: 'follower',
              wsUrl: 'ws://127.0.0.1:1',
              clusterUrl: 'ws://127.0.0.1:1/mdp/cluster',
            }),
          ),
        );
        ws.once('message', () => ws.send(frame));
        ws.on('close', (code) => resolve(code));
      });
    expect(await after('{not json')).toBe(1008);
    const spoofed = { type: 'clusterHeartbeatAck', clusterId: 'test', serverId: 'someone-else:2', term: 0, timestamp: 1, followerId: 'x', leaderId: 'y' };
    expect(await after(JSON.stringify(spoofed))).toBe(1008);
    expect(await after(JSON.stringify({ type: 'clusterHeartbeatAck', clusterId: 'test', serverId: '127.0.0.1:1', term: -1 }))).toBe(1008);
  });

  it('static members with different member lists never link, and each logs the refusal', async () => {
    const nodes = await track(
      startCluster(2, (i, ports) => {
        const a = `127.0.0.1:${ports[0]}`;
        const b = `127.0.0.1:${ports[1]}`;
        return { membership: { mode: 'static', members: i === 0 ? [a, b] : [a, b, '127.0.0.1:9'] } };
      }),
    );
    await until(() => nodes.every((n) => n.logs.some((l) => l.event === 'cluster.peer_refused')), 3000, 'both to refuse');
    for (const n of nodes) expect(n.node.meta().reachableMemberCount).toBe(1);
    expect(nodes[0]?.node.meta()).toMatchObject({ membershipMode: 'static', knownMemberCount: 2, quorumSize: 2, hasQuorum: false });
    expect(nodes[1]?.node.meta()).toMatchObject({ knownMemberCount: 3, quorumSize: 2 });
  });

  it('a static cluster elects among its members, found at the addresses their ids name', async () => {
    const nodes = await track(
      startCluster(3, (_i, ports) => ({
        membership: { mode: 'static', members: ports.map((p) => `127.0.0.1:${p}`) },
        // No seeds and no range: static members are probed at their ids.
        discovery: { seedUrls: [] },
      })),
    );
    await until(() => agreedLeader(nodes) !== undefined, FAST.electionTimeoutMaxMs + 4000, 'a leader');
    const fingerprint = nodes[0]?.node.meta().membershipFingerprint;
    expect(JSON.parse(fingerprint as string)).toHaveLength(3);
    for (const n of nodes) expect(n.node.meta()).toMatchObject({ membershipMode: 'static', membershipFingerprint: fingerprint, knownMemberCount: 3 });
  });

  it('reports a server id used at two endpoints as a configuration error', async () => {
    const errors: ClusterConfigError[] = [];
    const nodes = await track(startCluster(3, (i) => (i < 2 ? { serverId: 'same-id' } : {})));
    for (const n of nodes) n.node.onConfigError((e) => errors.push(e));
    await until(() => errors.length >= 2, 3000, 'duplicate id reports');
    expect(errors[0]).toMatchObject({ kind: 'duplicate-server-id', serverId: 'same-id' });
    expect(nodes.some((n) => n.logs.some((l) => l.event === 'cluster.duplicate_server_id' && l.level === 'error'))).toBe(true);
  });

  it('with a cluster secret: members that share it link and elect; a hello without its proof is refused', async () => {
    const nodes = await track(startCluster(3, (i) => ({ clusterSecret: i < 2 ? 's3cret' : 'other' })));
    const [a, b, c] = nodes as [TestNode, TestNode, TestNode];
    await until(() => agreedLeader([a, b]) !== undefined, FAST.electionTimeoutMaxMs + 4000, 'a leader among a and b');
    expect(c.node.meta().role).not.toBe('leader');
    expect(c.node.meta().reachableMemberCount).toBe(1);
    expect((await helloExchange(a, {})).code).toBe(1008);
  });

  it('with a cluster secret, accepts a hello proof once: a copy on a new connection is refused as a bad proof, a fresh one works', async () => {
    const node = await startNode({ clusterSecret: 's3cret' });
    const peer = '127.0.0.1:1';
    const signed = (timestamp: number) => ({ serverId: peer, timestamp, auth: helloProof('s3cret', 'test', peer, timestamp, node.id) });
    const captured = signed(systemClock.wallNow());
    expect(await helloExchange(node, captured)).toMatchObject({ code: 1000, reply: { type: 'clusterHello', serverId: node.id } });
    expect(await helloExchange(node, captured)).toEqual({ code: 1008, reason: SECRET_REFUSAL, reply: undefined });
    expect(node.logs).toContainEqual(expect.objectContaining({ event: 'cluster.proof_replayed', kind: 'hello', peer, level: 'warn' }));
    expect(await helloExchange(node, signed(captured.timestamp + 1))).toMatchObject({ code: 1000, reply: { type: 'clusterHello' } });
    // The memory holds the two proofs it accepted, and lets go of them on close (no timer of its own).
    expect(node.node.rememberedProofs).toBe(2);
    await node.stop();
    expect(node.node.rememberedProofs).toBe(0);
    expect(node.node.activeTimers).toBe(0);
  });

  it('refuses a new link while its proof memory is full, and says so', async () => {
    const node = await track(startNode({ clusterSecret: 's3cret', maxRememberedProofs: 1 }));
    const timestamp = systemClock.wallNow();
    const signed = (serverId: string) => ({ serverId, timestamp, auth: helloProof('s3cret', 'test', serverId, timestamp, node.id) });
    expect((await helloExchange(node, signed('127.0.0.1:1'))).code).toBe(1000);
    expect(await helloExchange(node, { ...signed('127.0.0.1:2'), clusterUrl: 'ws://127.0.0.1:2/mdp/cluster' })).toMatchObject({
      code: 1008,
      reason: PROOFS_FULL_REFUSAL,
    });
    expect(node.logs).toContainEqual(expect.objectContaining({ event: 'cluster.proof_memory_full', capacity: 1 }));
  });

  it('with several secrets: a node proves its first and accepts a proof of any, on links in both directions', async () => {
    // a and b prove different secrets that the other accepts; c proves one neither knows.
    const secrets = [['k1', 'k2'], ['k2', 'k1'], ['k3']];
    const nodes = await track(startCluster(3, (i) => ({ clusterSecret: secrets[i] as string[] })));
    const [a, b, c] = nodes as [TestNode, TestNode, TestNode];
    await until(() => agreedLeader([a, b]) !== undefined, FAST.electionTimeoutMaxMs + 4000, 'a leader among a and b');
    await until(() => c.logs.some((l) => l.event === 'cluster.peer_refused' && l.reason === 'no valid cluster secret proof'), 3000, 'c refusing the others');
    expect(c.node.meta().role).not.toBe('leader');
    expect(c.node.meta().reachableMemberCount).toBe(1);
    expect((await helloExchange(a, {})).code).toBe(1008);
  });

  it('ignores metadata that names another address than the one it came from (a port speaking for another server)', async () => {
    const b = await track(startNode({}));
    // A fake answers /mdp/meta with b's document, endpoints and all.
    const fake = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(metaDocumentOf(b.id, b.port, b.node))),
    );
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
      const a = await track(startNode({ discovery: { seedUrls: [fakeUrl] } }));
      await until(() => a.logs.some((l) => l.event === 'cluster.meta_elsewhere' && l.url === fakeUrl), 3000, 'the sighting ignored');
      expect(a.node.meta().knownMemberCount).toBe(1);
      expect(b.node.meta().knownMemberCount).toBe(1);
    } finally {
      await new Promise((resolve) => fake.close(resolve));
    }
  });

  it('shuts down without waiting on a control link whose peer never answers the closing handshake', async () => {
    const n = await track(startNode({}));
    // A raw upgrade that then reads nothing and never sends a frame: refused at its handshake
    // time-out, it would hold `ws`'s close for 30 s.
    const socket = connect(n.port, '127.0.0.1');
    const upgraded = new Promise<string>((resolve) => socket.once('data', (data) => resolve(String(data))));
    socket.write(
      'GET /mdp/cluster HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    expect(await upgraded).toMatch(/^HTTP\/1\.1 101 /);
    socket.on('data', () => undefined); // reads what it is sent, answers nothing
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await n.node.close(); // the test's 5 s time-out is the bound: without the grace this takes 30 s
    await closed;
  });

  it('rejects a static member list that does not name this server', () => {
    const router = new Router();
    expect(() => createClusterNode({ router, serverId: 'a:1', clusterId: 'c', membership: { mode: 'static', members: ['b:2'] } })).toThrow(
      /must list this server/,
    );
  });
});
