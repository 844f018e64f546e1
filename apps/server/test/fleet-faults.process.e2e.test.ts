/**
 * Seeded faults on a fleet of real processes (SPEC §16): three `mdp-server --bus` nodes on a real
 * `nats-server`, websocket clients (reconnecting, each new attempt to the next node) and HTTP loop
 * clients (their requests spread round-robin over the nodes, as behind a load balancer without
 * stickiness, a new session when theirs is gone), with ids holding `.`, `*`, `>` and spaces, and
 * readers that read skills and call endpoints (some answered slowly, so calls are in flight when a
 * fault strikes) through random nodes the whole time. Then rounds, each chosen by the seed (every
 * three rounds hold each kind once):
 *
 * - `kill`: SIGKILL a node (or two), restart it on its port (at once, or once the others saw it go);
 * - `pause`: SIGSTOP a node until every other node took it for dead (past the TTL, `--bus-ttl-ms`
 *   1000), sometimes longer (its keys are then swept), maybe kill and restart another meanwhile,
 *   and SIGCONT it;
 * - `nats`: stop (SIGTERM) or kill nats-server, maybe kill a node meanwhile, start NATS again on its
 *   port (at once, or once every node's view of the others lapsed), then the killed node.
 *
 * After every round, once the fleet settled (every node lists every client, each client counted by
 * the one node that holds its session, polled with a deadline): no read was left hanging (each
 * answered within the call time-out plus a margin, minus the time its own node was stopped) with a
 * status the table below allows for what overlapped it; every client answers through every node,
 * as itself on the node that holds it; no node exited but those killed, and none logged an error.
 *
 * The seed is printed; `MDP_FAULT_SEED=<n>` replays one, `MDP_FAULT_ROUNDS=<n>` runs more rounds,
 * `MDP_FAULT_VERBOSE=1` prints each round. A fault lasts what its seed says or until the fleet
 * reacted (log lines, polls with deadlines); nothing waits a fixed time for something to happen.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NatsServer, freePorts, natsServerAvailable, removeScratch, scratchDir, warnIfNoNatsServer } from '@mdp/test-kit';
import { FleetLoopClient, WS_PING_EVERY_MS, http, json, pickWith, seededRandom, wsClient, type Answer, type TestedClient } from './fleet-clients.js';
import { killAll, logged, printed, spawnPlain, type Proc } from './processes.js';

warnIfNoNatsServer('fleet-faults.process.e2e.test.ts');

const SEEDS = process.env.MDP_FAULT_SEED ? [Number(process.env.MDP_FAULT_SEED)] : [20260321, 4711];
const ROUNDS = Number(process.env.MDP_FAULT_ROUNDS ?? 4);
const VERBOSE = Boolean(process.env.MDP_FAULT_VERBOSE);
/** `MDP_FAULT_LOG=debug`: the nodes log at that level (their lines are written out on a failure). */
const LOG_LEVEL = process.env.MDP_FAULT_LOG;
/** `MDP_FAULT_KINDS=nats,pause`: only these faults (default all three). */
const KINDS = (process.env.MDP_FAULT_KINDS?.split(',') ?? ['kill', 'pause', 'nats']) as Kind[];

const NODES = 3;
/** The smallest TTL the bus takes: a node silent this long is gone, ms. */
const TTL_MS = 1000;
/** The nodes' `--invocation-timeout-ms`: the time-out of every read. */
const CALL_TIMEOUT_MS = 3000;
/**
 * What a read may take beyond its time-out: the bus's own grace (1 s), a node's death seen (one
 * TTL and a beat), and room for a loaded 2-core machine.
 */
const MARGIN_MS = 4000;
const READ_BOUND_MS = CALL_TIMEOUT_MS + MARGIN_MS;
/** The fleet agrees again within this, after a round (a bound, not a wait). */
const SETTLE_MS = 30_000;
/** A node starts (and joins the bus) within this. */
const START_MS = 20_000;
/** What a fault waits for (the others see a node go, NATS lost or back) happens within this. */
const REACT_MS = 15_000;

const WS_IDS = ['ws.0', 'ws *1', 'ws>2'];
const LOOP_IDS = ['loop.>', 'loop 1'];

type Kind = 'kill' | 'pause' | 'nats';

// ------------------------------------------------------------------------------------------------
// The fleet

interface Outage {
  readonly kind: 'paused' | 'dead';
  readonly from: number;
  to: number | undefined;
}

interface FleetNode {
  readonly name: string;
  readonly port: number;
  proc: Proc;
  state: 'up' | 'paused' | 'dead';
  readonly outages: Outage[];
}

/** A fault and how long it counts: from its start until the fleet settled again. */
interface Window {
  readonly kind: Kind;
  readonly from: number;
  to: number | undefined;
}

// ------------------------------------------------------------------------------------------------
// Reads and what they may answer

type ReadKind = 'skill' | 'call' | 'slow';

interface Read {
  readonly kind: ReadKind;
  readonly client: TestedClient;
  readonly entry: FleetNode;
  readonly start: number;
  end: number;
  answer: Answer | undefined;
}

function sendRead(kind: ReadKind, client: TestedClient, entry: FleetNode, timeoutMs: number): Promise<Answer> {
  if (kind === 'skill') return http(entry.port, 'GET', `/skills/${encodeURIComponent(client.id)}/docs`, { timeoutMs });
  const body = JSON.stringify({ clientId: client.id, method: 'GET', path: kind === 'slow' ? '/slow' : '/who' });
  return http(entry.port, 'POST', '/mdp/call', { headers: json, body, timeoutMs });
}

/** The client's identity in a 200 answer, or undefined when it is not one of that client's. */
function identityIn(kind: ReadKind, answer: Answer): string | undefined {
  if (kind === 'skill') return answer.body.startsWith('# ') ? answer.body.slice(2) : undefined;
  try {
    const parsed = JSON.parse(answer.body) as { ok?: unknown; data?: unknown };
    return parsed.ok === true && typeof parsed.data === 'string' ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

const overlap = (from: number, to: number | undefined, start: number, end: number): number => Math.max(0, Math.min(to ?? end, end) - Math.max(from, start));

/**
 * What is wrong with a read, or undefined. The statuses a read may answer, by what overlapped it
 * (the seed's errors table, SPEC §8 and §12, and SPEC §16.3–16.4):
 *
 * | overlapped | allowed |
 * |---|---|
 * | nothing | 200 |
 * | any fault, until settled | 404 (gone, not yet back), 502 (its node left during the call or does not answer) |
 * | NATS down | 503 with `Retry-After` |
 * | a fault, for a loop client (a poll or answer lost with a node or the bus) or a read whose own node was stopped | 504 |
 * | its own node killed | 0 (the connection broke) |
 *
 * A 200 carries the answer of the client asked for; a 404 of a skill route has an empty body; a
 * failure of the host API or a 5xx has `{error}`.
 */
function readProblem(read: Read, windows: readonly Window[]): string | undefined {
  const answer = read.answer as Answer;
  const faults = windows.filter((w) => read.start < (w.to ?? Number.POSITIVE_INFINITY) && read.end > w.from);
  const stoppedMs = read.entry.outages.filter((o) => o.kind === 'paused').reduce((sum, o) => sum + overlap(o.from, o.to, read.start, read.end), 0);
  const entryDied = read.entry.outages.some((o) => o.kind === 'dead' && overlap(o.from, o.to, read.start, read.end) > 0);
  const allowed = new Set([200]);
  if (faults.length > 0) allowed.add(404).add(502);
  if (faults.some((w) => w.kind === 'nats')) allowed.add(503);
  if (faults.length > 0 && (read.client.transport === 'loop' || stoppedMs > 0)) allowed.add(504);
  if (entryDied) allowed.add(0);
  const took = read.end - read.start - stoppedMs;
  if (answer.status === -1) return `no answer within ${Math.round(read.end - read.start)} ms`;
  if (took > READ_BOUND_MS) return `answered ${answer.status} after ${Math.round(took)} ms (bound ${READ_BOUND_MS} ms)`;
  if (!allowed.has(answer.status))
    return `status ${answer.status} not allowed (allowed: ${[...allowed].join(', ')}; faults: ${faults.map((w) => w.kind).join(', ') || 'none'}): ${answer.body.slice(0, 200)}`;
  if (answer.status === 200) {
    const identity = identityIn(read.kind, answer);
    if (!identity?.startsWith(`${read.client.id}@`)) return `200 with another's answer: ${answer.body.slice(0, 200)}`;
    return undefined;
  }
  if (answer.status === 0) return undefined;
  if (read.kind === 'skill' && answer.status === 404) return answer.body === '' ? undefined : `404 of a skill route with a body: ${answer.body.slice(0, 200)}`;
  let body: { error?: unknown };
  try {
    body = JSON.parse(answer.body) as { error?: unknown };
  } catch {
    return `${answer.status} without a JSON body: ${answer.body.slice(0, 200)}`;
  }
  if (body.error === undefined) return `${answer.status} without error: ${answer.body.slice(0, 200)}`;
  if (answer.status === 503 && answer.headers['retry-after'] === undefined) return '503 without Retry-After';
  return undefined;
}

// ------------------------------------------------------------------------------------------------
// One seed

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  killAll();
  removeScratch();
});

describe.skipIf(!natsServerAvailable())('seeded faults on a fleet of processes on NATS', () => {
  for (const seed of SEEDS) {
    it(`no read hangs, no client is held twice, no node crashes (seed ${seed})`, { timeout: 60_000 + ROUNDS * 30_000 }, async () => {
      process.stdout.write(`fleet faults: seed ${seed}, ${ROUNDS} rounds (replay: MDP_FAULT_SEED=${seed})\n`);
      const actions: string[] = [];
      const procs: Array<{ name: string; proc: Proc }> = [];
      try {
        await scenario(seed, actions, procs);
      } catch (error) {
        // Every node's log lines, for what led to it.
        const dir = mkdtempSync(join(tmpdir(), `mdp-fleet-faults-${seed}-`));
        for (const [i, { name, proc }] of procs.entries()) writeFileSync(join(dir, `${i}-${name}.log`), proc.logs.map((l) => JSON.stringify(l)).join('\n'));
        process.stderr.write(
          `fleet fault test failed with seed ${seed} (replay: MDP_FAULT_SEED=${seed}; node logs in ${dir}) after: ${actions.join('; ')}\n${(error as Error).message}\n`,
        );
        throw error;
      }
    });
  }
});

async function scenario(seed: number, actions: string[], procs: Array<{ name: string; proc: Proc }>): Promise<void> {
  const random = seededRandom(seed);
  const pick = pickWith(random);
  const nats = await NatsServer.start();
  cleanups.push(() => nats.dispose());
  const stateDir = scratchDir('mdp-fleet-faults-');
  const ports = await freePorts(NODES);
  const crashes: string[] = [];
  /** Processes this test SIGKILLed or SIGTERMed: their exit is no crash. */
  const ended = new Set<Proc>();

  const spawnNode = (name: string, port: number): Proc => {
    const proc = spawnPlain(port, stateDir, [
      ...['--server-id', name, '--bus', nats.url, '--bus-prefix', 'faults', '--bus-ttl-ms', String(TTL_MS)],
      ...['--invocation-timeout-ms', String(CALL_TIMEOUT_MS)],
      // A loop session left behind ends only by the replacement rule within a round, not by idling.
      ...['--http-loop-idle-timeout-ms', '60000'],
      ...(LOG_LEVEL ? ['--log-level', LOG_LEVEL] : []),
    ]);
    procs.push({ name, proc });
    void proc.exited.then(({ code, signal }) => {
      if (!ended.has(proc))
        crashes.push(
          `${name} exited (${code ?? signal}); last log lines: ${proc.logs
            .slice(-5)
            .map((l) => JSON.stringify(l))
            .join('\n')}`,
        );
    });
    return proc;
  };
  const joined = (proc: Proc): Promise<RegExpExecArray> => printed(proc, /bus mode, node \S+ joined the fleet/, START_MS);

  /** SIGKILL `node`: it is dead from now on, for the readers and the table. */
  const kill = async (node: FleetNode): Promise<Outage> => {
    const outage: Outage = { kind: 'dead', from: performance.now(), to: undefined };
    node.outages.push(outage);
    node.state = 'dead';
    ended.add(node.proc);
    node.proc.child.kill('SIGKILL');
    await node.proc.exited;
    return outage;
  };
  /** Start `node` again on its port (a new incarnation); up once it joined the fleet. */
  const restart = async (node: FleetNode, outage: Outage): Promise<void> => {
    node.proc = spawnNode(node.name, node.port);
    await joined(node.proc);
    outage.to = performance.now();
    node.state = 'up';
  };

  const nodes: FleetNode[] = ports.map((port, i) => ({ name: `node-${i}`, port, proc: spawnNode(`node-${i}`, port), state: 'up', outages: [] }));
  cleanups.push(async () => {
    for (const node of nodes) if (node.state === 'paused') node.proc.child.kill('SIGCONT');
  });
  await Promise.all(nodes.map((node) => joined(node.proc)));

  // Clients: a websocket client starting on each node, two loop clients; each with a random of its
  // own, and ids that NATS subjects must not take for wildcards or token separators (SPEC §16.6).
  const clients: TestedClient[] = [
    ...nodes.map((_, i) => wsClient(WS_IDS[i] as string, ports, i, seededRandom(seed + 100 + i))),
    ...LOOP_IDS.map((id, i) => new FleetLoopClient(id, ports, i + 1, seededRandom(seed + 200 + i))),
  ];
  cleanups.push(async () => {
    await Promise.all(clients.map((client) => client.close()));
  });

  const windows: Window[] = [];
  const reads: Read[] = [];
  const inFlight = new Set<Promise<void>>();
  let reading = true;
  const reader = async (index: number): Promise<void> => {
    const own = seededRandom(seed + 300 + index);
    const ownPick = pickWith(own);
    while (reading) {
      const live = nodes.filter((node) => node.state === 'up');
      const entry = ownPick(live.length > 0 ? live : nodes);
      const read: Read = {
        kind: ownPick<ReadKind>(['skill', 'call', 'slow']),
        client: ownPick(clients),
        entry,
        start: performance.now(),
        end: 0,
        answer: undefined,
      };
      reads.push(read);
      // Past the bound (and whatever its own node was stopped), it is recorded as hanging.
      const sent = sendRead(read.kind, read.client, entry, READ_BOUND_MS + 10_000).then((answer) => {
        read.answer = answer;
        read.end = performance.now();
      });
      inFlight.add(sent);
      void sent.finally(() => inFlight.delete(sent));
      await sent;
      // The reader's own pace: a few dozen reads a second over all readers on a shared machine.
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(own() * 40)));
    }
  };
  await settle(nodes, clients, 'the first registrations');
  const readers = [0, 1, 2].map(reader);
  cleanups.push(async () => {
    reading = false;
    await Promise.all(readers);
  });

  const schedule: Kind[] = [];
  while (schedule.length < ROUNDS) {
    const kinds = [...KINDS];
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [kinds[i], kinds[j]] = [kinds[j] as Kind, kinds[i] as Kind];
    }
    schedule.push(...kinds);
  }

  /** Check the reads answered so far (and forget them); returns them. */
  const judge = (what: string): Read[] => {
    const done = reads.filter((read) => read.answer !== undefined);
    reads.splice(0, reads.length, ...reads.filter((read) => read.answer === undefined));
    const problems = done.map((read) => [read, readProblem(read, windows)] as const).filter(([, problem]) => problem !== undefined);
    expect(
      problems.map(([read, problem]) => `${read.kind} ${read.client.id} via ${read.entry.name}: ${problem}`),
      what,
    ).toEqual([]);
    return done;
  };

  for (let round = 0; round < ROUNDS; round++) {
    const kind = schedule[round] as Kind;
    const window: Window = { kind, from: performance.now(), to: undefined };
    windows.push(window);
    const victim = pick(nodes);
    const others = nodes.filter((node) => node !== victim);
    // A third of the rounds strike a second node while the first fault lasts.
    const second = random() < 1 / 3 ? pick(others) : undefined;
    let action: string;
    if (kind === 'kill') {
      const waitForDeath = random() < 0.5;
      const dying = second ? [victim, second] : [victim];
      const survivors = nodes.filter((node) => !dying.includes(node));
      action = `kill ${dying.map((n) => n.name).join(' and ')}, restart ${waitForDeath ? 'once the others saw it go' : 'at once'}`;
      actions.push(action);
      const marks = survivors.map((node) => node.proc.logs.length);
      const outages = await Promise.all(dying.map(kill));
      if (waitForDeath) {
        await Promise.all(survivors.flatMap((node, i) => dying.map((gone) => logged(node.proc, 'bus.node_down', { peer: gone.name }, REACT_MS, marks[i]))));
      }
      for (const [i, node] of dying.entries()) await restart(node, outages[i] as Outage);
    } else if (kind === 'pause') {
      // Past the TTL: until every other node took it for dead, then 0 to 2 TTLs more (its keys are
      // swept 2 TTLs after its last beat), or long enough for its clients to give it up and
      // register again elsewhere (then it must close their old sessions when it runs again).
      const longer = random() < 0.5 ? Math.floor(random() * 2 * TTL_MS) : 2 * WS_PING_EVERY_MS + Math.floor(random() * TTL_MS);
      action = `pause ${victim.name} until seen dead + ${longer} ms${second ? `, kill and restart ${second.name} meanwhile` : ''}`;
      actions.push(action);
      const marks = others.map((node) => node.proc.logs.length);
      const outage: Outage = { kind: 'paused', from: performance.now(), to: undefined };
      victim.outages.push(outage);
      victim.state = 'paused';
      victim.proc.child.kill('SIGSTOP');
      await Promise.all(others.map((node, i) => logged(node.proc, 'bus.node_down', { peer: victim.name }, REACT_MS, marks[i])));
      if (second) await restart(second, await kill(second));
      // How long the fault lasts, as the seed chose: not a wait for something to happen.
      await new Promise((resolve) => setTimeout(resolve, longer));
      victim.proc.child.kill('SIGCONT');
      outage.to = performance.now();
      victim.state = 'up';
    } else {
      const crash = random() < 0.5;
      const lapse = random() < 0.5;
      action = `${crash ? 'kill' : 'stop'} nats-server${second ? `, kill ${second.name}` : ''}, start it ${lapse ? 'once every view lapsed' : 'at once'}`;
      actions.push(action);
      const marks = nodes.map((node) => node.proc.logs.length);
      await (crash ? nats.kill() : nats.stop());
      const running = nodes.filter((node) => node !== second);
      await Promise.all(nodes.map((node, i) => logged(node.proc, 'bus.disconnected', {}, REACT_MS, marks[i])));
      // A node killed meanwhile comes back once NATS does: a node does not start without its bus.
      const outage = second && (await kill(second));
      if (lapse) {
        // Each node stops counting the others one TTL after their last heartbeat it saw.
        await Promise.all(
          running.flatMap((node) =>
            nodes.filter((peer) => peer !== node).map((peer) => logged(node.proc, 'bus.node_down', { peer: peer.name }, REACT_MS, marks[nodes.indexOf(node)])),
          ),
        );
      }
      await nats.start();
      await Promise.all(running.map((node) => logged(node.proc, 'bus.ready', {}, REACT_MS, marks[nodes.indexOf(node)])));
      if (second && outage) await restart(second, outage);
    }
    await settle(nodes, clients, `round ${round} (${action})`);
    window.to = performance.now();

    // Every read begun so far has its answer within the bound, or is recorded as hanging.
    await Promise.all([...inFlight]);
    const done = judge(`reads of round ${round} (${action})`);

    await everyClientThroughEveryNode(nodes, clients, `after round ${round} (${action})`);
    expect(crashes, `after round ${round} (${action})`).toEqual([]);
    const errors = procs.flatMap(({ name, proc }) => proc.logs.filter((line) => line.level === 'error').map((line) => `${name}: ${JSON.stringify(line)}`));
    expect(errors, `error log lines after round ${round} (${action})`).toEqual([]);
    if (VERBOSE) {
      const counts = new Map<number, number>();
      for (const read of done) counts.set(read.answer?.status ?? -1, (counts.get(read.answer?.status ?? -1) ?? 0) + 1);
      process.stdout.write(`seed ${seed} round ${round}: ${action}; ${done.length} reads: ${JSON.stringify(Object.fromEntries(counts))}\n`);
    }
  }

  reading = false;
  await Promise.all(readers);
  judge('the last reads');
  await Promise.all(clients.map((client) => client.close()));
  // Each node still stops cleanly.
  for (const node of nodes) {
    ended.add(node.proc);
    node.proc.child.kill('SIGTERM');
  }
  const exits = await Promise.all(nodes.map((node) => node.proc.exited));
  expect(exits).toEqual(nodes.map(() => ({ code: 0, signal: null })));
  expect(crashes).toEqual([]);
}

/**
 * Polls every node until the fleet agrees, or throws past {@link SETTLE_MS} saying what disagrees:
 * every client has a session; every node is ready and lists every client once; and each counts
 * as its own exactly the clients whose session it holds, so no client is held by two nodes.
 */
async function settle(nodes: readonly FleetNode[], clients: readonly TestedClient[], what: string): Promise<void> {
  const ids = clients.map((client) => client.id).sort();
  const deadline = performance.now() + SETTLE_MS;
  for (;;) {
    const problems: string[] = [];
    for (const client of clients) if (client.holder() === undefined) problems.push(`${client.id} has no session`);
    await Promise.all(
      nodes.map(async (node) => {
        const ready = await http(node.port, 'GET', '/readyz', { timeoutMs: 5000 });
        if (ready.status !== 200) problems.push(`${node.name} /readyz ${ready.status}`);
        const listed = await http(node.port, 'GET', '/mdp/clients?limit=1000', { timeoutMs: 5000 });
        const seen = listed.status === 200 ? (JSON.parse(listed.body) as { clients: Array<{ id: string }> }).clients.map((c) => c.id).sort() : [];
        if (seen.join() !== ids.join()) problems.push(`${node.name} lists [${seen.join()}]`);
        const metrics = await http(node.port, 'GET', '/metrics', { timeoutMs: 5000 });
        const held = [...metrics.body.matchAll(/^mdp_clients\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
        const expected = clients.filter((client) => client.holder() === node.port).length;
        if (held !== expected) problems.push(`${node.name} holds ${held} clients, its clients say ${expected}`);
      }),
    );
    if (problems.length === 0) return;
    if (performance.now() > deadline) throw new Error(`the fleet did not settle within ${SETTLE_MS} ms after ${what}: ${problems.join('; ')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Every client answers a skill read and a call through every node, as the session its node holds. */
async function everyClientThroughEveryNode(nodes: readonly FleetNode[], clients: readonly TestedClient[], what: string): Promise<void> {
  const problems: string[] = [];
  for (const node of nodes) {
    for (const client of clients) {
      for (const kind of ['skill', 'call'] as const) {
        const answer = await sendRead(kind, client, node, READ_BOUND_MS);
        const identity = answer.status === 200 ? identityIn(kind, answer) : undefined;
        if (identity !== client.identity())
          problems.push(`${kind} ${client.id} via ${node.name}: ${answer.status} ${answer.body.slice(0, 120)} (its session: ${client.identity()})`);
      }
    }
  }
  expect(problems, what).toEqual([]);
}
