/**
 * Three real `mdp-server` processes in auto mode on loopback: they find each other over a port
 * range, elect one leader, and survive SIGKILL of it.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '@mdp/core';
import { freePorts, removeScratch, scratchDir } from '@mdp/test-kit';
import { FAST_CLUSTER, agreedLeader, kill, killAll, logged, metaOf, spawnServer, terminate, type Proc } from './processes.js';

const state = scratchDir('mdp-proc-');

afterEach(() => killAll());
afterAll(() => removeScratch());

const id = (p: Proc): string => `127.0.0.1:${p.port}`;

describe('three mdp-server processes in auto mode', () => {
  it('find each other, elect one leader, and replace it when it is killed', { timeout: 60_000 }, async () => {
    // No member listens on the range's first port, the default port the leader takes as well: one
    // that started late would find it held by a leader elected without it and have to ask for it
    // back (port-back.process.e2e.test.ts), which this test is not about.
    const [start, ...ports] = (await freePorts(4)) as [number, ...number[]];
    const clusterId = `proc-${start}`;
    const procs = ports.map((port) => spawnServer({ port, rangeStart: start, rangeSize: 4, stateDir: state, clusterId, extra: FAST_CLUSTER }));

    // Each process prints one line saying whether it leads or whom it follows; they agree.
    const first = await agreedLeader(procs, 20_000);
    const rest = procs.filter((p) => p !== first);
    // A process that started listening a little later may be agreed on (it dialled in and follows)
    // before the leader's own discovery counts it as a member: wait for that.
    await Promise.all(rest.map((p) => logged(first, 'cluster.member_joined', { id: id(p) })));
    const firstMeta = (await metaOf(first.port)).cluster;
    expect(firstMeta).toMatchObject({ id: clusterId, knownMemberCount: 3, quorumSize: 2, hasQuorum: true });
    expect(first.stdout).toMatch(/this node is the leader/);

    const killedAt = systemClock.now();
    await kill(first);
    const second = await agreedLeader(rest, 10_000);
    const failoverMs = systemClock.now() - killedAt;
    // The killed one is proven gone (its port refuses): two members are left, both needed.
    await logged(second, 'cluster.member_departed', { id: id(first) });
    const secondMeta = (await metaOf(second.port)).cluster;
    expect(secondMeta.term).toBeGreaterThan(firstMeta.term);
    expect(secondMeta).toMatchObject({ knownMemberCount: 2, quorumSize: 2, hasQuorum: true });
    process.stdout.write(`multi-process failover after SIGKILL: ${failoverMs} ms\n`);

    for (const p of rest) expect(await terminate(p)).toEqual({ code: 0, signal: null });
  });
});
