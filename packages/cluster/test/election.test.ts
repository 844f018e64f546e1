import { describe, expect, it } from 'vitest';
import {
  hasQuorum,
  initialElection,
  knownMemberCount,
  quorumSize,
  reachableMemberCount,
  step,
  type ElectionConfig,
  type ElectionEffect,
  type ElectionEvent,
  type ElectionMessage,
  type ElectionState,
} from '../src/election.js';
import { seededRandom } from '../src/rng.js';

const BASE: Omit<ElectionConfig, 'selfId' | 'selfUrl'> = {
  heartbeatIntervalMs: 100,
  leaseDurationMs: 400,
  electionTimeoutMinMs: 450,
  electionTimeoutMaxMs: 700,
  voteGraceMs: 0,
  failoverStepMs: 50,
  canLead: true,
};

function config(id: string, overrides: Partial<ElectionConfig> = {}): ElectionConfig {
  return { ...BASE, selfId: id, selfUrl: `ws://${id}`, ...overrides };
}

/** A node that knows `members`, has links up to all of them and finished discovery. */
function node(id: string, members: string[], now = 0, overrides: Partial<ElectionConfig> = {}): ElectionState {
  let s = initialElection(config(id, overrides), now, 1, members);
  s = run(s, { type: 'ready' }, now).state;
  s = run(s, { type: 'discoveryRound', clean: true }, now).state;
  for (const m of members) if (m !== id) s = run(s, { type: 'linkUp', id: m }, now).state;
  return s;
}

function run(s: ElectionState, event: ElectionEvent, now: number) {
  return step(s, event, now);
}

function msg(from: string, message: ElectionMessage): ElectionEvent {
  return { type: 'message', from, message };
}

function sent(effects: readonly ElectionEffect[], type: ElectionMessage['type']): ElectionMessage[] {
  return effects.flatMap((e) => ((e.type === 'send' || e.type === 'broadcast') && e.message.type === type ? [e.message] : []));
}

/** Make `id` leader of `members` in term 1 by hand, at time `now`. */
function leaderOf(id: string, members: string[], now = 1000) {
  let s = node(id, members, 0);
  const others = members.filter((m) => m !== id);
  s = run(s, { type: 'tick' }, now).state; // pre-vote
  for (const o of others) s = run(s, msg(o, { type: 'voteResponse', term: 0, granted: true, preVote: true }), now).state;
  for (const o of others) s = run(s, msg(o, { type: 'voteResponse', term: 1, granted: true, preVote: false }), now).state;
  return s;
}

describe('quorum', () => {
  it('is a majority of the known members', () => {
    expect([1, 2, 3, 4, 5].map(quorumSize)).toEqual([1, 2, 2, 3, 3]);
  });

  it('counts known members, not only the reachable ones', () => {
    let s = node('a', ['a', 'b', 'c'], 0);
    s = run(s, { type: 'linkDown', id: 'b' }, 10).state;
    s = run(s, { type: 'linkDown', id: 'c' }, 10).state;
    expect(knownMemberCount(s)).toBe(3);
    expect(reachableMemberCount(s, 10)).toBe(1);
    expect(hasQuorum(s, 10)).toBe(false);
  });
});

describe('election', () => {
  it('a node with no leader pre-votes for term+1 without changing its term', () => {
    const s = node('a', ['a', 'b', 'c']);
    expect(s.electionAt).toBeGreaterThanOrEqual(450);
    expect(s.electionAt).toBeLessThanOrEqual(700);
    const r = run(s, { type: 'tick' }, s.electionAt);
    expect(r.state.term).toBe(0);
    expect(r.state.votedFor).toBeUndefined();
    expect(r.state.role).toBe('follower');
    expect(sent(r.effects, 'voteRequest')).toEqual([{ type: 'voteRequest', term: 1, preVote: true }]);
  });

  it('a majority of positive pre-votes starts the real election', () => {
    let s = node('a', ['a', 'b', 'c']);
    s = run(s, { type: 'tick' }, 1000).state;
    const r = run(s, msg('b', { type: 'voteResponse', term: 0, granted: true, preVote: true }), 1001);
    expect(r.state.role).toBe('candidate');
    expect(r.state.term).toBe(1);
    expect(r.state.votedFor).toBe('a');
    expect(sent(r.effects, 'voteRequest')).toEqual([{ type: 'voteRequest', term: 1, preVote: false }]);
  });

  it('a candidate with two votes of three becomes leader', () => {
    let s = node('a', ['a', 'b', 'c']);
    s = run(s, { type: 'tick' }, 1000).state;
    s = run(s, msg('b', { type: 'voteResponse', term: 0, granted: true, preVote: true }), 1001).state;
    const r = run(s, msg('c', { type: 'voteResponse', term: 1, granted: true, preVote: false }), 1002);
    expect(r.state.role).toBe('leader');
    expect(r.state.leaderId).toBe('a');
    expect(sent(r.effects, 'heartbeat')).toEqual([{ type: 'heartbeat', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }]);
    expect(r.wakeAt).toBe(1102);
  });

  it('one vote of five is not enough; refusals and duplicates do not count', () => {
    let s = node('a', ['a', 'b', 'c', 'd', 'e']);
    s = run(s, { type: 'tick' }, 1000).state;
    s = run(s, msg('b', { type: 'voteResponse', term: 0, granted: true, preVote: true }), 1001).state;
    s = run(s, msg('b', { type: 'voteResponse', term: 0, granted: true, preVote: true }), 1001).state;
    s = run(s, msg('c', { type: 'voteResponse', term: 0, granted: false, preVote: true }), 1001).state;
    expect(s.role).toBe('follower');
    s = run(s, msg('d', { type: 'voteResponse', term: 0, granted: true, preVote: true }), 1001).state;
    expect(s.role).toBe('candidate');
    s = run(s, msg('b', { type: 'voteResponse', term: 1, granted: true, preVote: false }), 1002).state;
    s = run(s, msg('b', { type: 'voteResponse', term: 1, granted: true, preVote: false }), 1002).state;
    expect(s.role).toBe('candidate');
    s = run(s, msg('e', { type: 'voteResponse', term: 1, granted: true, preVote: false }), 1002).state;
    expect(s.role).toBe('leader');
  });

  it('a lone known member elects itself once membership is ready and a clean round confirms it is alone', () => {
    let s = initialElection(config('a'), 0, 1);
    s = run(s, { type: 'tick' }, s.electionAt).state;
    expect(s.role).toBe('follower');
    s = run(s, { type: 'ready' }, 800).state;
    s = run(s, { type: 'discoveryRound', clean: false }, 800).state;
    s = run(s, { type: 'tick' }, s.electionAt).state;
    expect(s.role).toBe('follower');
    s = run(s, { type: 'discoveryRound', clean: true }, 800).state;
    s = run(s, { type: 'discoveryRound', clean: false }, 800).state;
    s = run(s, { type: 'tick' }, s.electionAt).state;
    expect(s.role).toBe('leader');
    expect(s.term).toBe(1);
  });

  it('does not stand before a clean discovery round, but still votes', () => {
    let s = initialElection(config('c'), 0, 1, ['a', 'b', 'c']);
    s = run(s, { type: 'ready' }, 0).state;
    const r = run(s, { type: 'tick' }, 5000);
    expect(sent(r.effects, 'voteRequest')).toEqual([]);
    const vote = run(r.state, msg('a', { type: 'voteRequest', term: 1, preVote: false }), 5000);
    expect(sent(vote.effects, 'voteResponse')[0]).toMatchObject({ granted: true });
  });

  it('elects soon after start when discovery saw no leader, but not before the grace', () => {
    let s = initialElection(config('a', { voteGraceMs: 200 }), 0, 1, ['a', 'b', 'c']);
    s = run(s, { type: 'discoveryRound', clean: true }, 0).state;
    s = run(s, { type: 'linkUp', id: 'b' }, 10).state;
    const r = run(s, { type: 'ready', leaderSeen: false }, 50);
    expect(r.wakeAt).toBeGreaterThanOrEqual(200);
    expect(r.wakeAt).toBeLessThan(250);
    const seen = run(s, { type: 'ready', leaderSeen: true }, 50);
    expect(seen.wakeAt).toBeGreaterThanOrEqual(450);
  });

  it('a node that found nobody waits the whole time-out before electing itself alone', () => {
    const s = initialElection(config('a', { voteGraceMs: 200 }), 0, 1);
    const r = run(s, { type: 'ready', leaderSeen: false }, 50);
    expect(r.wakeAt).toBeGreaterThanOrEqual(450);
  });

  it('refuses votes until ready', () => {
    const s = initialElection(config('c'), 0, 1, ['a', 'b', 'c']);
    const r = run(s, msg('a', { type: 'voteRequest', term: 1, preVote: false }), 5000);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: false });
  });

  it('a node that may not lead never stands', () => {
    let s = node('a', ['a'], 0, { canLead: false });
    s = run(s, { type: 'discoveryRound', clean: true }, 0).state;
    const r = run(s, { type: 'tick' }, 10_000);
    s = r.state;
    expect(s.role).toBe('follower');
    expect(r.wakeAt).toBeUndefined();
  });
});

describe('observers', () => {
  it('ignores heartbeats, votes and links of a peer that is not a known member', () => {
    const s = node('a', ['a', 'b', 'c']);
    let r = run(s, msg('x', { type: 'heartbeat', term: 9, leaderId: 'x', leaderUrl: 'ws://x', leaseDurationMs: 400 }), 100);
    expect(r.state).toBe(s);
    expect(r.effects).toEqual([]);
    r = run(s, msg('x', { type: 'voteRequest', term: 9, preVote: false }), 100);
    expect(r.state).toBe(s);
    r = run(s, { type: 'linkUp', id: 'x' }, 100);
    expect(knownMemberCount(r.state)).toBe(3);
  });

  it("a candidate does not count an observer's vote", () => {
    let s = node('a', ['a', 'b', 'c']);
    s = run(s, { type: 'tick' }, 1000).state;
    s = run(s, msg('x', { type: 'voteResponse', term: 0, granted: true, preVote: true }), 1001).state;
    expect(s.role).toBe('follower');
  });
});

describe('voting', () => {
  it('grants one vote per term', () => {
    let s = node('c', ['a', 'b', 'c']);
    let r = run(s, msg('a', { type: 'voteRequest', term: 1, preVote: false }), 1000);
    expect(sent(r.effects, 'voteResponse')).toEqual([{ type: 'voteResponse', term: 1, granted: true, preVote: false }]);
    s = r.state;
    r = run(s, msg('b', { type: 'voteRequest', term: 1, preVote: false }), 1001);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: false });
    r = run(r.state, msg('a', { type: 'voteRequest', term: 1, preVote: false }), 1002);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: true });
  });

  it('refuses an older term and answers with its own', () => {
    let s = node('c', ['a', 'b', 'c']);
    s = run(s, msg('a', { type: 'heartbeat', term: 4, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 100).state;
    const r = run(s, msg('b', { type: 'voteRequest', term: 3, preVote: false }), 1000);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ term: 4, granted: false });
  });

  it('a follower with a live lease refuses both pre-votes and votes and keeps its term', () => {
    let s = node('c', ['a', 'b', 'c']);
    s = run(s, msg('a', { type: 'heartbeat', term: 2, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 100).state;
    let r = run(s, msg('b', { type: 'voteRequest', term: 3, preVote: true }), 200);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: false, preVote: true, leaderId: 'a' });
    r = run(r.state, msg('b', { type: 'voteRequest', term: 3, preVote: false }), 200);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: false, term: 2 });
    expect(r.state.term).toBe(2);
    expect(r.state.leaderId).toBe('a');
  });

  it('a pre-vote changes no state', () => {
    const s = node('c', ['a', 'b', 'c']);
    const r = run(s, msg('b', { type: 'voteRequest', term: 7, preVote: true }), 1000);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: true, preVote: true, term: 0 });
    expect(r.state.term).toBe(0);
    expect(r.state.votedFor).toBeUndefined();
  });

  it('a leader refuses pre-votes', () => {
    const s = leaderOf('a', ['a', 'b', 'c']);
    const r = run(s, msg('b', { type: 'voteRequest', term: 2, preVote: true }), 1010);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: false });
    expect(r.state.role).toBe('leader');
  });

  it('during the start-up grace it refuses, and never votes in a term it saw then', () => {
    let s = node('c', ['a', 'b', 'c'], 0, { voteGraceMs: 500 });
    let r = run(s, msg('a', { type: 'voteRequest', term: 5, preVote: false }), 100);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: false });
    s = r.state;
    expect(s.voteFloor).toBe(5);
    r = run(s, msg('b', { type: 'voteRequest', term: 5, preVote: false }), 600);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: false });
    r = run(r.state, msg('b', { type: 'voteRequest', term: 6, preVote: false }), 600);
    expect(sent(r.effects, 'voteResponse')[0]).toMatchObject({ granted: true, term: 6 });
  });

  it('stands above the vote floor', () => {
    let s = node('c', ['a', 'b', 'c'], 0, { voteGraceMs: 500 });
    s = run(s, msg('a', { type: 'hello', term: 3, role: 'candidate' }), 10).state;
    const r = run(s, { type: 'tick' }, 5000);
    expect(sent(r.effects, 'voteRequest')).toEqual([{ type: 'voteRequest', term: 4, preVote: true }]);
  });
});

describe('leases and stepping down', () => {
  it('a heartbeat makes a follower and renews the lease; the election waits past it', () => {
    const s = node('b', ['a', 'b', 'c']);
    const r = run(s, msg('a', { type: 'heartbeat', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 100);
    expect(r.state).toMatchObject({ role: 'follower', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseExpiresAt: 500 });
    expect(r.state.electionAt).toBeGreaterThanOrEqual(550);
    expect(sent(r.effects, 'heartbeatAck')).toEqual([{ type: 'heartbeatAck', term: 1, leaderId: 'a' }]);
  });

  it('a leader seeing a higher term steps down', () => {
    const s = leaderOf('a', ['a', 'b', 'c']);
    const r = run(s, msg('b', { type: 'heartbeatAck', term: 5, leaderId: 'c' }), 1010);
    expect(r.state.role).toBe('follower');
    expect(r.state.term).toBe(5);
    expect(r.state.leaderId).toBeUndefined();
  });

  it('a stale leader is told the newer term by its old follower', () => {
    let s = node('b', ['a', 'b', 'c']);
    s = run(s, msg('c', { type: 'heartbeat', term: 3, leaderId: 'c', leaderUrl: 'ws://c', leaseDurationMs: 400 }), 100).state;
    const r = run(s, msg('a', { type: 'heartbeat', term: 2, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 110);
    expect(r.state.leaderId).toBe('c');
    expect(r.effects).toContainEqual({ type: 'send', to: 'a', message: { type: 'heartbeatAck', term: 3, leaderId: 'c' } });
  });

  it('a leader steps down when acks from a quorum stop within the lease', () => {
    let s = leaderOf('a', ['a', 'b', 'c'], 1000);
    s = run(s, msg('b', { type: 'heartbeatAck', term: 1, leaderId: 'a' }), 1100).state;
    s = run(s, { type: 'tick' }, 1100).state;
    expect(s.role).toBe('leader');
    s = run(s, { type: 'tick' }, 1450).state;
    expect(s.role).toBe('leader');
    s = run(s, { type: 'tick' }, 1550).state;
    expect(s.role).toBe('follower');
  });

  it('a leader whose links all close steps down once the grace window has passed', () => {
    let s = leaderOf('a', ['a', 'b', 'c'], 1000);
    s = run(s, msg('b', { type: 'heartbeatAck', term: 1, leaderId: 'a' }), 1400).state;
    s = run(s, msg('c', { type: 'heartbeatAck', term: 1, leaderId: 'a' }), 1400).state;
    s = run(s, { type: 'linkDown', id: 'b' }, 1500).state;
    expect(s.role).toBe('leader');
    s = run(s, { type: 'linkDown', id: 'c' }, 1500).state;
    expect(s.role).toBe('follower');
  });

  it('a frozen leader does not send a heartbeat on a stale lease when it wakes', () => {
    const s = leaderOf('a', ['a', 'b', 'c'], 1000);
    const r = run(s, { type: 'tick' }, 9000);
    expect(r.state.role).toBe('follower');
    expect(sent(r.effects, 'heartbeat')).toEqual([]);
  });
});

describe('fast failover', () => {
  it('the leader link closing drops the lease and schedules a pre-vote within a failover step', () => {
    let s = node('b', ['a', 'b', 'c']);
    s = run(s, msg('a', { type: 'heartbeat', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 100).state;
    const r = run(s, { type: 'linkDown', id: 'a' }, 120);
    expect(r.state.leaseExpiresAt).toBe(0);
    expect(r.state.leaderId).toBeUndefined();
    // b ranks first of the survivors {b, c}
    expect(r.wakeAt).toBeGreaterThanOrEqual(120 + 5);
    expect(r.wakeAt).toBeLessThanOrEqual(120 + 25);
    const r2 = run(r.state, { type: 'tick' }, r.wakeAt as number);
    expect(sent(r2.effects, 'voteRequest')).toEqual([{ type: 'voteRequest', term: 2, preVote: true }]);
  });

  it('survivors are staggered by rank', () => {
    let s = node('c', ['a', 'b', 'c']);
    s = run(s, msg('a', { type: 'heartbeat', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 100).state;
    const r = run(s, { type: 'linkDown', id: 'a' }, 120);
    expect(r.wakeAt).toBeGreaterThanOrEqual(120 + 50);
    expect(r.wakeAt).toBeLessThanOrEqual(120 + 75);
  });

  it('a peer that lost the leader too grants; a peer still holding a lease refuses', () => {
    const hb: ElectionMessage = { type: 'heartbeat', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 };
    let lost = node('c', ['a', 'b', 'c']);
    lost = run(lost, msg('a', hb), 100).state;
    lost = run(lost, { type: 'linkDown', id: 'a' }, 110).state;
    let holding = node('d', ['a', 'b', 'c', 'd']);
    holding = run(holding, msg('a', hb), 100).state;
    const pre: ElectionEvent = msg('b', { type: 'voteRequest', term: 2, preVote: true });
    expect(sent(run(lost, pre, 130).effects, 'voteResponse')[0]).toMatchObject({ granted: true });
    expect(sent(run(holding, pre, 130).effects, 'voteResponse')[0]).toMatchObject({ granted: false });
  });

  it('a resign makes followers elect at once', () => {
    let s = node('b', ['a', 'b', 'c']);
    s = run(s, msg('a', { type: 'heartbeat', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 100).state;
    const r = run(s, msg('a', { type: 'resign', term: 1, leaderId: 'a' }), 150);
    expect(r.state.leaderId).toBeUndefined();
    expect(r.wakeAt).toBeLessThanOrEqual(150 + 25);
  });

  it('stopping as leader broadcasts a resign; a stopped node neither stands nor votes', () => {
    const s = leaderOf('a', ['a', 'b', 'c']);
    const r = run(s, { type: 'stop' }, 1010);
    expect(sent(r.effects, 'resign')).toEqual([{ type: 'resign', term: 1, leaderId: 'a', leaving: true }]);
    expect(r.wakeAt).toBeUndefined();
    const r2 = run(r.state, msg('b', { type: 'voteRequest', term: 2, preVote: false }), 1020);
    expect(sent(r2.effects, 'voteResponse')[0]).toMatchObject({ granted: false });
  });
});

describe('members gone for good', () => {
  it('a survivor of a pair whose leader is gone elects itself alone', () => {
    let b = node('b', ['a', 'b']);
    b = run(b, msg('a', { type: 'heartbeat', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 100).state;
    b = run(b, { type: 'linkDown', id: 'a' }, 120).state;
    // The pre-vote finds no majority of two: nobody answers.
    b = run(b, { type: 'tick' }, b.electionAt).state;
    expect(b.role).toBe('follower');
    const r = run(b, { type: 'memberGone', id: 'a' }, 400);
    expect(knownMemberCount(r.state)).toBe(1);
    const elected = run(r.state, { type: 'tick' }, r.wakeAt as number);
    expect(elected.state).toMatchObject({ role: 'leader', term: 2, leaderId: 'b' });
    expect(hasQuorum(elected.state, r.wakeAt as number)).toBe(true);
  });

  it('a round in flight is dropped: the gone member may have voted elsewhere in it; a new round elects', () => {
    let a = node('a', ['a', 'b', 'c']);
    a = run(a, { type: 'tick' }, 1000).state;
    a = run(a, msg('b', { type: 'voteResponse', term: 0, granted: true, preVote: true }), 1001).state;
    expect(a).toMatchObject({ role: 'candidate', term: 1 });
    // c is gone. A late yes for term 1 must not make a leader against the smaller set.
    let r = run(a, { type: 'memberGone', id: 'c' }, 1002);
    expect(r.state).toMatchObject({ role: 'follower', votes: [], preVote: undefined });
    r = run(r.state, msg('b', { type: 'voteResponse', term: 1, granted: true, preVote: false }), 1003);
    expect(r.state.role).toBe('follower');
    // The new round, in term 2, counts two members.
    r = run(r.state, { type: 'tick' }, r.state.electionAt);
    expect(sent(r.effects, 'voteRequest')).toEqual([{ type: 'voteRequest', term: 2, preVote: true }]);
    r = run(r.state, msg('b', { type: 'voteResponse', term: 1, granted: true, preVote: true }), r.state.electionAt);
    r = run(r.state, msg('b', { type: 'voteResponse', term: 2, granted: true, preVote: false }), r.state.electionAt);
    expect(r.state).toMatchObject({ role: 'leader', term: 2 });
  });

  it('a candidate alone after its peer is gone leads in a new term', () => {
    let a = node('a', ['a', 'b']);
    a = run(a, { type: 'tick' }, 1000).state;
    a = run(a, msg('b', { type: 'voteResponse', term: 0, granted: true, preVote: true }), 1001).state;
    expect(a).toMatchObject({ role: 'candidate', term: 1 });
    const r = run(a, { type: 'memberGone', id: 'b' }, 1002);
    const elected = run(r.state, { type: 'tick' }, r.wakeAt as number);
    expect(elected.state).toMatchObject({ role: 'leader', term: 2 });
  });

  it('a gone member no longer counts towards a leader quorum, so the leader keeps leading', () => {
    let s = leaderOf('a', ['a', 'b'], 1000);
    s = run(s, { type: 'memberGone', id: 'b' }, 1100).state;
    s = run(s, { type: 'linkDown', id: 'b' }, 1100).state;
    s = run(s, { type: 'tick' }, 9000).state;
    expect(s.role).toBe('leader');
    expect(knownMemberCount(s)).toBe(1);
  });

  it('a discovered member is known again after it was gone', () => {
    let s = leaderOf('a', ['a', 'b'], 1000);
    s = run(s, { type: 'memberGone', id: 'b' }, 1100).state;
    s = run(s, { type: 'memberKnown', id: 'b' }, 1200).state;
    expect(knownMemberCount(s)).toBe(2);
    // One lease for the newcomer to ack before the quorum is checked.
    expect(run(s, { type: 'tick' }, 1500).state.role).toBe('leader');
  });

  it('never elects at or below a term stored by a member on this host, nor votes there', () => {
    let b = node('b', ['a', 'b', 'c']);
    b = run(b, { type: 'memberGone', id: 'a', termFloor: 7 }, 100).state;
    expect(b.voteFloor).toBe(7);
    const refused = run(b, msg('c', { type: 'voteRequest', term: 7, preVote: false }), 200);
    expect(sent(refused.effects, 'voteResponse')[0]).toMatchObject({ granted: false });
    const r = run(b, { type: 'tick' }, 5000);
    expect(sent(r.effects, 'voteRequest')).toEqual([{ type: 'voteRequest', term: 8, preVote: true }]);
  });

  it('a restarted node starts above the floor stored beside its own state', () => {
    let s = initialElection(config('a'), 0, 1, ['a'], { term: 2, votedFor: 'a' }, 9);
    s = run(run(s, { type: 'ready' }, 0).state, { type: 'discoveryRound', clean: true }, 0).state;
    const r = run(s, { type: 'tick' }, s.electionAt);
    expect(r.state).toMatchObject({ role: 'leader', term: 10 });
  });

  it('stands above a term it refused to adopt under a live lease', () => {
    let c = node('c', ['a', 'b', 'c']);
    c = run(c, msg('a', { type: 'heartbeat', term: 2, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 }), 100).state;
    c = run(c, msg('b', { type: 'voteRequest', term: 6, preVote: false }), 150).state;
    expect(c.term).toBe(2);
    expect(c.termSeen).toBe(6);
    // A pre-vote request names a term nobody holds: it is not remembered.
    c = run(c, msg('b', { type: 'voteRequest', term: 9, preVote: true }), 160).state;
    expect(c.termSeen).toBe(6);
    const r = run(c, { type: 'linkDown', id: 'a' }, 200);
    const t = run(r.state, { type: 'tick' }, r.wakeAt as number);
    expect(sent(t.effects, 'voteRequest')).toEqual([{ type: 'voteRequest', term: 7, preVote: true }]);
  });

  it('every member says it leaves when it stops, a follower too', () => {
    const s = node('b', ['a', 'b', 'c']);
    const r = run(s, { type: 'stop' }, 100);
    expect(sent(r.effects, 'resign')).toEqual([{ type: 'resign', term: 0, leaderId: 'b', leaving: true }]);
  });

  it('ignores members it does not know, and a stopped node changes nothing but its count', () => {
    const s = node('a', ['a', 'b']);
    expect(run(s, { type: 'memberGone', id: 'x' }, 100).state).toBe(s);
    const stopped = run(s, { type: 'stop' }, 100).state;
    const r = run(stopped, { type: 'memberGone', id: 'b' }, 200);
    expect(r.state.role).toBe('follower');
    expect(r.wakeAt).toBeUndefined();
  });
});

describe('a paused node returning', () => {
  it('cannot depose a healthy leader or inflate the term', () => {
    // a leads b and c; c was frozen long enough for its lease to run out.
    let c = node('c', ['a', 'b', 'c']);
    let b = node('b', ['a', 'b', 'c']);
    const hb = (_t: number): ElectionEvent => msg('a', { type: 'heartbeat', term: 1, leaderId: 'a', leaderUrl: 'ws://a', leaseDurationMs: 400 });
    c = run(c, hb(100), 100).state;
    b = run(b, hb(2000), 2000).state;
    const woke = run(c, { type: 'tick' }, 2010);
    const requests = sent(woke.effects, 'voteRequest');
    expect(requests).toEqual([{ type: 'voteRequest', term: 2, preVote: true }]);
    const answer = run(b, msg('c', requests[0] as ElectionMessage), 2011);
    expect(sent(answer.effects, 'voteResponse')[0]).toMatchObject({ granted: false });
    expect(answer.state.term).toBe(1);
    const after = run(woke.state, msg('b', sent(answer.effects, 'voteResponse')[0] as ElectionMessage), 2012).state;
    expect(after.term).toBe(1);
    expect(after.role).toBe('follower');
  });
});

/**
 * Whole clusters of pure states with a lossy, reordering network and links cut at random.
 * After every delivery: never two leaders in one term. After healing: one leader, agreed by all.
 */
describe('simulated clusters', () => {
  const seeds = Array.from({ length: 40 }, (_, i) => i * 7919 + 1);
  it.each(seeds)('with durable votes: safe through cuts, freezes and any restarts, then converges (seed %i)', (seed) => {
    withSeed(seed, () => simulate(seed, { durable: true, restarts: 'any' }));
  });
  it.each(seeds)('without durable votes: safe through cuts, freezes and one restart at a time (seed %i)', (seed) => {
    withSeed(seed, () => simulate(seed, { durable: false, restarts: 'one-at-a-time' }));
  });
});

function withSeed(seed: number, run: () => void): void {
  try {
    run();
  } catch (error) {
    throw new Error(`seed ${seed}: ${(error as Error).message}`);
  }
}

function simulate(seed: number, options: { durable: boolean; restarts: 'any' | 'one-at-a-time' }): void {
  const random = seededRandom(seed);
  const ids = ['n1', 'n2', 'n3', 'n4', 'n5'].slice(0, 3 + Math.floor(random() * 3));
  let incarnation = 0;
  const fresh = (id: string, at: number, before?: ElectionState) => {
    incarnation += 1;
    const durable = options.durable && before ? { term: before.term, votedFor: before.votedFor } : undefined;
    const s = initialElection(config(id, { voteGraceMs: 700 }), at, seed * 31 + incarnation, ids, durable);
    return step(step(s, { type: 'ready' }, at).state, { type: 'discoveryRound', clean: true }, at).state;
  };
  const states = new Map(ids.map((id) => [id, fresh(id, 0)] as const));
  const cut = new Set<string>();
  /** Frozen (SIGSTOP) until then: handles nothing, its inbox waits. */
  const frozenUntil = new Map<string, number>();
  const linkKey = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`);
  const up = (a: string, b: string) => !cut.has(linkKey(a, b));
  const frozen = (id: string) => (frozenUntil.get(id) ?? 0) > now;
  const leaders = new Map<number, string>();
  type Packet = { at: number; from: string; to: string; message: ElectionMessage };
  let queue: Packet[] = [];
  let now = 0;
  let lastRestart = -Infinity;

  const check = () => {
    for (const [id, s] of states) {
      if (s.role !== 'leader') continue;
      const other = leaders.get(s.term);
      if (other !== undefined && other !== id) throw new Error(`two leaders in term ${s.term}: ${other} and ${id} at ${now} ms`);
      leaders.set(s.term, id);
    }
  };
  const apply = (id: string, event: ElectionEvent) => {
    const r = step(states.get(id) as ElectionState, event, now);
    states.set(id, r.state);
    for (const e of r.effects) {
      if (e.type === 'log') continue;
      const targets = e.type === 'send' ? [e.to] : ids.filter((x) => x !== id);
      for (const to of targets) {
        if (!up(id, to)) continue;
        queue.push({ at: now + 1 + Math.floor(random() * 5), from: id, to, message: e.message });
      }
    }
    check();
  };
  const setLink = (a: string, b: string, linkUp: boolean) => {
    const key = linkKey(a, b);
    if (linkUp) cut.delete(key);
    else cut.add(key);
    queue = queue.filter((p) => up(p.from, p.to));
    // A frozen process notices its links only when it runs again; the other side sees them at once.
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const)
      if (!frozen(x)) apply(x, { type: linkUp ? 'linkUp' : 'linkDown', id: y });
    if (linkUp) {
      hello(a, b);
      hello(b, a);
    }
  };
  /** Every new link starts with a hello carrying the sender's term. */
  const hello = (from: string, to: string) => {
    const s = states.get(from) as ElectionState;
    queue.push({ at: now + 1, from, to, message: { type: 'hello', term: s.term, role: s.role } });
  };
  for (const a of ids) for (const b of ids) if (a !== b) apply(a, { type: 'linkUp', id: b });

  const advance = (until: number, faults: boolean) => {
    while (now < until) {
      now += 1;
      if (faults) {
        const pick = () => ids[Math.floor(random() * ids.length)] as string;
        const roll = random();
        if (roll < 0.01) {
          const a = pick();
          const b = pick();
          if (a !== b) setLink(a, b, cut.has(linkKey(a, b)));
        } else if (roll < 0.0015 + 0.01) {
          frozenUntil.set(pick(), now + 200 + Math.floor(random() * 1500));
        } else if (roll < 0.0025 + 0.01 && (options.restarts === 'any' || now - lastRestart > 3000)) {
          // Crash and restart. Without durable votes the new process remembers no term or vote, and
          // only the start-up grace protects it; a term whose every witness restarted or was cut off
          // can then be reused, hence one restart at a time in that variant.
          lastRestart = now;
          const id = pick();
          frozenUntil.delete(id);
          queue = queue.filter((p) => p.to !== id && p.from !== id);
          for (const other of ids) if (other !== id && up(id, other) && !frozen(other)) apply(other, { type: 'linkDown', id });
          states.set(id, fresh(id, now, states.get(id)));
          for (const other of ids) {
            if (other === id || !up(id, other)) continue;
            apply(id, { type: 'linkUp', id: other });
            if (!frozen(other)) apply(other, { type: 'linkUp', id });
            hello(id, other);
            hello(other, id);
          }
        }
      }
      const due = queue.filter((p) => p.at <= now && !frozen(p.to));
      queue = queue.filter((p) => p.at > now || frozen(p.to));
      for (const p of due) if (up(p.from, p.to) && !(faults && random() < 0.02)) apply(p.to, { type: 'message', from: p.from, message: p.message });
      for (const id of ids) {
        if (frozen(id)) continue;
        const s = states.get(id) as ElectionState;
        if (Math.min(s.electionAt, s.heartbeatAt) <= now) apply(id, { type: 'tick' });
      }
    }
  };

  advance(20_000, true);
  frozenUntil.clear();
  for (const key of [...cut]) {
    const [a, b] = key.split('|') as [string, string];
    setLink(a, b, true);
  }
  // Healed: within a few election time-outs exactly one leader, followed by everyone in its term.
  advance(now + 5000, false);
  expectOneLeader([...states.values()]);
}

/** Exactly one of `all` leads, and every one of them follows it in its term. */
function expectOneLeader(all: readonly ElectionState[]): ElectionState {
  const leadersNow = all.filter((s) => s.role === 'leader');
  expect(leadersNow).toHaveLength(1);
  const leader = leadersNow[0] as ElectionState;
  for (const s of all) {
    expect(s.term).toBe(leader.term);
    expect(s.leaderId).toBe(leader.config.selfId);
  }
  return leader;
}

/**
 * Two- and three-node clusters on one host, as pure states, with departures: processes are killed
 * (the others prove them gone a little later: their port refuses), stopped (they say they leave),
 * paused (nothing proves them gone), restarted, and links cut. Kills may go beyond a majority.
 * Votes are durable and every node reads the terms stored beside its own, as the server does with
 * its state directory. After every step: never two leaders in one term, across every incarnation.
 * After healing: whoever runs agrees on one leader.
 */
describe('simulated small clusters with departures', () => {
  const seeds = Array.from({ length: 40 }, (_, i) => i * 104_729 + 3);
  it.each(seeds)('safe through kills beyond a majority, stops, pauses and restarts; converges (seed %i)', (seed) => {
    withSeed(seed, () => simulateDepartures(seed));
  });
});

function simulateDepartures(seed: number): void {
  const random = seededRandom(seed);
  const ids = ['n1', 'n2', 'n3'].slice(0, 2 + Math.floor(random() * 2));
  /** Node-local work waiting for its process to run: messages, link changes, departures proven. */
  type Delivery = { at: number; to: string; event: ElectionEvent; unless?: () => boolean };
  const states = new Map<string, ElectionState>();
  const disk = new Map<string, { term: number; votedFor: string | undefined }>();
  const down = new Map<string, number>();
  const frozenUntil = new Map<string, number>();
  const cut = new Set<string>();
  const leaders = new Map<number, string>();
  let queue: Delivery[] = [];
  /** Processes that said they leave and exit a moment later. */
  const exiting: { at: number; id: string }[] = [];
  let now = 0;
  let incarnation = 0;

  const linkKey = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`);
  const running = (id: string) => states.has(id);
  const linked = (a: string, b: string) => running(a) && running(b) && !cut.has(linkKey(a, b));
  const frozen = (id: string) => (frozenUntil.get(id) ?? 0) > now;
  const floor = () => Math.max(0, ...[...disk.values()].map((v) => v.term));
  const later = (to: string, event: ElectionEvent, delay = 1 + Math.floor(random() * 5), unless?: () => boolean) =>
    queue.push({ at: now + delay, to, event, ...(unless ? { unless } : {}) });

  const apply = (id: string, event: ElectionEvent) => {
    const before = states.get(id);
    if (!before) return;
    const r = step(before, event, now);
    states.set(id, r.state);
    disk.set(id, { term: r.state.term, votedFor: r.state.votedFor });
    for (const e of r.effects) {
      if (e.type === 'log') continue;
      for (const to of e.type === 'send' ? [e.to] : ids.filter((x) => x !== id)) {
        if (linked(id, to)) later(to, { type: 'message', from: id, message: e.message });
      }
    }
    if (r.state.role === 'leader') {
      const other = leaders.get(r.state.term);
      if (other !== undefined && other !== id) throw new Error(`two leaders in term ${r.state.term}: ${other} and ${id} at ${now} ms`);
      leaders.set(r.state.term, id);
    }
    // The node's own rule: a member that says it leaves is gone.
    if (event.type === 'message' && event.message.type === 'resign' && event.message.leaving)
      apply(id, { type: 'memberGone', id: event.from, termFloor: floor() });
  };

  const start = (id: string) => {
    incarnation += 1;
    const peers = ids.filter((x) => x !== id && running(x));
    let s = initialElection(config(id, { voteGraceMs: 700 }), now, seed * 31 + incarnation, [id, ...peers], disk.get(id), floor());
    s = step(step(s, { type: 'ready' }, now).state, { type: 'discoveryRound', clean: true }, now).state;
    states.set(id, s);
    down.delete(id);
    for (const other of peers) {
      later(other, { type: 'memberKnown', id }, 1);
      if (cut.has(linkKey(id, other))) continue;
      apply(id, { type: 'linkUp', id: other });
      later(other, { type: 'linkUp', id }, 1);
      later(other, { type: 'message', from: id, message: { type: 'hello', term: s.term, role: s.role } }, 2);
      const o = states.get(other) as ElectionState;
      later(id, { type: 'message', from: other, message: { type: 'hello', term: o.term, role: o.role } }, 2);
    }
  };

  /** The process is gone: links close at once, and after a few probes every other node knows. */
  const exit = (id: string) => {
    if (!running(id)) return;
    const peers = ids.filter((x) => x !== id && running(x));
    states.delete(id);
    frozenUntil.delete(id);
    const since = now;
    down.set(id, since);
    queue = queue.filter((d) => d.to !== id);
    for (const other of peers) {
      later(other, { type: 'linkDown', id }, 1);
      const stillDown = () => down.get(id) !== since;
      queue.push({ at: now + 50 + Math.floor(random() * 100), to: other, event: { type: 'memberGone', id }, unless: stillDown });
    }
  };

  const setLink = (a: string, b: string, up: boolean) => {
    if (up) cut.delete(linkKey(a, b));
    else cut.add(linkKey(a, b));
    queue = queue.filter((d) => d.event.type !== 'message' || linked(d.event.from, d.to));
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const)
      later(x, { type: up ? 'linkUp' : 'linkDown', id: y }, 1);
    if (up) {
      for (const [x, y] of [
        [a, b],
        [b, a],
      ] as const) {
        const s = states.get(x) as ElectionState;
        later(y, { type: 'message', from: x, message: { type: 'hello', term: s.term, role: s.role } }, 2);
      }
    }
  };

  for (const id of ids) start(id);

  const advance = (until: number, faults: boolean) => {
    while (now < until) {
      now += 1;
      if (faults) {
        const pick = (from: string[]) => from[Math.floor(random() * from.length)];
        const alive = ids.filter(running);
        const roll = random();
        const a = pick(alive);
        const b = pick(alive);
        if (roll < 0.004) {
          if (a && b && a !== b) setLink(a, b, cut.has(linkKey(a, b)));
        } else if (roll < 0.005) {
          if (a) frozenUntil.set(a, now + 200 + Math.floor(random() * 1500));
        } else if (roll < 0.0058) {
          if (a) exit(a);
        } else if (roll < 0.0066) {
          if (a && !frozen(a) && !exiting.some((e) => e.id === a)) {
            apply(a, { type: 'stop' });
            exiting.push({ at: now + 3, id: a });
          }
        } else if (roll < 0.0086) {
          const gone = pick(ids.filter((x) => !running(x)));
          if (gone) start(gone);
        }
      }
      for (const e of exiting.filter((x) => x.at <= now)) {
        exiting.splice(exiting.indexOf(e), 1);
        exit(e.id);
      }
      const due = queue.filter((d) => d.at <= now && !frozen(d.to));
      queue = queue.filter((d) => !(d.at <= now && !frozen(d.to)));
      for (const d of due) {
        if (d.unless?.()) continue;
        if (d.event.type === 'message' && !linked(d.event.from, d.to)) continue;
        const event = d.event.type === 'memberGone' ? { ...d.event, termFloor: floor() } : d.event;
        if (!(faults && d.event.type === 'message' && random() < 0.02)) apply(d.to, event);
      }
      for (const id of ids) {
        const s = states.get(id);
        if (s && !frozen(id) && Math.min(s.electionAt, s.heartbeatAt) <= now) apply(id, { type: 'tick' });
      }
    }
  };

  advance(20_000, true);
  frozenUntil.clear();
  for (const key of [...cut]) {
    const [a, b] = key.split('|') as [string, string];
    if (running(a) && running(b)) setLink(a, b, true);
    else cut.delete(key);
  }
  if (!ids.some(running)) start(ids[0] as string);
  // Whoever runs: within a few election time-outs exactly one leader, followed by all in its term.
  advance(now + 5000, false);
  const all = [...states.values()];
  expectOneLeader(all);
  for (const s of all) expect(knownMemberCount(s)).toBe(all.length);
}
