/** Departures as a pure transition: what proves a member gone, and what never does. */
import { describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOL_RANGES, type MetaDocument } from '@mdp/protocol';
import { initialDepartures, probeOutcome, step, type DepartureEvent, type DepartureState, type ProbeOutcome } from '../src/departures.js';
import type { ProbeResult } from '../src/meta-probe.js';

const DYNAMIC = initialDepartures({ dynamic: true, strikes: 3 });

function run(state: DepartureState, events: readonly DepartureEvent[]): { state: DepartureState; gone: string[] } {
  const gone: string[] = [];
  let s = state;
  for (const event of events) {
    const r = step(s, event);
    s = r.state;
    gone.push(...r.effects.map((e) => `${e.id}:${e.reason}`));
  }
  return { state: s, gone };
}

const probed = (id: string, outcome: ProbeOutcome): DepartureEvent => ({ type: 'probed', id, outcome });

describe('departures', () => {
  it('a member that says it leaves is gone at once', () => {
    expect(run(DYNAMIC, [{ type: 'left', id: 'b' }]).gone).toEqual(['b:left']);
  });

  it('three refusals in a row prove a member gone, not two', () => {
    expect(run(DYNAMIC, [probed('b', 'refused'), probed('b', 'refused')]).gone).toEqual([]);
    expect(run(DYNAMIC, [probed('b', 'refused'), probed('b', 'refused'), probed('b', 'refused')]).gone).toEqual(['b:refused']);
  });

  it('another server answering at the address counts like a refusal', () => {
    expect(run(DYNAMIC, [probed('b', 'refused'), probed('b', 'elsewhere'), probed('b', 'elsewhere')]).gone).toEqual(['b:elsewhere']);
  });

  it('a member that stops answering (paused, overloaded) is never gone', () => {
    const silent = Array.from({ length: 50 }, () => probed('b', 'silent'));
    expect(run(DYNAMIC, silent).gone).toEqual([]);
  });

  it('strikes must come in a row: an answer, a silence or a link in between starts the count again', () => {
    for (const between of [probed('b', 'present'), probed('b', 'silent'), { type: 'linkUp', id: 'b' } as const]) {
      const r = run(DYNAMIC, [probed('b', 'refused'), probed('b', 'refused'), between, probed('b', 'refused'), probed('b', 'refused')]);
      expect(r.gone).toEqual([]);
      expect(r.state.strikes.get('b')).toBe(2);
    }
  });

  it('counts each member on its own', () => {
    const r = run(DYNAMIC, [probed('b', 'refused'), probed('c', 'refused'), probed('b', 'refused'), probed('c', 'present'), probed('b', 'refused')]);
    expect(r.gone).toEqual(['b:refused']);
    expect(r.state.strikes.size).toBe(0);
  });

  it('a static member list keeps strict quorum: nothing is ever gone', () => {
    const fixed = initialDepartures({ dynamic: false, strikes: 3 });
    const r = run(fixed, [{ type: 'left', id: 'b' }, probed('c', 'refused'), probed('c', 'refused'), probed('c', 'refused')]);
    expect(r.gone).toEqual([]);
  });

  it('refuses a strike count below one', () => {
    expect(() => initialDepartures({ dynamic: true, strikes: 0 })).toThrow(RangeError);
  });
});

describe('probeOutcome', () => {
  const meta = (serverId: string): MetaDocument =>
    ({ protocol: 'mdp', protocolVersion: PROTOCOL_VERSION, supportedProtocolRanges: [...SUPPORTED_PROTOCOL_RANGES], serverId }) as MetaDocument;
  const fail = (fields: Partial<Extract<ProbeResult, { ok: false }>>): ProbeResult => ({
    ok: false,
    url: 'http://127.0.0.1:1',
    kind: 'unreachable',
    reason: 'x',
    ...fields,
  });

  it('reads the member itself as present, another MDP server as elsewhere', () => {
    expect(probeOutcome({ ok: true, url: 'u', meta: meta('b') }, 'b')).toBe('present');
    expect(probeOutcome({ ok: true, url: 'u', meta: meta('c') }, 'b')).toBe('elsewhere');
  });

  it('reads a refused connection as refused', () => {
    expect(probeOutcome(fail({ refused: true }), 'b')).toBe('refused');
  });

  it('reads a time-out, a reset and an answer that is not MDP as silence: the member may be there', () => {
    expect(probeOutcome(fail({ reason: 'no answer within 500 ms' }), 'b')).toBe('silent');
    expect(probeOutcome(fail({ reason: 'connection reset' }), 'b')).toBe('silent');
    expect(probeOutcome(fail({ kind: 'not-mdp', reason: 'HTTP 503' }), 'b')).toBe('silent');
  });
});
