/** The default port on the holder's side (default-port.ts) as a pure transition with the time passed in. */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PORT_DEFAULTS,
  initialDefaultPort,
  step,
  yielding,
  type DefaultPortEvent,
  type DefaultPortResult,
  type DefaultPortState,
} from '../src/default-port.js';

const YIELD = DEFAULT_PORT_DEFAULTS.yieldMs;

/** Step through `events` at `now`, returning the last result. */
function feed(state: DefaultPortState, now: number, ...events: DefaultPortEvent[]): DefaultPortResult {
  let result: DefaultPortResult = { state, effects: [] };
  for (const event of events) result = step(result.state, event, now);
  return result;
}

const held = (at = 0): DefaultPortState => feed(initialDefaultPort(), at, { type: 'check', wanted: true }, { type: 'bound' }).state;

describe('the default port, held', () => {
  it('is bound when wanted and held once bound; a failed bind is tried again at the next check', () => {
    const wanted = step(initialDefaultPort(), { type: 'check', wanted: true }, 0);
    expect(wanted).toMatchObject({ state: { bound: 'binding' }, effects: [{ type: 'bind' }] });
    // No second bind while one is in flight.
    expect(step(wanted.state, { type: 'check', wanted: true }, 1).effects).toEqual([]);
    expect(step(wanted.state, { type: 'bound' }, 2)).toMatchObject({ state: { bound: 'held' }, effects: [] });
    const failed = step(wanted.state, { type: 'bindFailed' }, 2).state;
    expect(failed.bound).toBe('none');
    expect(step(failed, { type: 'check', wanted: true }, 250).effects).toEqual([{ type: 'bind' }]);
  });

  it('is let go (its connections kept) when no longer wanted, also when that happens during the bind', () => {
    expect(step(held(), { type: 'check', wanted: false }, 5)).toMatchObject({ state: { bound: 'none' }, effects: [{ type: 'unbind' }] });
    const binding = step(initialDefaultPort(), { type: 'check', wanted: true }, 0).state;
    const stepped = step(binding, { type: 'check', wanted: false }, 1);
    expect(stepped.effects).toEqual([]);
    expect(step(stepped.state, { type: 'bound' }, 2)).toMatchObject({ state: { bound: 'none' }, effects: [{ type: 'unbind' }] });
  });

  it('is dropped at its owner’s request, and nothing is bound while it is left to the owner', () => {
    const released = step(held(), { type: 'release', key: 'k1' }, 1000);
    expect(released).toMatchObject({ state: { bound: 'none', yieldUntil: 1000 + YIELD }, effects: [{ type: 'drop' }], answer: 'released' });
    expect(yielding(released.state, 1000 + YIELD - 1)).toBe(true);
    // Still leading: the checks of the next seconds bind nothing.
    for (const at of [1250, 5000, 1000 + YIELD - 1]) expect(step(released.state, { type: 'check', wanted: true }, at).effects).toEqual([]);
    // Afterwards a port nobody took is served again (if the owner took it, that bind fails quietly).
    const after = step(released.state, { type: 'check', wanted: true }, 1000 + YIELD);
    expect(after).toMatchObject({ state: { bound: 'binding', yieldUntil: undefined }, effects: [{ type: 'bind' }] });
  });

  it('a release during a bind drops the port once bound', () => {
    const binding = step(initialDefaultPort(), { type: 'check', wanted: true }, 0).state;
    const released = step(binding, { type: 'release', key: 'k1' }, 10);
    expect(released).toMatchObject({ effects: [], answer: 'released' });
    expect(step(released.state, { type: 'bound' }, 20)).toMatchObject({ state: { bound: 'none' }, effects: [{ type: 'drop' }] });
  });

  it('answers every new request released (asking twice is harmless), a replayed one never', () => {
    const first = step(held(), { type: 'release', key: 'k1' }, 1000);
    const again = step(first.state, { type: 'release', key: 'k2' }, 2000);
    expect(again).toMatchObject({ effects: [], answer: 'released', state: { yieldUntil: 2000 + YIELD } });
    // Not holding it (or not any more): released all the same, and left to the owner.
    expect(step(initialDefaultPort(), { type: 'release', key: 'k3' }, 0)).toMatchObject({ effects: [], answer: 'released', state: { yieldUntil: YIELD } });
    // A copy of a request acted on: nothing happens, even once the yield is over and the port held again.
    const heldAgain = feed(again.state, 2000 + YIELD, { type: 'check', wanted: true }, { type: 'bound' }).state;
    expect(heldAgain.bound).toBe('held');
    expect(step(heldAgain, { type: 'release', key: 'k1' }, 2000 + YIELD + 1)).toMatchObject({ effects: [], answer: 'replayed', state: { bound: 'held' } });
  });

  it('forgets keys once they expire, and keeps at most `maxRemembered`', () => {
    const config = { ...DEFAULT_PORT_DEFAULTS, maxRemembered: 3 };
    let state = initialDefaultPort(config);
    for (const key of ['a', 'b', 'c', 'd']) state = step(state, { type: 'release', key }, 0).state;
    expect([...state.seen.keys()]).toEqual(['b', 'c', 'd']);
    expect(step(state, { type: 'release', key: 'a' }, 1).answer).toBe('released');
    const later = step(state, { type: 'release', key: 'e' }, config.rememberMs).state;
    expect([...later.seen.keys()]).toEqual(['e']);
  });
});
