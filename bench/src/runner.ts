/**
 * Runs scenarios: brings subjects up, warms each one, then loads them in alternation round by
 * round (A B, B A, A B, …, so drift on a shared machine falls on both sides), reading each
 * server's own CPU time and memory around every run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LoadGenerator, loadFigures } from './load-generator.js';
import type { ReadCase, Scenario } from './scenarios.js';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { coldStart, type StartCommand } from './cold-start.js';
import { runFleetRead, runFleetScale } from './fleet.js';
import { natsServerMissing } from './nats.js';
import { runScans } from './scan.js';
import {
  BARE_MCP_STDIO,
  BARE_MCP_STDIO_BUNDLED,
  ClientProcess,
  RunningServer,
  Subject,
  churn,
  mdpServerCli,
  profileSlug,
  type ServerOptions,
  type SubjectSpec,
} from './subjects.js';

export interface RunOptions {
  readonly rounds: number;
  /** Length of one measured run, ms. */
  readonly durationMs: number;
  /** Unmeasured run per subject before the rounds (JIT, connection pools), ms. */
  readonly warmupMs: number;
  /** Server options; a `cpuProfileDir` gets one sub-directory per subject. */
  readonly server: ServerOptions;
  readonly log: (line: string) => void;
}

/** One measured run of one subject. */
export interface RunRecord {
  readonly scenario: string;
  readonly caseLabel: string;
  /** e.g. `c32` for 32 concurrent readers. */
  readonly load: string;
  readonly subject: string;
  readonly round: number;
  /** Completed operations: skill reads, registrations, or held connections. */
  readonly ops: number;
  readonly opsPerSec: number;
  /** Latency of the operation, ms (exact percentiles over every completed one). */
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly lastError?: string;
  /** Server CPU time (user + system, all threads) per operation, µs. */
  readonly cpuUsPerOp: number;
  /** Server resident set size at the end of the run, bytes. */
  readonly rssBytes: number;
  /**
   * The largest resident set the server had from its start to the end of the run (`ru_maxrss`),
   * bytes: registration, warm-up and every earlier run included.
   */
  readonly rssPeakBytes: number;
  /** Read scenarios: the server's RSS peak once its clients had registered, before any load, bytes. */
  readonly rssPeakRegisteredBytes?: number;
  /** Idle memory only: server RSS growth per held connection, bytes (after full GCs). */
  readonly bytesPerConn?: number;
  /** Idle memory only: JS heap + external growth per held connection, bytes (after full GCs). */
  readonly heapBytesPerConn?: number;
  /** Listing only: the slowest /mdp/meta, ms. */
  readonly max?: number;
  /** Listing only: listing pages answered, bytes of them per second, the largest one, and p99 of a page, ms. */
  readonly pages?: number;
  readonly bytesPerSec?: number;
  readonly largestPage?: number;
  readonly pageP99?: number;
  /** Listing only: how late the server's own event loop ran, largest and p99, ms (its monitorEventLoopDelay). */
  readonly loopMax?: number;
  readonly loopP99?: number;
  /** Listing only: the CPU time the server spent between two ticks of a 1 ms timer, largest and p99, ms (its longest turns). */
  readonly turnMax?: number;
  readonly turnP99?: number;
  /** Cold start only: this start's time over the same round's start of the scenario's floor (node alone), ms. */
  readonly overFloorMs?: number;
  /** Fleet read: the NATS server's CPU per read, and the nodes' and its together, µs. */
  readonly busCpuUsPerOp?: number;
  readonly fleetCpuUsPerOp?: number;
  /** Fleet scale: clients of other nodes in the measured node's directory, and its heap per one (after full GCs), bytes. */
  readonly remoteClients?: number;
  readonly heapBytesPerRemote?: number;
  /** Fleet scale: from the last registration to the measured node's directory holding every client, ms. */
  readonly catchUpMs?: number;
  /**
   * Fleet scale: from SIGKILL of a node to no other node listing its clients, ms (the answer of
   * the first listing without them); how long before it the last listing that had them was sent,
   * ms (the resolution); the bus TTL, ms.
   */
  readonly agreeMs?: number;
  readonly agreeStepMs?: number;
  /** Fleet scale: from SIGKILL to the last survivor's `bus.node_down` log line (its directory took the node for dead), ms. */
  readonly nodeDownMs?: number;
  readonly ttlMs?: number;
}

function serverOptions(options: RunOptions, ...names: string[]): ServerOptions {
  const base = options.server.cpuProfileDir;
  return base ? { ...options.server, cpuProfileDir: join(base, profileSlug(...names)) } : options.server;
}

const alternate = <T>(items: readonly T[], round: number): T[] => (round % 2 === 0 ? [...items] : [...items].reverse());

async function readRun(
  loadgen: LoadGenerator,
  subject: Subject,
  concurrency: number,
  durationMs: number,
  seed: number,
): Promise<Omit<RunRecord, 'scenario' | 'caseLabel' | 'load' | 'subject' | 'round'>> {
  const before = await subject.clientErrors();
  const u0 = await subject.server.usage();
  const result = await loadgen.run({ port: subject.server.port, population: subject.population, concurrency, durationMs, seed });
  const u1 = await subject.server.usage();
  const after = await subject.clientErrors();
  return {
    ...loadFigures(result, before, after),
    cpuUsPerOp: (u1.cpuUs - u0.cpuUs) / result.requests,
    rssBytes: u1.rss,
    rssPeakBytes: u1.maxRss,
    rssPeakRegisteredBytes: subject.registeredPeakBytes,
  };
}

async function runReadCase(scenario: string, readCase: ReadCase, loadgen: LoadGenerator, options: RunOptions): Promise<RunRecord[]> {
  const records: RunRecord[] = [];
  const subjects: Subject[] = [];
  try {
    for (const spec of readCase.subjects) {
      options.log(`  starting ${spec.label} (${spec.population.clients} × ${spec.population.skills} ${spec.transport})`);
      const subject = await Subject.start(spec, serverOptions(options, scenario, readCase.label, spec.label));
      subjects.push(subject);
      if (subject.started) {
        options.log(
          `    connected and registered in ${subject.started.ms.toFixed(0)} ms, server CPU ${subject.started.cpuUsPerClient.toFixed(0)} µs per client`,
        );
      }
    }
    for (const load of readCase.loads) {
      const loadLabel = `c${load.concurrency}`;
      for (const subject of subjects) {
        const warm = await readRun(loadgen, subject, load.concurrency, options.warmupMs, 1_000_003);
        if (warm.errors > 0) options.log(`  warm-up of ${subject.spec.label}: ${warm.errors} errors (${warm.lastError})`);
      }
      for (let round = 0; round < options.rounds; round++) {
        for (const subject of alternate(subjects, round)) {
          const figures = await readRun(loadgen, subject, load.concurrency, options.durationMs, round + 1);
          records.push({ scenario, caseLabel: readCase.label, load: loadLabel, subject: subject.spec.label, round, ...figures });
          options.log(
            `  ${readCase.label} ${loadLabel} round ${round + 1}/${options.rounds} ${subject.spec.label}: ` +
              `${figures.opsPerSec.toFixed(0)} req/s, ${figures.cpuUsPerOp.toFixed(1)} µs/req, ${figures.errors} errors`,
          );
        }
      }
    }
  } finally {
    await Promise.all(subjects.map((subject) => subject.stop()));
  }
  return records;
}

/** A fresh server per round: RSS before and after connecting `clients` clients, both after full GCs. */
async function memoryRun(spec: SubjectSpec, options: RunOptions): Promise<Omit<RunRecord, 'scenario' | 'caseLabel' | 'load' | 'subject' | 'round'>> {
  // No CPU profile here: memory figures only.
  const server = await RunningServer.start(spec.server, spec.label, { nodeArgs: options.server.nodeArgs, clients: spec.population.clients });
  const clients = new ClientProcess(spec.label);
  try {
    // Let start-up work (module loading, first timers) finish before the baseline reading.
    await sleep(300);
    const m0 = await server.collectedUsage();
    const u0 = await server.usage();
    const connectMs = await clients.connect(server.wsUrl, 'ws', spec.population, 60_000 + spec.population.clients * 30);
    const u1 = await server.usage();
    await sleep(500);
    const m1 = await server.collectedUsage();
    const stats = await clients.stats();
    const n = spec.population.clients;
    return {
      ops: n,
      opsPerSec: (n / connectMs) * 1000,
      p50: Number.NaN,
      p99: Number.NaN,
      errors: stats.errors,
      lastError: stats.lastError,
      cpuUsPerOp: (u1.cpuUs - u0.cpuUs) / n,
      rssBytes: m1.rss,
      rssPeakBytes: m1.maxRss,
      bytesPerConn: (m1.rss - m0.rss) / n,
      heapBytesPerConn: (m1.heapUsed + m1.external - m0.heapUsed - m0.external) / n,
    };
  } finally {
    await clients.disconnect().catch(() => undefined);
    await Promise.all([clients.stop(), server.stop()]);
  }
}

type ColdStartScenario = Extract<Scenario, { kind: 'cold-start' }>;

/**
 * Cold starts: every subject once unmeasured (the files into the OS's cache), then `starts` rounds
 * of one start each, in alternating order. A start's time is also taken relative to the floor's
 * start of the same round, which the machine's load shifts alike. Each start of the binary runs in
 * a scratch directory of its own, with its own state directory, removed after.
 */
async function runColdStarts(scenario: ColdStartScenario, options: RunOptions): Promise<RunRecord[]> {
  const scratch = mkdtempSync(join(tmpdir(), 'mdp-bench-cold-'));
  const commandOf = (subject: ColdStartScenario['subjects'][number]): StartCommand => {
    const { program, args, until } = subject.start;
    if (program === 'node') return { args: ['-e', ''], until, cwd: scratch };
    if (program === 'bare-mcp-stdio') return { args: [BARE_MCP_STDIO, ...args], until, cwd: scratch };
    if (program === 'bare-mcp-stdio-bundled') return { args: [BARE_MCP_STDIO_BUNDLED, ...args], until, cwd: scratch };
    const state = ['mcp'].includes(args[0] ?? '') ? ['--cluster-state-dir', join(scratch, 'state')] : [];
    return { args: [...(options.server.nodeArgs ?? []), mdpServerCli(), ...args, ...state], until, cwd: scratch };
  };
  const records: RunRecord[] = [];
  try {
    for (const subject of scenario.subjects) {
      const warm = await coldStart(commandOf(subject));
      if (warm.error) options.log(`  ${subject.label}: ${warm.error}`);
    }
    const floor = scenario.subjects[0]?.label;
    for (let round = 0; round < scenario.starts; round++) {
      const figures = new Map<string, Awaited<ReturnType<typeof coldStart>>>();
      for (const subject of alternate(scenario.subjects, round)) figures.set(subject.label, await coldStart(commandOf(subject)));
      const floorMs = floor === undefined ? Number.NaN : (figures.get(floor)?.wallMs ?? Number.NaN);
      for (const subject of scenario.subjects) {
        const { wallMs, cpuMs, error } = figures.get(subject.label) as Awaited<ReturnType<typeof coldStart>>;
        records.push({
          scenario: scenario.name,
          caseLabel: `${scenario.starts} starts`,
          load: 'c1',
          subject: subject.label,
          round,
          ops: 1,
          opsPerSec: Number.NaN,
          p50: wallMs,
          p99: Number.NaN,
          errors: error ? 1 : 0,
          lastError: error,
          cpuUsPerOp: cpuMs * 1000,
          rssBytes: Number.NaN,
          rssPeakBytes: Number.NaN,
          overFloorMs: wallMs - floorMs,
        });
      }
      options.log(
        `  round ${round + 1}/${scenario.starts}: ${scenario.subjects.map((s) => `${s.label} ${figures.get(s.label)?.wallMs.toFixed(0)} ms`).join(', ')}`,
      );
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return records;
}

type ListingScenario = Extract<Scenario, { kind: 'listing' }>;

/**
 * Listing (issue 36): for each catalog, one server; per load, `walkers` loops walk every page of the
 * largest listings (listing-load.ts) while a process of its own times `GET /mdp/meta`.
 */
async function runListing(scenario: ListingScenario, walker: LoadGenerator, options: RunOptions): Promise<RunRecord[]> {
  const records: RunRecord[] = [];
  const prober = new LoadGenerator('meta prober');
  try {
    for (const listingCase of scenario.cases) {
      const spec: SubjectSpec =
        listingCase.server === 'mdp'
          ? { label: 'mdp-server', server: 'mdp', transport: 'ws', population: listingCase.population }
          : { label: 'bare pages', server: 'bare-pages', transport: 'none', population: listingCase.population };
      options.log(`  starting ${listingCase.label}`);
      const subject = await Subject.start(spec, serverOptions(options, scenario.name, listingCase.label));
      try {
        for (const walkers of scenario.walkers) {
          const load = `${walkers} walker${walkers === 1 ? '' : 's'}`;
          const run = async (durationMs: number) => {
            await subject.server.startLoopDelay();
            await subject.server.startTurnCpu();
            const u0 = await subject.server.usage();
            const [walk, probe] = await Promise.all([
              walkers > 0 ? walker.walk({ port: subject.server.port, walkers, durationMs }) : undefined,
              prober.probeMeta({ port: subject.server.port, durationMs, intervalMs: scenario.metaIntervalMs }),
            ]);
            const u1 = await subject.server.usage();
            const loop = await subject.server.loopDelay();
            const turn = await subject.server.turnCpu();
            const clients = await subject.clientErrors();
            return { walk, probe, loop, turn, cpuUs: u1.cpuUs - u0.cpuUs, rss: u1.rss, rssPeak: u1.maxRss, clients };
          };
          await run(options.warmupMs);
          for (let round = 0; round < options.rounds; round++) {
            const { walk, probe, loop, turn, cpuUs, rss, rssPeak, clients } = await run(options.durationMs);
            const errors = probe.errors + (walk?.errors ?? 0);
            records.push({
              scenario: scenario.name,
              caseLabel: listingCase.label,
              load,
              subject: 'GET /mdp/meta',
              round,
              ops: probe.requests,
              opsPerSec: walk ? (walk.pages / walk.elapsedMs) * 1000 : 0,
              p50: probe.latency.p50,
              p99: probe.latency.p99,
              max: probe.latency.max,
              errors: errors + clients.errors,
              lastError: walk?.lastError ?? probe.lastError ?? clients.lastError,
              cpuUsPerOp: walk && walk.pages > 0 ? cpuUs / walk.pages : Number.NaN,
              rssBytes: rss,
              rssPeakBytes: rssPeak,
              pages: walk?.pages ?? 0,
              bytesPerSec: walk ? (walk.bytes / walk.elapsedMs) * 1000 : 0,
              largestPage: walk?.largestPage ?? 0,
              pageP99: walk?.pageLatency.p99 ?? Number.NaN,
              loopMax: loop.maxMs,
              loopP99: loop.p99Ms,
              turnMax: turn.maxMs,
              turnP99: turn.p99Ms,
            });
            options.log(
              `  ${listingCase.label}, ${load}, round ${round + 1}/${options.rounds}: /mdp/meta p50 ${probe.latency.p50.toFixed(1)} p99 ${probe.latency.p99.toFixed(1)} max ${probe.latency.max.toFixed(1)} ms, loop delay max ${loop.maxMs.toFixed(1)} ms, longest turn ${turn.maxMs.toFixed(1)} ms CPU` +
                (walk ? `, ${walk.pages} pages (${(walk.bytes / 1e6).toFixed(0)} MB, ${walk.walks} whole listings)` : '') +
                `, ${errors} errors`,
            );
          }
        }
      } finally {
        await subject.stop();
      }
    }
  } finally {
    await prober.stop();
  }
  return records;
}

/** Why a scenario cannot run on this machine (the fleet's need nats-server), or undefined. */
export function scenarioSkipReason(scenario: Scenario): string | undefined {
  return scenario.kind === 'fleet-read' || scenario.kind === 'fleet-scale' ? natsServerMissing() : undefined;
}

export async function runScenario(scenario: Scenario, loadgen: LoadGenerator, options: RunOptions): Promise<RunRecord[]> {
  options.log(`${scenario.name}: ${scenario.title}`);
  const skip = scenarioSkipReason(scenario);
  if (skip) {
    options.log(`  SKIPPED: ${skip}`);
    return [];
  }
  if (scenario.kind === 'listing') return runListing(scenario, loadgen, options);
  if (scenario.kind === 'cold-start') return runColdStarts(scenario, options);
  if (scenario.kind === 'fleet-read') return runFleetRead(scenario, loadgen, options);
  if (scenario.kind === 'fleet-scale') return runFleetScale(scenario, options);
  if (scenario.kind === 'read') {
    const records: RunRecord[] = [];
    for (const readCase of scenario.cases) records.push(...(await runReadCase(scenario.name, readCase, loadgen, options)));
    return records;
  }

  if (scenario.kind === 'memory') {
    const records: RunRecord[] = [];
    for (let round = 0; round < options.rounds; round++) {
      for (const spec of alternate(scenario.subjects, round)) {
        const figures = await memoryRun(spec, options);
        records.push({ scenario: scenario.name, caseLabel: `${spec.population.clients} clients`, load: 'idle', subject: spec.label, round, ...figures });
        options.log(`  round ${round + 1}/${options.rounds} ${spec.label}: ${figures.bytesPerConn?.toFixed(0)} bytes/connection, ${figures.errors} errors`);
      }
    }
    return records;
  }

  if (scenario.kind === 'scan') {
    const records: RunRecord[] = [];
    const ports = scenario.toPort - scenario.fromPort + 1;
    const caseLabel = `${ports} ports`;
    for (const { scanner } of scenario.scanners) await runScans(scanner, '127.0.0.1', scenario.fromPort, scenario.toPort, options.warmupMs);
    for (let round = 0; round < options.rounds; round++) {
      for (const { label, scanner } of alternate(scenario.scanners, round)) {
        const result = await runScans(scanner, '127.0.0.1', scenario.fromPort, scenario.toPort, options.durationMs);
        records.push({
          scenario: scenario.name,
          caseLabel,
          load: 'c1',
          subject: label,
          round,
          ops: result.scans,
          opsPerSec: (result.scans / result.elapsedMs) * 1000,
          p50: result.latency.p50,
          p99: result.latency.p99,
          errors: result.errors,
          lastError: result.lastError,
          cpuUsPerOp: result.cpuUsPerScan,
          rssBytes: process.memoryUsage().rss,
          rssPeakBytes: process.resourceUsage().maxRSS * 1024,
        });
        options.log(
          `  round ${round + 1}/${options.rounds} ${label}: ${result.latency.p50.toFixed(1)} ms per scan, ${result.cpuUsPerScan.toFixed(0)} µs CPU, ${result.errors} errors`,
        );
      }
    }
    return records;
  }

  const records: RunRecord[] = [];
  const subjects: Subject[] = [];
  try {
    for (const spec of scenario.subjects) subjects.push(await Subject.start(spec, serverOptions(options, scenario.name, 'registration', spec.label)));
    for (const subject of subjects) await churn(subject, scenario.concurrency, options.warmupMs, scenario.skills);
    for (let round = 0; round < options.rounds; round++) {
      for (const subject of alternate(subjects, round)) {
        const u0 = await subject.server.usage();
        const result = await churn(subject, scenario.concurrency, options.durationMs, scenario.skills);
        const u1 = await subject.server.usage();
        const stats = await subject.clientErrors();
        records.push({
          scenario: scenario.name,
          caseLabel: `${scenario.skills} skills`,
          load: `c${scenario.concurrency}`,
          subject: subject.spec.label,
          round,
          ops: result.registrations,
          opsPerSec: (result.registrations / result.elapsedMs) * 1000,
          p50: result.latency.p50,
          p99: result.latency.p99,
          errors: result.errors,
          lastError: result.errors > 0 ? stats.lastError : undefined,
          cpuUsPerOp: (u1.cpuUs - u0.cpuUs) / result.registrations,
          rssBytes: u1.rss,
          rssPeakBytes: u1.maxRss,
        });
        options.log(
          `  round ${round + 1}/${options.rounds} ${subject.spec.label}: ${((result.registrations / result.elapsedMs) * 1000).toFixed(0)} registrations/s, ${result.errors} errors`,
        );
      }
    }
  } finally {
    await Promise.all(subjects.map((subject) => subject.stop()));
  }
  return records;
}
