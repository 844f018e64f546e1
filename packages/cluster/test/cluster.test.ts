import { afterEach, describe, expect, it } from 'vitest';
import { parseMetaDocument } from '@mdp/protocol';
import { Router, systemClock } from '@mdp/core';
import { mirroredId } from '@mdp/protocol';
import { WebSocket } from 'ws';
import { MIRROR_PROOF_HEADER, createClusterNode } from '../src/index.js';
import {
  FAST,
  Faults,
  LeaderHistory,
  agreedLeader,
  attachClient,
  live,
  metaDocumentOf,
  skillClient,
  startCluster,
  startNode,
  until,
  type TestNode,
} from './harness.js';

const running: TestNode[] = [];

afterEach(async () => {
  const nodes = running.splice(0);
  await Promise.all(nodes.map((n) => n.stop()));
  for (const n of nodes) expect(n.node.activeTimers, `timers left on ${n.id}`).toBe(0);
});

async function cluster(...args: Parameters<typeof startCluster>): Promise<TestNode[]> {
  const nodes = await startCluster(...args);
  running.push(...nodes);
  return nodes;
}

/** Generous: a lease, the longest election time-out, and slack for a loaded machine. */
const CONVERGE_MS = FAST.leaseDurationMs + FAST.electionTimeoutMaxMs + 4000;

describe('a three-node cluster', () => {
  it('elects exactly one leader that every node follows, and reports it in the metadata', async () => {
    const nodes = await cluster(3);
    const history = new LeaderHistory();
    history.watch(nodes);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'one agreed leader');
    const leader = agreedLeader(nodes) as TestNode;
    await until(() => nodes.every((n) => n.node.meta().reachableMemberCount === 3), CONVERGE_MS, 'all reachable');
    for (const n of nodes) {
      const doc = metaDocumentOf(n.id, n.port, n.node);
      expect(parseMetaDocument(doc).ok).toBe(true);
      expect(doc.cluster).toMatchObject({
        id: 'test',
        membershipMode: 'dynamic',
        membershipFingerprint: 'dynamic',
        role: n === leader ? 'leader' : 'follower',
        leaderId: leader.id,
        leaderUrl: `ws://127.0.0.1:${leader.port}`,
        leaseDurationMs: FAST.leaseDurationMs,
        knownMemberCount: 3,
        reachableMemberCount: 3,
        quorumSize: 2,
        hasQuorum: true,
      });
      expect(doc.features).toEqual({ upstreamProxy: true, clusterControl: true });
    }
    expect(history.violations).toEqual([]);
  });

  it('elects at once when the leader stops gracefully (resign), without waiting for a time-out', async () => {
    // Election time-outs far beyond the test's bound: only the resign path can elect in time.
    const slow = { electionTimeoutMinMs: 60_000, electionTimeoutMaxMs: 90_000 };
    const nodes = await cluster(3, () => slow);
    const history = new LeaderHistory();
    history.watch(nodes);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'first leader');
    const first = agreedLeader(nodes) as TestNode;
    const firstTerm = first.node.meta().term;
    const stoppedAt = systemClock.now();
    await first.stop();
    await until(() => agreedLeader(nodes) !== undefined, 5000, 'a new leader after resign');
    const second = agreedLeader(nodes) as TestNode;
    expect(second.id).not.toBe(first.id);
    expect(second.node.meta().term).toBeGreaterThan(firstTerm);
    expect(
      second.logs.some((l) => l.event === 'cluster.leader_resigned') || live(nodes).some((n) => n.logs.some((l) => l.event === 'cluster.leader_resigned')),
    ).toBe(true);
    expect(history.violations).toEqual([]);
    process.stdout.write(`graceful failover took ${systemClock.now() - stoppedAt} ms\n`);
    // The one that stopped said it leaves: two members are left, both needed. The new leader may be
    // elected before its own node has applied that departure (CI saw 3 members at that instant).
    await until(() => second.node.meta().knownMemberCount === 2, 5000, 'the departure applied on the new leader');
    expect(second.node.meta()).toMatchObject({ knownMemberCount: 2, quorumSize: 2, hasQuorum: true });
  });

  it('replaces a killed leader (links closed, no resign) through the closed links, without waiting for a time-out', async () => {
    const slow = { electionTimeoutMinMs: 60_000, electionTimeoutMaxMs: 90_000 };
    const nodes = await cluster(3, () => slow);
    const history = new LeaderHistory();
    history.watch(nodes);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'first leader');
    const first = agreedLeader(nodes) as TestNode;
    const killedAt = systemClock.now();
    await first.kill();
    await until(() => agreedLeader(nodes) !== undefined, 5000, 'a new leader after the kill');
    expect(agreedLeader(nodes)?.id).not.toBe(first.id);
    expect(live(nodes).some((n) => n.logs.some((l) => l.event === 'cluster.leader_link_lost'))).toBe(true);
    expect(history.violations).toEqual([]);
    process.stdout.write(`failover after kill took ${systemClock.now() - killedAt} ms\n`);
  });

  it('replaces a killed leader within a lease plus the longest election time-out', async () => {
    const nodes = await cluster(3);
    const history = new LeaderHistory();
    history.watch(nodes);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'first leader');
    const first = agreedLeader(nodes) as TestNode;
    await first.kill();
    await until(() => agreedLeader(nodes) !== undefined, FAST.leaseDurationMs + FAST.electionTimeoutMaxMs + 1000, 'a new leader');
    expect(agreedLeader(nodes)?.id).not.toBe(first.id);
    expect(history.violations).toEqual([]);
  });

  it('a leader cut off from both followers steps down; the majority side elects; healed, one leader remains', async () => {
    const faults = new Faults();
    const nodes = await cluster(3, () => ({}), faults);
    const history = new LeaderHistory();
    history.watch(nodes);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'first leader');
    const first = agreedLeader(nodes) as TestNode;
    const others = nodes.filter((n) => n !== first);
    for (const o of others) faults.cut(first.id, o.id);
    await until(() => first.node.meta().role !== 'leader', CONVERGE_MS, 'the cut-off leader to step down');
    await until(() => agreedLeader(others) !== undefined, CONVERGE_MS, 'a leader on the majority side');
    faults.healAll();
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'one leader after healing');
    history.sample(nodes);
    expect(history.violations).toEqual([]);
  });

  it('a follower cut off from the others cannot disturb the leader when it returns (pre-vote)', async () => {
    const faults = new Faults();
    const nodes = await cluster(3, () => ({}), faults);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'first leader');
    const leader = agreedLeader(nodes) as TestNode;
    const term = leader.node.meta().term;
    const loner = nodes.find((n) => n !== leader) as TestNode;
    for (const n of nodes) if (n !== loner) faults.cut(loner.id, n.id);
    // Alone it keeps trying pre-votes; none gets through, so its term never moves.
    const preVotes = () => loner.logs.filter((l) => l.event === 'cluster.pre_vote').length;
    await until(() => preVotes() >= 3, CONVERGE_MS * 2, 'the loner to try three pre-votes');
    expect(loner.node.meta().term).toBe(term);
    expect(loner.node.meta().hasQuorum).toBe(false);
    faults.healAll();
    await until(() => agreedLeader(nodes) === leader && loner.node.meta().leaderId === leader.id, CONVERGE_MS, 'the loner to follow again');
    expect(leader.node.meta().term).toBe(term);
  });

  it('a server the others never discovered (it only dialed in) is an observer: it follows and mirrors, but is not counted', async () => {
    const nodes = await cluster(3);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'a leader');
    const leader = agreedLeader(nodes) as TestNode;
    const observer = await startNode({ discovery: { seedUrls: nodes.map((n) => n.baseUrl) } });
    running.push(observer);
    await until(() => observer.node.meta().leaderId === leader.id, CONVERGE_MS, 'the observer to follow');
    attachClient(observer.router, skillClient('seen'));
    await until(() => leader.router.getClient(mirroredId(observer.id, 'seen')) !== undefined, 3000, 'its mirror on the leader');
    for (const n of nodes) expect(n.node.meta().knownMemberCount).toBe(3);
    expect(observer.node.meta()).toMatchObject({ role: 'follower', knownMemberCount: 4 });
    expect(agreedLeader(nodes)).toBe(leader);
  });

  it('closes cleanly: no timer is left, and a second close is a no-op', async () => {
    const nodes = await cluster(2);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'a leader');
    for (const n of nodes) {
      await n.stop();
      expect(n.node.activeTimers).toBe(0);
      await n.node.close();
    }
  });
});

describe('a pair', () => {
  it('the survivor of a killed leader leads alone once its port refuses', async () => {
    const nodes = await cluster(2);
    const history = new LeaderHistory();
    history.watch(nodes);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'first leader');
    const first = agreedLeader(nodes) as TestNode;
    const survivor = nodes.find((n) => n !== first) as TestNode;
    await first.kill();
    await until(() => survivor.node.meta().role === 'leader', CONVERGE_MS, 'the survivor to lead');
    expect(survivor.node.meta()).toMatchObject({ knownMemberCount: 1, quorumSize: 1, hasQuorum: true });
    expect(survivor.logs).toContainEqual(expect.objectContaining({ event: 'cluster.member_departed', id: first.id, reason: 'refused' }));
    expect(history.violations).toEqual([]);
  });

  it('a leader whose follower stops keeps leading: the follower said it leaves', async () => {
    const nodes = await cluster(2);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'first leader');
    const leader = agreedLeader(nodes) as TestNode;
    const term = leader.node.meta().term;
    const follower = nodes.find((n) => n !== leader) as TestNode;
    await follower.stop();
    await until(() => leader.node.meta().knownMemberCount === 1, CONVERGE_MS, 'the follower to be gone');
    expect(leader.logs).toContainEqual(expect.objectContaining({ event: 'cluster.member_departed', id: follower.id, reason: 'left' }));
    expect(leader.logs.some((l) => l.event === 'cluster.step_down')).toBe(false);
    expect(leader.node.meta()).toMatchObject({ role: 'leader', term, hasQuorum: true });
  });

  it('a member that is cut off but still answers at its address stays counted: no second leader', async () => {
    const faults = new Faults();
    const nodes = await cluster(2, () => ({}), faults);
    const history = new LeaderHistory();
    history.watch(nodes);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'first leader');
    const [a, b] = nodes as [TestNode, TestNode];
    faults.cut(a.id, b.id);
    // Both keep trying; neither can get a majority of two, and neither forgets the other.
    const preVotes = (n: TestNode) => n.logs.filter((l) => l.event === 'cluster.pre_vote').length;
    await until(() => preVotes(a) >= 3 && preVotes(b) >= 3, CONVERGE_MS * 2, 'both to try three pre-votes');
    for (const n of nodes) expect(n.node.meta()).toMatchObject({ knownMemberCount: 2, hasQuorum: false });
    expect(nodes.filter((n) => n.node.meta().role === 'leader')).toHaveLength(0);
    faults.healAll();
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'one leader after healing');
    history.sample(nodes);
    expect(history.violations).toEqual([]);
  });

  it('two servers with different cluster secrets on one range are two clusters, each with its own leader', async () => {
    const nodes = await cluster(2, (i) => ({ clusterSecret: `secret of user ${i}` }));
    await until(() => nodes.every((n) => n.node.meta().role === 'leader'), CONVERGE_MS * 2, 'both to lead');
    for (const n of nodes) {
      expect(n.node.meta()).toMatchObject({ knownMemberCount: 1, leaderId: n.id });
      expect(n.logs).toContainEqual(expect.objectContaining({ event: 'cluster.peer_refused', reason: 'no valid cluster secret proof' }));
    }
  });
});

describe('mirror proofs under a cluster secret', () => {
  it('are accepted once: a copy on a new connection proves nothing, a mirror that reconnects proves itself afresh', async () => {
    const nodes = await cluster(2, () => ({ clusterSecret: 's3cret' }));
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'a leader');
    const leader = agreedLeader(nodes) as TestNode;
    const follower = nodes.find((n) => n !== leader) as TestNode;
    attachClient(follower.router, skillClient('x'));
    const upstreamId = mirroredId(follower.id, 'x');
    await until(() => leader.router.hasClient(upstreamId), CONVERGE_MS, 'the mirror on the leader');
    const first = leader.mdpUpgrades.at(-1);
    expect(first).toMatchObject({ proof: expect.any(String), peer: { serverId: follower.id } });

    // Someone who saw that upgrade presents its proof again.
    const copy = new WebSocket(`ws://127.0.0.1:${leader.port}`, { headers: { [MIRROR_PROOF_HEADER]: first?.proof as string } });
    await new Promise((resolve, reject) => copy.once('open', resolve).once('error', reject));
    expect(leader.mdpUpgrades.at(-1)).toEqual({ proof: first?.proof, peer: undefined });
    expect(leader.logs).toContainEqual(expect.objectContaining({ event: 'cluster.proof_replayed', kind: 'mirror', peer: follower.id, level: 'warn' }));
    copy.terminate();

    // The mirror's own next connection carries a new proof, which is accepted.
    const upgrades = leader.mdpUpgrades.length;
    leader.dropMdpSockets();
    await until(() => leader.mdpUpgrades.length > upgrades && leader.router.hasClient(upstreamId), CONVERGE_MS, 'the mirror back');
    const again = leader.mdpUpgrades.at(-1);
    expect(again?.proof).not.toBe(first?.proof);
    expect(again?.peer).toEqual({ serverId: follower.id });
    expect(leader.node.rememberedProofs).toBeGreaterThanOrEqual(2);
    await leader.stop();
    expect(leader.node.rememberedProofs).toBe(0);
  });
});

describe('standalone mode', () => {
  it('is always leader of one in term 0, with no timers and no cluster control', async () => {
    const router = new Router();
    const node = createClusterNode({ router, serverId: '127.0.0.1:1', clusterId: 'solo', mode: 'standalone' });
    node.start({ wsUrl: 'ws://127.0.0.1:1', clusterUrl: 'ws://127.0.0.1:1/mdp/cluster', metaUrl: 'http://127.0.0.1:1/mdp/meta' });
    expect(node.meta()).toEqual({
      id: 'solo',
      membershipMode: 'dynamic',
      membershipFingerprint: 'dynamic',
      role: 'leader',
      term: 0,
      leaderId: '127.0.0.1:1',
      leaderUrl: 'ws://127.0.0.1:1',
      leaseDurationMs: 4000,
      knownMemberCount: 1,
      reachableMemberCount: 1,
      quorumSize: 1,
      hasQuorum: true,
    });
    expect(node.features()).toEqual({ upstreamProxy: false, clusterControl: false });
    // No cluster, so no server ids under which client ids alias each other: not even its own.
    expect(node.isServerId('127.0.0.1:1')).toBe(false);
    expect(node.activeTimers).toBe(0);
    await node.close();
    await router.close();
  });

  it('a lone auto node elects itself after an election time-out', async () => {
    const nodes = await cluster(1);
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'the lone node to lead');
    expect(nodes[0]?.node.meta()).toMatchObject({ role: 'leader', term: 1, knownMemberCount: 1, quorumSize: 1, hasQuorum: true });
  });
});
