/**
 * The two sides of giving a port back, simulated together under seeded random timings and faults:
 * a leader holding the port as its second port (default-port.ts, re-checked every 250 ms), its owner
 * starting again and claiming it (port-claim.ts), one port that only one process can bind. At
 * random the holder dies (its port frees at once, as when a process exits), a second owner starts
 * on the same port, the holder refuses (another user's server), and answers are slow. After every
 * run: one owner serves the port, or, when the holder stays and refuses, none does; an owner gives
 * up only because the other owner has the port (or was refused); the holder never holds the port
 * while it is left to the owner, and drops its connections there at most once per owner (no
 * ping-pong); every claim ends by its deadline plus one answer. The seed is printed on failure (MDP_HANDOVER_SEED replays one).
 */
import { describe, expect, it } from 'vitest';
import { initialDefaultPort, step as stepHolder, yielding, type DefaultPortEffect, type DefaultPortEvent, type DefaultPortState } from '../src/default-port.js';
import {
  PORT_CLAIM_DEFAULTS,
  startClaim,
  step as stepClaim,
  type ClaimEffect,
  type ClaimEvent,
  type ClaimResult,
  type ClaimState,
  type PortHolder,
} from '../src/port-claim.js';
import { seededRandom } from '../src/rng.js';

const SEEDS = process.env.MDP_HANDOVER_SEED ? [Number(process.env.MDP_HANDOVER_SEED)] : Array.from({ length: 300 }, (_, i) => i + 1);
const CHECK_MS = 250;
/** Longest a probe or a request to the holder takes here, ms (the server's own bound is 1000). */
const MAX_ANSWER_MS = 40;

type Who = 'holder' | 'owner1' | 'owner2';

interface Owner {
  readonly name: Who;
  state: ClaimState;
  timer: number | undefined;
  outcome: 'bound' | 'failed' | undefined;
  reason: string | undefined;
  endedAt: number | undefined;
}

function simulate(seed: number): { owners: Owner[]; port: Who | undefined; violations: string[]; refuses: boolean; drops: number } {
  const random = seededRandom(seed);
  const latency = (max = MAX_ANSWER_MS): number => Math.floor(random() * max);
  const violations: string[] = [];
  /** Pending events by time (stable for equal times). */
  const queue: { at: number; seq: number; run: () => void }[] = [];
  let seq = 0;
  let now = 0;
  const at = (time: number, run: () => void): void => void queue.push({ at: time, seq: seq++, run });

  let port: Who | undefined = 'holder';
  let holder: DefaultPortState = stepHolder(stepHolder(initialDefaultPort(), { type: 'check', wanted: true }, 0).state, { type: 'bound' }, 0).state;
  let holderAlive = true;
  // Sometimes the holder is of another user's cluster: it refuses every request (a proof it cannot check).
  const refuses = random() < 0.1;
  const diesAt = random() < 0.3 ? Math.floor(random() * 3000) : undefined;

  const feedHolder = (event: DefaultPortEvent): ReturnType<typeof stepHolder> => {
    const result = stepHolder(holder, event, now);
    holder = result.state;
    for (const effect of result.effects) applyHolder(effect);
    return result;
  };
  let drops = 0;
  const applyHolder = (effect: DefaultPortEffect): void => {
    if (effect.type === 'drop' && port === 'holder') drops += 1;
    if (effect.type === 'bind') {
      at(now + latency(5), () => {
        if (!holderAlive) return;
        if (port === undefined) {
          port = 'holder';
          feedHolder({ type: 'bound' });
        } else feedHolder({ type: 'bindFailed' });
      });
    } else if (port === 'holder') port = undefined;
  };
  const holderCheck = (): void => {
    if (!holderAlive) return;
    feedHolder({ type: 'check', wanted: true });
    at(now + CHECK_MS, holderCheck);
  };
  at(CHECK_MS, holderCheck);
  if (diesAt !== undefined) {
    at(diesAt, () => {
      holderAlive = false;
      if (port === 'holder') port = undefined;
    });
  }

  const owners: Owner[] = [];
  const startOwner = (name: Who): void => {
    const owner: Owner = { name, state: undefined as unknown as ClaimState, timer: undefined, outcome: undefined, reason: undefined, endedAt: undefined };
    owners.push(owner);
    const handle = (result: ClaimResult): void => {
      owner.state = result.state;
      owner.timer = result.wakeAt;
      if (result.wakeAt !== undefined) {
        const wakeAt = result.wakeAt;
        at(wakeAt, () => {
          if (owner.timer === wakeAt) feed({ type: 'tick' });
        });
      }
      for (const effect of result.effects) apply(effect);
    };
    const feed = (event: ClaimEvent): void => {
      if (owner.outcome) return;
      handle(stepClaim(owner.state, event, now));
    };
    const apply = (effect: ClaimEffect): void => {
      switch (effect.type) {
        case 'look':
          at(now + latency(), () => {
            const held: PortHolder =
              port === 'holder'
                ? { kind: 'member', id: 'holder', url: 'http://holder' }
                : port === undefined
                  ? { kind: 'none', reason: 'refused' }
                  : { kind: 'other', reason: `${port} holds it as its own port` };
            feed({ type: 'looked', holder: held });
          });
          return;
        case 'ask':
          at(now + latency(), () => {
            if (!holderAlive) return feed({ type: 'asked', outcome: { kind: 'unreachable', reason: 'ECONNREFUSED' } });
            if (refuses) return feed({ type: 'asked', outcome: { kind: 'refused', reason: 'HTTP 403' } });
            const result = feedHolder({ type: 'release', key: `${name}@${now}` });
            if (result.answer !== 'released') violations.push(`${name}: a fresh request answered ${result.answer}`);
            // The answer goes once the port is free (the drop above already freed it here).
            at(now + latency(), () => feed({ type: 'asked', outcome: { kind: 'released' } }));
          });
          return;
        case 'bind':
          at(now + latency(5), () => {
            if (port === undefined) {
              port = name;
              owner.outcome = 'bound';
              owner.endedAt = now;
              owner.state = stepClaim(owner.state, { type: 'bound' }, now).state;
            } else feed({ type: 'inUse' });
          });
          return;
        case 'giveUp':
          owner.outcome = 'failed';
          owner.reason = effect.reason;
          owner.endedAt = now;
          return;
      }
    };
    // Its first bind fails (the holder has the port, or the other owner), then it claims.
    handle(startClaim(now));
  };
  const firstAt = Math.floor(random() * 2000);
  at(firstAt, () => startOwner('owner1'));
  if (random() < 0.3) at(firstAt + Math.floor(random() * 300), () => startOwner('owner2'));

  while (queue.length > 0 && now < 20_000) {
    queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const next = queue.shift() as (typeof queue)[number];
    now = next.at;
    next.run();
    if (port === 'holder' && yielding(holder, now)) violations.push(`t=${now}: the holder holds the port while it is left to its owner`);
    if (owners.every((o) => o.outcome !== undefined) && now > 15_000) break;
  }
  return { owners, port, violations, refuses, drops };
}

describe('giving a port back, simulated', () => {
  it(`one owner ends up serving its port, whatever the timings and faults (${SEEDS.length} seeds)`, () => {
    for (const seed of SEEDS) {
      try {
        const { owners, port, violations, refuses, drops } = simulate(seed);
        expect(violations).toEqual([]);
        // No ping-pong: the holder's clients are cut at most once per owner that asked.
        expect(drops).toBeLessThanOrEqual(owners.length);
        for (const owner of owners) {
          expect(owner.outcome, owner.name).toBeDefined();
          const startedAt = (owner.state.deadline as number) - PORT_CLAIM_DEFAULTS.timeoutMs;
          expect((owner.endedAt as number) - startedAt, owner.name).toBeLessThanOrEqual(PORT_CLAIM_DEFAULTS.timeoutMs + 2 * MAX_ANSWER_MS);
        }
        const bound = owners.filter((o) => o.outcome === 'bound');
        // Whoever bound it still has it; never two.
        expect(bound.map((o) => o.name)).toEqual(bound.length > 0 ? [port] : []);
        if (!refuses) expect(bound, 'an owner serves its port').toHaveLength(1);
        // An owner gives up only because the other owner has the port, or its holder refused.
        for (const o of owners.filter((o) => o.outcome === 'failed'))
          expect(o.reason, o.name).toMatch(refuses ? /refused|holds it as its own port/ : /holds it as its own port/);
      } catch (error) {
        process.stderr.write(`port handover simulation failed with seed ${seed} (replay: MDP_HANDOVER_SEED=${seed})\n`);
        throw error;
      }
    }
  });
});
