/**
 * The fleet scenarios (issue 32, SPEC §16): a real nats-server and three `mdp-server --bus`
 * processes on it, each with a mock-client process of its own holding its share of the clients.
 *
 * - `fleet-read`: skill reads sent to the node that holds the client (local), to another node
 *   (remote: one NATS request from that node to the holder), or to any node, alternating round by
 *   round on the same fleet. Server CPU is the sum over the three nodes: every process a read
 *   touches pays its part; the NATS server's CPU is reported beside it.
 * - `fleet-scale`: the first node's heap after full GCs with only its own clients, then with every
 *   other node's (its directory of remote clients); then SIGKILL of the last node and the time until
 *   no other node's `/mdp/clients` lists its clients.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Population } from './fixtures.js';
import { type LoadGenerator, loadFigures } from './load-generator.js';
import { NatsProcess } from './nats.js';
import type { ProcessUsage } from './probe.js';
import type { RunOptions, RunRecord } from './runner.js';
import type { Scenario } from './scenarios.js';
import { ClientProcess, RunningServer, profileSlug, type ServerOptions } from './subjects.js';

type FleetReadScenario = Extract<Scenario, { kind: 'fleet-read' }>;
type FleetScaleScenario = Extract<Scenario, { kind: 'fleet-scale' }>;

/** Every fleet of a run uses this prefix: each has a nats-server of its own. */
const BUS_PREFIX = 'mdp-bench';
/** Between two looks at a node's /readyz while waiting for its directory, ms. */
const POLL_MS = 50;
/** Between two listings sent to a survivor after a node is killed, ms. */
const AGREE_POLL_MS = 20;
/** Time for the fleet's state to settle before a heap reading (timers, last watch deliveries), ms. */
const SETTLE_MS = 500;

interface FleetNode {
  /** `a`, `b`, `c`, … */
  readonly name: string;
  readonly server: RunningServer;
  readonly clients: ClientProcess;
  /** The clients it holds: ids `node-<name>-0`, `node-<name>-1`, … */
  readonly population: Population;
}

/** The prefix of a node's client ids; no id of another node holds it (the listing searches by it). */
export const fleetClientPrefix = (name: string): string => `node-${name}-`;

/** `total` clients spread over `nodes`: the first ones get one more when it does not divide. */
export function fleetShares(total: number, nodes: number): number[] {
  return Array.from({ length: nodes }, (_, k) => Math.floor(total / nodes) + (k < total % nodes ? 1 : 0));
}

interface ReadyAnswer {
  readonly ready?: boolean;
  readonly bus?: { readonly connected?: boolean; readonly nodes?: number; readonly remoteClients?: number };
}

async function readyz(port: number): Promise<ReadyAnswer> {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return (await response.json()) as ReadyAnswer;
}

/** Check `check` every POLL_MS until it holds, at most `timeoutMs`. */
async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (performance.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what()}`);
    await sleep(POLL_MS);
  }
}

/**
 * How many clients whose id starts with `prefix` a node's `GET /mdp/clients` lists: a search for
 * the prefix, every page followed (a search page may end early with a cursor, SPEC §12.6).
 */
export async function listedWithPrefix(port: number, prefix: string): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const url = new URL(`http://127.0.0.1:${port}/mdp/clients`);
    url.searchParams.set('search', prefix);
    url.searchParams.set('limit', '1000');
    if (cursor !== undefined) url.searchParams.set('cursor', cursor);
    const response = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    if (response.status !== 200) throw new Error(`GET ${url.pathname}${url.search} on :${port}: ${response.status} ${(await response.text()).slice(0, 200)}`);
    const page = (await response.json()) as { clients: Array<{ id: string }>; nextCursor?: string };
    count += page.clients.filter((client) => client.id.startsWith(prefix)).length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return count;
}

/** The id of the first client a node's `GET /mdp/clients` lists (clients are listed by id), or undefined. */
async function firstListed(port: number): Promise<string | undefined> {
  const response = await fetch(`http://127.0.0.1:${port}/mdp/clients?limit=1`, { signal: AbortSignal.timeout(30_000) });
  if (response.status !== 200) throw new Error(`GET /mdp/clients?limit=1 on :${port}: ${response.status} ${(await response.text()).slice(0, 200)}`);
  const page = (await response.json()) as { clients: Array<{ id: string }> };
  return page.clients[0]?.id;
}

/** Most listings in flight at once to one node while waiting for a change. */
const AGREE_MAX_IN_FLIGHT = 8;

/**
 * Ask a node for its first listed client every AGREE_POLL_MS, without waiting for the answers (at
 * most AGREE_MAX_IN_FLIGHT at once), until one answers with a client whose id does not start with
 * `prefix`. A node that is busy answers late, and every request waits: the answer time is when its
 * listing showed the change; the send time of the last request answered the old way is a bound
 * before it. Times from `performance.now()`.
 */
function untilFirstIsNot(
  port: number,
  prefix: string,
  since: number,
  deadlineMs: number,
): Promise<{ readonly answeredAt: number; readonly lastListedSentAt: number }> {
  return new Promise((resolve, reject) => {
    let lastListedSentAt = since;
    let inFlight = 0;
    let done = false;
    const finish = (settle: () => void): void => {
      if (done) return;
      done = true;
      clearInterval(timer);
      settle();
    };
    const poll = (): void => {
      if (performance.now() - since > deadlineMs) {
        finish(() => reject(new Error(`:${port} still lists clients ${prefix}… ${deadlineMs} ms on`)));
        return;
      }
      if (inFlight >= AGREE_MAX_IN_FLIGHT) return;
      inFlight++;
      const sentAt = performance.now();
      firstListed(port).then(
        (first) => {
          inFlight--;
          if (first?.startsWith(prefix)) lastListedSentAt = Math.max(lastListedSentAt, sentAt);
          else finish(() => resolve({ answeredAt: performance.now(), lastListedSentAt }));
        },
        (error: unknown) => finish(() => reject(error)),
      );
    };
    const timer = setInterval(poll, AGREE_POLL_MS);
    poll();
  });
}

class Fleet {
  private constructor(
    readonly nats: NatsProcess,
    readonly nodes: readonly FleetNode[],
  ) {}

  /** A nats-server and `shares.length` nodes on it (no clients connected yet). */
  static async start(label: string, shares: readonly number[], ttlMs: number, serverOptions: (node: string) => ServerOptions): Promise<Fleet> {
    const nats = await NatsProcess.start(label);
    const started: FleetNode[] = [];
    try {
      const names = shares.map((_, k) => String.fromCharCode(97 + k));
      const servers = await Promise.allSettled(
        names.map((name, k) =>
          RunningServer.start('mdp', `${label} node ${name}`, {
            ...serverOptions(name),
            clients: shares[k],
            extraArgs: ['--server-id', `bench-node-${name}`, '--bus', nats.url, '--bus-prefix', BUS_PREFIX, '--bus-ttl-ms', String(ttlMs)],
          }),
        ),
      );
      for (const [k, result] of servers.entries()) {
        if (result.status === 'rejected') continue;
        const name = names[k] as string;
        started.push({
          name,
          server: result.value,
          clients: new ClientProcess(`${label} node ${name}`),
          population: { prefix: fleetClientPrefix(name), clients: shares[k] as number, skills: 1 },
        });
      }
      const failed = servers.find((result) => result.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      return new Fleet(nats, started);
    } catch (error) {
      await new Fleet(nats, started).stop();
      throw error;
    }
  }

  get total(): number {
    return this.nodes.reduce((sum, node) => sum + node.population.clients, 0);
  }

  /** Connect and confirm one node's clients; returns how long it took, ms. */
  connect(node: FleetNode): Promise<number> {
    return node.clients.connect(node.server.wsUrl, 'ws', node.population, 60_000 + node.population.clients * 30);
  }

  /**
   * Wait until each of `nodes` has every connected client of the others in its directory
   * (`/readyz`: `bus.remoteClients`), `connected` saying which nodes' clients are connected.
   */
  async waitForDirectories(nodes: readonly FleetNode[], connected: readonly FleetNode[], timeoutMs: number): Promise<void> {
    const seen = new Map<string, number | undefined>();
    await Promise.all(
      nodes.map((node) => {
        const expected = connected.filter((other) => other !== node).reduce((sum, other) => sum + other.population.clients, 0);
        return waitFor(
          async () => {
            const remote = (await readyz(node.server.port)).bus?.remoteClients;
            seen.set(node.name, remote);
            return remote === expected;
          },
          timeoutMs,
          () => `node ${node.name} to have ${expected} remote clients in its directory (it has ${seen.get(node.name) ?? 'none'})`,
        );
      }),
    );
  }

  usage(): Promise<ProcessUsage[]> {
    return Promise.all(this.nodes.map((node) => node.server.usage()));
  }

  /** Client errors of every node's clients (`skip`: nodes whose clients' errors do not count). */
  async clientErrors(skip: ReadonlySet<FleetNode> = new Set()): Promise<{ errors: number; lastError: string | undefined }> {
    let errors = 0;
    let lastError: string | undefined;
    for (const node of this.nodes) {
      if (skip.has(node)) continue;
      const stats = await node.clients.stats();
      errors += stats.errors;
      lastError = stats.lastError ?? lastError;
    }
    return { errors, lastError };
  }

  /** Disconnect every node's clients, stop every node, then the nats-server. */
  async stop(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (node) => {
        if (node.clients.child.running) await node.clients.disconnect().catch(() => undefined);
        await Promise.all([node.clients.stop(), node.server.stop()]);
      }),
    );
    await this.nats.stop();
  }
}

const alternate = <T>(items: readonly T[], round: number): T[] => (round % 2 === 0 ? [...items] : [...items].reverse());

function fleetServerOptions(options: RunOptions, scenario: string): (node: string) => ServerOptions {
  const base = options.server.cpuProfileDir;
  return (node) => (base ? { ...options.server, cpuProfileDir: `${base}/${profileSlug(scenario, `node ${node}`)}` } : options.server);
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

export async function runFleetRead(scenario: FleetReadScenario, loadgen: LoadGenerator, options: RunOptions): Promise<RunRecord[]> {
  const shares = fleetShares(scenario.clients, scenario.nodes);
  options.log(`  starting nats-server and ${scenario.nodes} nodes (clients ${shares.join(' + ')}, bus TTL ${scenario.ttlMs} ms)`);
  const fleet = await Fleet.start(scenario.name, shares, scenario.ttlMs, fleetServerOptions(options, scenario.name));
  const records: RunRecord[] = [];
  try {
    const started = performance.now();
    await Promise.all(fleet.nodes.map((node) => fleet.connect(node)));
    await fleet.waitForDirectories(fleet.nodes, fleet.nodes, 60_000);
    options.log(`    ${fleet.total} clients connected, registered and in every node's directory in ${(performance.now() - started).toFixed(0)} ms`);
    const caseLabel = `${scenario.clients} clients, ${scenario.nodes} nodes`;
    const fleetLoad = (sendTo: 'holder' | 'other' | 'any') => ({
      nodes: fleet.nodes.map((node) => ({ port: node.server.port, population: node.population })),
      sendTo,
    });
    const first = fleet.nodes[0] as FleetNode;
    const run = async (sendTo: 'holder' | 'other' | 'any', concurrency: number, durationMs: number, seed: number) => {
      const before = await fleet.clientErrors();
      const [u0, b0] = [await fleet.usage(), fleet.nats.cpuUs()];
      const result = await loadgen.run({
        port: first.server.port,
        population: first.population,
        concurrency,
        durationMs,
        seed,
        fleet: fleetLoad(sendTo),
      });
      const [u1, b1] = [await fleet.usage(), fleet.nats.cpuUs()];
      const after = await fleet.clientErrors();
      const nodesCpuUs = sum(u1.map((u, k) => u.cpuUs - (u0[k] as ProcessUsage).cpuUs));
      const busCpuUs = b1 - b0;
      return {
        ...loadFigures(result, before, after),
        cpuUsPerOp: nodesCpuUs / result.requests,
        busCpuUsPerOp: busCpuUs / result.requests,
        fleetCpuUsPerOp: (nodesCpuUs + busCpuUs) / result.requests,
        rssBytes: sum(u1.map((u) => u.rss)),
        rssPeakBytes: sum(u1.map((u) => u.maxRss)),
      };
    };
    // Three processes to warm up, each taking a third of the reads: first reads to any node (every
    // path on every node), then each destination at each concurrency before its rounds.
    const warm = async (label: string, sendTo: 'holder' | 'other' | 'any', concurrency: number, ms: number): Promise<void> => {
      const figures = await run(sendTo, concurrency, ms, 1_000_003);
      if (figures.errors > 0) options.log(`  warm-up of ${label} at c${concurrency}: ${figures.errors} errors (${figures.lastError})`);
    };
    await warm('reads to any node', 'any', Math.max(...scenario.concurrencies), 2 * options.warmupMs);
    for (const concurrency of scenario.concurrencies) {
      const loadLabel = `c${concurrency}`;
      for (const destination of scenario.destinations) await warm(destination.label, destination.sendTo, concurrency, options.warmupMs);
      for (let round = 0; round < options.rounds; round++) {
        for (const destination of alternate(scenario.destinations, round)) {
          const figures = await run(destination.sendTo, concurrency, options.durationMs, round + 1);
          records.push({ scenario: scenario.name, caseLabel, load: loadLabel, subject: destination.label, round, ...figures });
          options.log(
            `  ${loadLabel} round ${round + 1}/${options.rounds} ${destination.label}: ${figures.opsPerSec.toFixed(0)} req/s, ` +
              `${figures.cpuUsPerOp.toFixed(1)} µs/req on the nodes + ${figures.busCpuUsPerOp.toFixed(1)} on NATS, ${figures.errors} errors`,
          );
        }
      }
    }
  } finally {
    await fleet.stop();
  }
  return records;
}

/** One fresh fleet: the first node's directory memory, then the time to agree after the last node dies. */
async function fleetScaleRound(scenario: FleetScaleScenario, options: RunOptions, round: number): Promise<RunRecord> {
  const shares = fleetShares(scenario.clients, scenario.nodes);
  options.log(`  round ${round + 1}: starting nats-server and ${scenario.nodes} nodes (clients ${shares.join(' + ')}, bus TTL ${scenario.ttlMs} ms)`);
  const fleet = await Fleet.start(scenario.name, shares, scenario.ttlMs, fleetServerOptions(options, scenario.name));
  try {
    // The node that dies is the first (its ids, `node-a-…`, come first in every listing); the
    // second is measured.
    const [dying, measured] = fleet.nodes as [FleetNode, FleetNode, ...FleetNode[]];
    const others = fleet.nodes.filter((node) => node !== measured);
    const survivors = fleet.nodes.filter((node) => node !== dying);
    const timeoutMs = 60_000 + scenario.clients * 30;

    // The measured node with its own clients only, every node's directory holding them.
    const u0 = await fleet.usage();
    await fleet.connect(measured);
    await fleet.waitForDirectories(fleet.nodes, [measured], timeoutMs);
    await sleep(SETTLE_MS);
    const m0 = await measured.server.collectedUsage();

    // Then every other node's clients: what the measured node holds more is its directory of them.
    const connectStarted = performance.now();
    await Promise.all(others.map((node) => fleet.connect(node)));
    const connectMs = performance.now() - connectStarted;
    const connectedAt = performance.now();
    await fleet.waitForDirectories([measured], fleet.nodes, timeoutMs);
    const catchUpMs = performance.now() - connectedAt;
    await fleet.waitForDirectories(fleet.nodes, fleet.nodes, timeoutMs);
    const u1 = await fleet.usage();
    await sleep(SETTLE_MS);
    const m1 = await measured.server.collectedUsage();
    const remote = sum(others.map((node) => node.population.clients));
    const registered = fleet.total;
    options.log(
      `    ${remote} remote clients on node ${measured.name}: heap ${((m1.heapUsed - m0.heapUsed) / remote).toFixed(0)} B each ` +
        `(directory caught up ${catchUpMs.toFixed(0)} ms after the last client registered)`,
    );

    // Every survivor lists all of the dying node's clients, first. This also fetches and caches
    // their catalogs, so that a listing after the kill shows what the directory holds rather than
    // leaving out a client whose catalog could not be fetched from a dead node.
    const prefix = dying.population.prefix;
    const expected = dying.population.clients;
    const listedBefore = new Map<string, string>();
    await Promise.all(
      survivors.map((node) =>
        waitFor(
          async () => {
            const [n, first] = [await listedWithPrefix(node.server.port, prefix), await firstListed(node.server.port)];
            listedBefore.set(node.name, `${n}, the first ${first ?? 'none'}`);
            return n === expected && first?.startsWith(prefix) === true;
          },
          timeoutMs,
          () => `node ${node.name} to list node ${dying.name}'s ${expected} clients first (it lists ${listedBefore.get(node.name) ?? 'none'})`,
        ),
      ),
    );
    // Errors of the dying node's clients count until it is killed; their closes after it are expected.
    const dyingBefore = await dying.clients.stats();

    // SIGKILL: the node says nothing; every other node must notice its silence (its TTL). Each
    // survivor's first listed client tells whether any of the dead node's is still listed (they
    // come first); when none is, a whole search listing confirms it.
    const deadlineMs = 3 * scenario.ttlMs + 30_000;
    // Each survivor also logs when its directory takes the node for dead (`bus.node_down`, with its
    // wall-clock time): the moment itself, which the listings see a poll later.
    const nodeDown = new RegExp(`^(?=.*"event":"bus\\.node_down")(?=.*"peer":${JSON.stringify(`bench-node-${dying.name}`)})`);
    const downAt = survivors.map((node) =>
      node.server.child
        .waitForLine(nodeDown, deadlineMs, 'stderr')
        .then((match) => Date.parse((JSON.parse(match.input ?? '{}') as { time?: string }).time ?? '')),
    );
    // How long the survivors' event loops stall while they take the node's clients out.
    await Promise.all(survivors.map(async (node) => Promise.all([node.server.startLoopDelay(), node.server.startTurnCpu()])));
    const killedWall = Date.now();
    const killedAt = performance.now();
    const killed = dying.server.child.kill();
    const agreed = await Promise.all(
      survivors.map(async (node) => {
        for (;;) {
          const seen = await untilFirstIsNot(node.server.port, prefix, killedAt, deadlineMs);
          const left = await listedWithPrefix(node.server.port, prefix);
          if (left === 0) return { ms: seen.answeredAt - killedAt, stepMs: seen.answeredAt - seen.lastListedSentAt };
          options.log(`    node ${node.name}: its first client is not node ${dying.name}'s, yet a search lists ${left} of them; polling on`);
        }
      }),
    );
    await killed;
    const stalls = await Promise.all(survivors.map(async (node) => ({ loop: await node.server.loopDelay(), turn: await node.server.turnCpu() })));
    const agreeMs = Math.max(...agreed.map((a) => a.ms));
    const nodeDownMs = Math.max(...(await Promise.all(downAt)).map((at) => at - killedWall));
    const after = await fleet.clientErrors(new Set([dying]));
    const errors = after.errors + dyingBefore.errors;
    options.log(
      `    node ${dying.name} killed: its ${expected} clients gone from every other node's listing after ${agreeMs.toFixed(0)} ms ` +
        `(${agreed.map((a, k) => `node ${survivors[k]?.name} ${a.ms.toFixed(0)} ms, ±${a.stepMs.toFixed(0)}`).join('; ')}); ` +
        `the last survivor logged bus.node_down ${nodeDownMs} ms after the kill; survivors' longest turn ` +
        `${stalls.map((x) => `${x.turn.maxMs.toFixed(0)} ms CPU (loop delay ${x.loop.maxMs.toFixed(0)} ms)`).join(', ')}`,
    );
    return {
      scenario: scenario.name,
      caseLabel: `${scenario.clients.toLocaleString('en-US')} clients, ${scenario.nodes} nodes`,
      load: 'idle',
      subject: `node ${measured.name}`,
      round,
      ops: registered,
      opsPerSec: (remote / connectMs) * 1000,
      p50: Number.NaN,
      p99: Number.NaN,
      errors,
      lastError: after.lastError ?? dyingBefore.lastError,
      cpuUsPerOp: sum(u1.map((u, k) => u.cpuUs - (u0[k] as ProcessUsage).cpuUs)) / registered,
      rssBytes: m1.rss,
      rssPeakBytes: m1.maxRss,
      remoteClients: remote,
      heapBytesPerRemote: (m1.heapUsed - m0.heapUsed) / remote,
      bytesPerConn: (m1.rss - m0.rss) / remote,
      catchUpMs,
      agreeMs,
      agreeStepMs: Math.max(...agreed.map((a) => a.stepMs)),
      nodeDownMs,
      loopMax: Math.max(...stalls.map((x) => x.loop.maxMs)),
      turnMax: Math.max(...stalls.map((x) => x.turn.maxMs)),
      ttlMs: scenario.ttlMs,
    };
  } finally {
    await fleet.stop();
  }
}

/** Fleet scale runs at most this many rounds: each is a whole fleet of its clients. */
export const FLEET_SCALE_MAX_ROUNDS = 3;

export async function runFleetScale(scenario: FleetScaleScenario, options: RunOptions): Promise<RunRecord[]> {
  const records: RunRecord[] = [];
  const rounds = Math.min(options.rounds, FLEET_SCALE_MAX_ROUNDS);
  for (let round = 0; round < rounds; round++) records.push(await fleetScaleRound(scenario, options, round));
  return records;
}
