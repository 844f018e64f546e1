/**
 * Randomized faults on real sockets. Five nodes: links are cut and restored at random for many
 * rounds. Two and three nodes: processes are killed (their ports then refuse), stopped (they say
 * they leave) and restarted at random, beyond a majority too. After every step no term may have two
 * leaders; once every link is healed, and after every kill, stop or restart while a node runs, a
 * single leader must be agreed within a bound. The seed is printed on failure (set MDP_FAULT_SEED
 * to replay one).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeScratch, scratchDir } from '@mdp/test-kit';
import { seededRandom } from '../src/rng.js';
import { FAST, Faults, LeaderHistory, agreedLeader, live, restartNode, startCluster, ticks, until, type TestNode } from './harness.js';

const running: TestNode[] = [];

afterEach(async () => {
  const nodes = running.splice(0);
  await Promise.all(nodes.map((n) => n.stop()));
  for (const n of nodes) expect(n.node.activeTimers).toBe(0);
  removeScratch();
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

describe('kills, stops and restarts in small clusters', () => {
  for (const size of [2, 3]) {
    for (const seed of SEEDS.slice(0, 2)) {
      it(`${size} nodes keep one leader whenever one runs (seed ${seed})`, { timeout: 60_000 }, async () => {
        try {
          await smallScenario(size, seed);
        } catch (error) {
          process.stderr.write(`small-cluster fault test failed: ${size} nodes, seed ${seed} (replay: MDP_FAULT_SEED=${seed}): ${(error as Error).message}\n`);
          throw error;
        }
      });
    }
  }
});

const SMALL_ROUNDS = 14;
/** A kill is proven within a few probes, then a failover; a lone restart waits an election time-out. */
const LEADER_BOUND_MS = 5000;

async function smallScenario(size: number, seed: number): Promise<void> {
  const random = seededRandom(seed * 7 + size);
  const faults = new Faults();
  // One state directory for the cluster, as the server keeps one per user: term and vote survive
  // restarts, and every node reads the terms stored beside its own.
  const dir = scratchDir('mdp-faults-');
  const nodes = await startCluster(
    size,
    (i, ports) => ({ random: seededRandom(Math.floor(random() * 2 ** 31)), stateFile: join(dir, `${ports[i]}.json`) }),
    faults,
  );
  running.push(...nodes);
  const history = new LeaderHistory();
  history.watch(nodes);
  const settled = async (what: string): Promise<void> => {
    const alive = live(nodes);
    if (alive.length === 0) return;
    // One leader, agreed by every running node, counting exactly the running nodes as members.
    await until(() => agreedLeader(nodes) !== undefined && alive.every((n) => n.node.meta().knownMemberCount === alive.length), LEADER_BOUND_MS, what);
    history.sample(nodes);
    expect(history.violations, what).toEqual([]);
  };
  await settled('a first leader');

  for (let round = 0; round < SMALL_ROUNDS; round += 1) {
    const alive = live(nodes);
    const dead = nodes.filter((n) => n.stopped);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
    let action: string;
    if (dead.length > 0 && (alive.length === 0 || random() < 0.4)) {
      const old = pick(dead);
      const fresh = await restartNode(old, faults);
      nodes[nodes.indexOf(old)] = fresh;
      running.push(fresh);
      history.watch([fresh]);
      action = `restart ${old.id}`;
    } else {
      const victim = pick(alive);
      const leader = victim.node.meta().role === 'leader' ? 'leader' : 'follower';
      if (random() < 0.5) {
        await victim.kill();
        action = `kill ${leader} ${victim.id}`;
      } else {
        await victim.stop();
        action = `stop ${leader} ${victim.id}`;
      }
    }
    await settled(`one leader after round ${round} (${action})`);
    if (process.env.MDP_FAULT_VERBOSE)
      process.stdout.write(`round ${round}: ${action}, ${live(nodes).length} running, term ${agreedLeader(nodes)?.node.meta().term}\n`);
  }
  expect(history.leaders.size).toBeGreaterThan(0);
}

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
  await until(() => agreedLeader(nodes) !== undefined, HEAL_BOUND_MS, 'a first leader');

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
    // Let the cluster react for a while, counted in its own timers (five nodes at these timings run
    // about 15 per heartbeat interval): from under one heartbeat to more than a lease.
    await ticks(nodes, 5 + Math.floor(random() * 200));
    history.sample(nodes);
    expect(history.violations, `after round ${round}`).toEqual([]);
  }

  faults.healAll();
  await until(() => agreedLeader(nodes) !== undefined, HEAL_BOUND_MS, 'one agreed leader after healing');
  history.sample(nodes);
  expect(history.violations).toEqual([]);
  expect(history.leaders.size).toBeGreaterThan(0);
  if (process.env.MDP_FAULT_VERBOSE) process.stdout.write(`${history.leaders.size} terms with a leader\n`);
}
