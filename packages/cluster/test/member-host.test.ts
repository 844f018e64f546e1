/**
 * A member's host API put together (member-host.ts): two members whose control link is a function
 * call through JSON, a manual clock, and the election's view set by the test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Router, createLocalHost, silentLogger } from '@mdp/core';
import type { ClusterMessage } from '@mdp/protocol';
import { manualClock } from '@mdp/test-kit';
import { TimerSet } from '../src/clock.js';
import type { LeaderView } from '../src/election-driver.js';
import { createMemberHost, type MemberHost } from '../src/member-host.js';
import { resolveOptions } from '../src/options.js';
import { scriptedClient } from './harness.js';

const LEADER: LeaderView = { role: 'leader', term: 7, leaderId: 'L', leaderUrl: 'ws://l' };
const FOLLOWER: LeaderView = { role: 'follower', term: 7, leaderId: 'L', leaderUrl: 'ws://l' };

interface Member {
  readonly id: string;
  readonly router: Router;
  readonly timers: TimerSet;
  readonly member: MemberHost;
  view: LeaderView | undefined;
  linkUp: boolean;
  readonly sent: ClusterMessage[];
}

const clock = manualClock();
const members = new Map<string, Member>();

afterEach(async () => {
  for (const { member, timers, router } of members.values()) {
    member.hostApi.close();
    member.rpc.close();
    expect(timers.size, 'timers left after close').toBe(0);
    timers.close();
    await router.close();
  }
  members.clear();
});

/** A member `id`; what it sends reaches the member it is sent to (through JSON) while its link is up. */
function member(id: string): Member {
  const router = new Router();
  const timers = new TimerSet(clock);
  const state = { view: undefined as LeaderView | undefined, linkUp: true, sent: [] as ClusterMessage[] };
  const host = createMemberHost(resolveOptions({ router, serverId: id, clusterId: 'c', clock }), timers, silentLogger, {
    local: createLocalHost(router),
    election: () => (state.view === undefined ? undefined : { view: () => state.view as LeaderView, memberCount: () => members.size }),
    links: () => ({
      isUp: (to) => state.linkUp && members.has(to),
      // A link that always keeps up (backlog.ts is tested on its own).
      refusal: () => undefined,
      send: (to, message) => {
        const peer = members.get(to);
        if (!state.linkUp || !peer) return false;
        state.sent.push(message);
        queueMicrotask(() => peer.member.rpc.receive(id, JSON.parse(JSON.stringify(message)) as ClusterMessage));
        return true;
      },
    }),
    onRouteChange: () => () => undefined,
  });
  const self: Member = Object.assign(state, { id, router, timers, member: host });
  members.set(id, self);
  return self;
}

describe('the host API of a member', () => {
  it('answers from its own router before the node started', async () => {
    const f = member('F');
    member('L');
    scriptedClient(f.router, { id: 'mine', name: 'mine', paths: [] }, () => ({ ok: true, data: null }));
    expect((await f.member.hostApi.listClients()).clients.map((c) => c.id)).toEqual(['mine']);
    expect(f.sent).toEqual([]);
  });

  it('on a follower, asks the leader, in frames stamped with its ids, its term and the wall clock', async () => {
    const f = member('F');
    const l = member('L');
    f.view = FOLLOWER;
    l.view = LEADER;
    scriptedClient(l.router, { id: 'theirs', name: 'theirs', paths: [] }, () => ({ ok: true, data: null }));
    expect((await f.member.hostApi.listClients()).clients.map((c) => c.id)).toEqual(['theirs']);
    expect(f.sent).toEqual([
      expect.objectContaining({ type: 'clusterRpcRequest', method: 'listClients', clusterId: 'c', serverId: 'F', term: 7, timestamp: clock.wallNow() }),
    ]);
    expect(l.sent).toEqual([expect.objectContaining({ type: 'clusterRpcResponse', ok: true, clusterId: 'c', serverId: 'L', term: 7 })]);
  });

  it('a member that does not lead answers a peer not_ready', async () => {
    const f = member('F');
    const l = member('L');
    f.view = FOLLOWER;
    // L's election has moved on: it follows a third node, yet F still asks it.
    l.view = { ...FOLLOWER, leaderId: 'M' };
    const pending = f.member.rpc.request('L', 'listClients', {}, 1000);
    await expect(pending).resolves.toEqual({ kind: 'answer', ok: false, error: expect.objectContaining({ code: 'not_ready' }) });
  });

  it('sends nothing before the node started: the request is unsent', async () => {
    const f = member('F');
    member('L');
    await expect(f.member.rpc.request('L', 'listClients', {}, 1000)).resolves.toEqual({ kind: 'unsent' });
    expect(f.sent).toEqual([]);
  });
});
