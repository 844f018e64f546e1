/**
 * Claiming a port back (port-claim.ts) as a pure transition with the time passed in: every path of
 * the diagram, the deadline, the races (two owners, a holder dying while asked, another member
 * taking the port meanwhile), and who counts as a member holding the port.
 */
import { describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOL_RANGES, type MetaDocument } from '@mdp/protocol';
import type { ProbeResult } from '../src/meta-probe.js';
import { PORT_CLAIM_DEFAULTS, holderOf, startClaim, step, type ClaimEvent, type ClaimResult, type PortHolder } from '../src/port-claim.js';

const T0 = 10_000;
const MEMBER: PortHolder = { kind: 'member', id: '127.0.0.1:4001', url: 'http://127.0.0.1:4001' };
const OTHER: PortHolder = { kind: 'other', reason: 'an MDP server of cluster "x" holds it' };
const NONE: PortHolder = { kind: 'none', reason: 'no answer within 1000 ms' };

/** Step through `events` (each at its time), returning every result. */
function run(start: ClaimResult, events: readonly [ClaimEvent, number][]): ClaimResult[] {
  const results = [start];
  for (const [event, at] of events) results.push(step((results.at(-1) as ClaimResult).state, event, at));
  return results;
}

const last = (results: ClaimResult[]): ClaimResult => results.at(-1) as ClaimResult;

describe('claiming a port back', () => {
  it('starts by looking at who holds it; a member is asked, and once it let go the port is bound', () => {
    const start = startClaim(T0);
    expect(start.effects).toEqual([{ type: 'look' }]);
    expect(start.state).toMatchObject({ phase: 'looking', deadline: T0 + PORT_CLAIM_DEFAULTS.timeoutMs });
    const results = run(start, [
      [{ type: 'looked', holder: MEMBER }, T0 + 5],
      [{ type: 'asked', outcome: { kind: 'released' } }, T0 + 20],
      [{ type: 'bound' }, T0 + 21],
    ]);
    expect(results[1]?.effects).toEqual([{ type: 'ask', holder: { id: MEMBER.id, url: 'http://127.0.0.1:4001' } }]);
    // Released: bound at once, no wait.
    expect(results[2]?.effects).toEqual([{ type: 'bind' }]);
    expect(last(results)).toMatchObject({ state: { phase: 'bound' }, effects: [], wakeAt: undefined });
  });

  it('gives up at once on anything else holding the port, and on a refusal', () => {
    expect(step(startClaim(T0).state, { type: 'looked', holder: OTHER }, T0 + 1)).toMatchObject({
      state: { phase: 'failed', reason: OTHER.reason },
      effects: [{ type: 'giveUp', reason: OTHER.reason }],
    });
    const refused = run(startClaim(T0), [
      [{ type: 'looked', holder: MEMBER }, T0 + 1],
      [{ type: 'asked', outcome: { kind: 'refused', reason: 'HTTP 403: cluster secret not proven' } }, T0 + 2],
    ]);
    expect(last(refused).effects).toEqual([{ type: 'giveUp', reason: 'its holder refused: HTTP 403: cluster secret not proven' }]);
  });

  it('waits and binds again, backing off, while nothing answers; gives up after the deadline with a last bind', () => {
    let result = startClaim(T0);
    let now = T0;
    const waits: number[] = [];
    for (;;) {
      result = step(result.state, { type: 'looked', holder: NONE }, now);
      if (result.state.phase === 'failed') break;
      expect(result.state.phase).toBe('waiting');
      const wakeAt = result.wakeAt as number;
      waits.push(wakeAt - now);
      // Nothing happens before the wake-up time.
      expect(step(result.state, { type: 'tick' }, wakeAt - 1).effects).toEqual([]);
      now = wakeAt;
      result = step(result.state, { type: 'tick' }, now);
      expect(result.effects).toEqual([{ type: 'bind' }]);
      result = step(result.state, { type: 'inUse' }, now);
      if (result.state.phase === 'failed') break;
      expect(result.effects).toEqual([{ type: 'look' }]);
    }
    expect(waits.slice(0, 6)).toEqual([50, 100, 200, 400, 800, 800]);
    // The last wait ends at the deadline itself: one more bind, then it gives up.
    expect(now).toBe(T0 + PORT_CLAIM_DEFAULTS.timeoutMs);
    expect(result.effects).toEqual([{ type: 'giveUp', reason: 'still in use 5000 ms later' }]);
  });

  it('asks the same holder at most once a second, and another holder at once', () => {
    const results = run(startClaim(T0), [
      [{ type: 'looked', holder: MEMBER }, T0],
      [{ type: 'asked', outcome: { kind: 'released' } }, T0 + 10],
      // The holder took it again (or never closed it): look, and wait rather than ask again at once.
      [{ type: 'inUse' }, T0 + 11],
      [{ type: 'looked', holder: MEMBER }, T0 + 12],
    ]);
    expect(last(results).state.phase).toBe('waiting');
    expect(last(results).effects).toEqual([]);
    const other: PortHolder = { kind: 'member', id: '127.0.0.1:4002', url: 'http://127.0.0.1:4002' };
    expect(step(last(results).state, { type: 'looked', holder: other }, T0 + 13)).toMatchObject({ state: { phase: 'waiting' } });
    // (looked only counts while looking: a stray answer changes nothing)
    const looking = step(step(last(results).state, { type: 'tick' }, T0 + 200).state, { type: 'inUse' }, T0 + 201).state;
    expect(step(looking, { type: 'looked', holder: other }, T0 + 202).effects).toEqual([{ type: 'ask', holder: { id: other.id, url: other.url } }]);
    expect(step(looking, { type: 'looked', holder: MEMBER }, T0 + 1000).effects).toEqual([{ type: 'ask', holder: { id: MEMBER.id, url: MEMBER.url } }]);
  });

  it('two owners: the one that lost the bind finds the port held as a server’s own and gives up', () => {
    const results = run(startClaim(T0), [
      [{ type: 'looked', holder: MEMBER }, T0],
      [{ type: 'asked', outcome: { kind: 'released' } }, T0 + 10],
      [{ type: 'inUse' }, T0 + 11],
      [{ type: 'looked', holder: { kind: 'other', reason: 'MDP server "127.0.0.1:4000" holds it as its own port' } }, T0 + 12],
    ]);
    expect(last(results)).toMatchObject({ state: { phase: 'failed' }, effects: [{ type: 'giveUp' }] });
  });

  it('a holder that dies while asked: the port frees when its process exits, and is bound', () => {
    const results = run(startClaim(T0), [
      [{ type: 'looked', holder: MEMBER }, T0],
      [{ type: 'asked', outcome: { kind: 'unreachable', reason: 'socket hang up' } }, T0 + 10],
      [{ type: 'tick' }, T0 + 60],
      [{ type: 'bound' }, T0 + 61],
    ]);
    expect(results[2]).toMatchObject({ state: { phase: 'waiting' }, wakeAt: T0 + 60 });
    expect(results[3]?.effects).toEqual([{ type: 'bind' }]);
    expect(last(results).state.phase).toBe('bound');
  });

  it('a busy holder (not serving yet, or not holding the port as it sees it) is looked at again later', () => {
    const results = run(startClaim(T0), [
      [{ type: 'looked', holder: MEMBER }, T0],
      [{ type: 'asked', outcome: { kind: 'busy', reason: 'HTTP 409' } }, T0 + 10],
    ]);
    expect(last(results)).toMatchObject({ state: { phase: 'waiting' }, wakeAt: T0 + 60 });
  });

  it('ignores events out of turn, and everything once done', () => {
    const start = startClaim(T0);
    for (const event of [{ type: 'bound' }, { type: 'inUse' }, { type: 'tick' }, { type: 'asked', outcome: { kind: 'released' } }] as const) {
      expect(step(start.state, event, T0 + 1)).toEqual({ state: start.state, effects: [], wakeAt: undefined });
    }
    const failed = step(start.state, { type: 'looked', holder: OTHER }, T0).state;
    for (const event of [{ type: 'looked', holder: MEMBER }, { type: 'bound' }, { type: 'tick' }] as const) {
      expect(step(failed, event, T0 + 1).effects).toEqual([]);
    }
  });
});

function meta(serverId: string, port: number, over: { clusterId?: string; clusterControl?: boolean } = {}): MetaDocument {
  const base = `127.0.0.1:${port}`;
  return {
    protocol: 'mdp',
    protocolVersion: PROTOCOL_VERSION,
    supportedProtocolRanges: [...SUPPORTED_PROTOCOL_RANGES],
    serverId,
    endpoints: {
      ws: `ws://${base}`,
      httpLoop: `http://${base}/mdp/http-loop`,
      cluster: `ws://${base}/mdp/cluster`,
      meta: `http://${base}/mdp/meta`,
      auth: `http://${base}/mdp/auth`,
    },
    cluster: {
      id: over.clusterId ?? 'c1',
      membershipMode: 'dynamic',
      membershipFingerprint: 'dynamic',
      role: 'leader',
      term: 3,
      leaderId: serverId,
      leaderUrl: `ws://${base}`,
      leaseDurationMs: 4000,
      knownMemberCount: 1,
      reachableMemberCount: 1,
      quorumSize: 1,
      hasQuorum: true,
    },
    features: { upstreamProxy: true, clusterControl: over.clusterControl ?? true },
  } as MetaDocument;
}

const probed = (document: MetaDocument): ProbeResult => ({ ok: true, url: 'http://127.0.0.1:4000', meta: document });

describe('who holds the port', () => {
  it('a member of this cluster serving it as a second port names its own address', () => {
    expect(holderOf(probed(meta('127.0.0.1:4001', 4001)), 4000, 'c1')).toEqual({ kind: 'member', id: '127.0.0.1:4001', url: 'http://127.0.0.1:4001' });
  });

  it('another cluster, a standalone server, a server on its own port, another program: not given back', () => {
    expect(holderOf(probed(meta('127.0.0.1:4001', 4001, { clusterId: 'c2' })), 4000, 'c1')).toMatchObject({
      kind: 'other',
      reason: expect.stringContaining('"c2"'),
    });
    expect(holderOf(probed(meta('127.0.0.1:4001', 4001, { clusterControl: false })), 4000, 'c1')).toMatchObject({ kind: 'other' });
    expect(holderOf(probed(meta('127.0.0.1:4000', 4000)), 4000, 'c1')).toMatchObject({ kind: 'other', reason: expect.stringContaining('own port') });
    expect(holderOf({ ok: false, url: 'http://127.0.0.1:4000', kind: 'not-mdp', reason: 'HTTP 404 Not Found' }, 4000, 'c1')).toMatchObject({ kind: 'other' });
  });

  it('nothing answering (a process exiting or paused) may free the port soon', () => {
    expect(holderOf({ ok: false, url: 'http://127.0.0.1:4000', kind: 'unreachable', reason: 'no answer within 1000 ms' }, 4000, 'c1')).toEqual({
      kind: 'none',
      reason: 'no answer within 1000 ms',
    });
  });
});
