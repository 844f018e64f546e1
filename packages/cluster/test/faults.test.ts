/**
 * Randomized faults on real sockets: links between five nodes are cut and restored at random for
 * many rounds. After every step no term may have two leaders; once every link is healed, a single
 * leader must be agreed within a bound. The seed is printed on failure (set MDP_FAULT_SEED to
 * replay one).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { seededRandom } from '../src/rng.js';
import { FAST, Faults, LeaderHistory, agreedLeader, startCluster, until, type TestNode } from './harness.js';

const running: TestNode[] = [];

afterEach(async () => {
  const nodes = running.splice(0);
  await Promise.all(nodes.map((n) => n.stop()));
  for (const n of nodes) expect(n.node.activeTimers).toBe(0);
});

const SEEDS = process.env.MDP_FAULT_SEED ? [Number(process.env.MDP_FAULT_SEED)] : [20251121, 7, 4242];
const ROUNDS = 40;
/** After healing: a lease, a few election time-outs, and slack for a loaded machine. */
const HEAL_BOUND_MS = FAST.leaseDurationMs + 3 * FAST.electionTimeoutMaxMs + 4000;

describe('randomized link faults', () => {
  for (const seed of SEEDS) {
    it(`never has two leaders in one term, and converges once healed (seed ${seed})`, { timeout: 60_000 }, async () => {
      try {
        await scenario(seed);
      } catch (error) {
        process.stderr.write(`randomized fault test failed with seed ${seed} (replay: MDP_FAULT_SEED=${seed}): ${(error as Error).message}\n`);
        throw error;
      }
    });
  }
});

async function scenario(seed: number): Promise<void> {
  const random = seededRandom(seed);
  const faults = new Faults();
  const nodes = await startCluster(5, () => ({ random: seededRandom(Math.floor(random() * 2 ** 31)) }), faults);
  running.push(...nodes);
  const history = new LeaderHistory();
  history.watch(nodes);
  try {
    await run(nodes, faults, history, random);
  } catch (error) {
    // A time-out is worth less than what led to it: name any term that had two leaders.
    if (history.violations.length > 0) throw new Error(`${(error as Error).message}; two leaders: ${history.violations.join(', ')}`);
    throw error;
  }
}

async function run(nodes: TestNode[], faults: Faults, history: LeaderHistory, random: () => number): Promise<void> {
  await until(nodes, () => agreedLeader(nodes) !== undefined, HEAL_BOUND_MS, 'a first leader');

  const ids = nodes.map((n) => n.id);
  const pick = (): string => ids[Math.floor(random() * ids.length)] as string;
  for (let round = 0; round < ROUNDS; round += 1) {
    const actions = 1 + Math.floor(random() * 3);
    for (let i = 0; i < actions; i += 1) {
      const a = pick();
      const b = pick();
      if (a === b) continue;
      if (faults.isCut(a, b)) faults.restore(a, b);
      else faults.cut(a, b);
    }
    // Let the cluster react for a while: from under one heartbeat to more than a lease.
    await new Promise((resolve) => setTimeout(resolve, 10 + Math.floor(random() * 400)));
    history.sample(nodes);
    expect(history.violations, `after round ${round}`).toEqual([]);
  }

  faults.healAll();
  await until(nodes, () => agreedLeader(nodes) !== undefined, HEAL_BOUND_MS, 'one agreed leader after healing');
  history.sample(nodes);
  expect(history.violations).toEqual([]);
  expect(history.leaders.size).toBeGreaterThan(0);
  if (process.env.MDP_FAULT_VERBOSE) process.stdout.write(`${history.leaders.size} terms with a leader\n`);
}
