#!/usr/bin/env node
/**
 * `pnpm bench`: the real mdp-server against bare baselines, alternating, in one bounded run.
 * Every process it starts is stopped at the end, on failure, on Ctrl-C and on its own time limit.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeMachine, machineInfo } from './machine.js';
import { LoadGenerator } from './load-generator.js';
import { killAllNow, stopAll } from './proc.js';
import { summarizeProfileDir } from './profile.js';
import { FLEET_SCALE_MAX_ROUNDS } from './fleet.js';
import { checks, coldStartMisses, compare, renderTables, summarize } from './report.js';
import { runScenario, scenarioSkipReason, type RunRecord } from './runner.js';
import { FULL_SIZES, SCENARIO_NAMES, SMOKE_SIZES, scenarios, type Scenario, type Sizes } from './scenarios.js';

const HELP = `Usage: pnpm bench [-- options]

Runs the real mdp-server and bare baselines side by side, alternating A/B over several rounds, and
prints medians and ratios: requests/s, p50/p99 latency, errors, server CPU µs per request, RSS.

Options:
  --scenario <name>     run only this scenario (repeatable or comma-separated):
                        ${SCENARIO_NAMES.join(', ')}
  --rounds <n>          alternating rounds per comparison (default 5)
  --duration <s>        seconds per measured run (default 3)
  --warmup <s>          seconds of unmeasured warm-up per subject and load (default 2)
  --catalog-clients <n> clients in the catalog scenario (default ${FULL_SIZES.catalogClients})
  --idle-clients <n>    clients in the idle-memory scenario (default ${FULL_SIZES.idleClients})
  --starts <n>          cold starts of each command in the cold-start scenario (default ${FULL_SIZES.coldStarts})
  --fleet-clients <n>   clients over the 3 nodes of the fleet-scale scenario (default
                        ${FULL_SIZES.fleetScaleClients}); the fleet scenarios need nats-server
                        (/usr/sbin/nats-server or NATS_SERVER=<path>) and are skipped without it.
                        fleet-scale runs at most ${FLEET_SCALE_MAX_ROUNDS} rounds (a fresh fleet each)
  --smoke               tiny sizes, one short round: checks that everything runs
  --profile             run every server under --cpu-prof and print where its time goes
                        (profiling slows them: figures of a profiled run are not comparable)
  --server-node-arg <a> pass a node flag to every server process (repeatable), e.g.
                        --server-node-arg=--perf-basic-prof for perf record
  --json <file>         also write every run and the summary as JSON
  --strict              exit 2 when a ratio or a figure misses its target
  -h, --help            show this help

Exit status: 0 done, 1 errors in some run or the bench failed, 2 a target missed (with --strict).`;

interface Options {
  readonly scenarios: Scenario[];
  readonly rounds: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly json: string | undefined;
  readonly profileDir: string | undefined;
  readonly strict: boolean;
  readonly serverNodeArgs: readonly string[];
}

function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n\n${HELP}\n`);
  process.exit(64);
}

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) fail(`--${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

function parseOptions(argv: string[]): Options {
  // `pnpm bench -- --scenario x` may hand the script a literal `--`.
  const args = argv.filter((arg) => arg !== '--');
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        scenario: { type: 'string', multiple: true },
        rounds: { type: 'string' },
        duration: { type: 'string' },
        warmup: { type: 'string' },
        'catalog-clients': { type: 'string' },
        'idle-clients': { type: 'string' },
        starts: { type: 'string' },
        'fleet-clients': { type: 'string' },
        smoke: { type: 'boolean' },
        profile: { type: 'boolean' },
        'server-node-arg': { type: 'string', multiple: true },
        json: { type: 'string' },
        strict: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    fail((error as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const smoke = values.smoke === true;
  const base: Sizes = smoke ? SMOKE_SIZES : FULL_SIZES;
  const sizes: Sizes = {
    ...base,
    catalogClients: Math.round(positive('catalog-clients', values['catalog-clients'], base.catalogClients)),
    idleClients: Math.round(positive('idle-clients', values['idle-clients'], base.idleClients)),
    coldStarts: Math.round(positive('starts', values.starts, base.coldStarts)),
    fleetScaleClients: Math.round(positive('fleet-clients', values['fleet-clients'], base.fleetScaleClients)),
  };
  // Each of the three nodes holds at least one client: the killed node's must leave every listing.
  if (sizes.fleetScaleClients < 3) fail(`--fleet-clients must be at least 3 (one per node), got ${sizes.fleetScaleClients}`);
  const all = scenarios(sizes);
  const wanted = (values.scenario ?? []).flatMap((s) => s.split(',')).filter(Boolean);
  for (const name of wanted) if (!all.some((s) => s.name === name)) fail(`unknown scenario ${JSON.stringify(name)}`);
  const profileDir = values.profile ? fileURLToPath(new URL(`../profiles/${new Date().toISOString().replace(/[:.]/g, '-')}/`, import.meta.url)) : undefined;
  return {
    scenarios: wanted.length === 0 ? all : all.filter((s) => wanted.includes(s.name)),
    rounds: Math.round(positive('rounds', values.rounds, smoke ? 1 : 5)),
    durationMs: positive('duration', values.duration, smoke ? 0.25 : 3) * 1000,
    warmupMs: positive('warmup', values.warmup, smoke ? 0.1 : 2) * 1000,
    json: values.json,
    profileDir,
    strict: values.strict === true,
    serverNodeArgs: values['server-node-arg'] ?? [],
  };
}

/** A generous upper bound on the run's length, ms: the bench stops itself after it. */
function timeLimitMs(options: Options): number {
  let ms = 0;
  const run = options.warmupMs + options.rounds * options.durationMs;
  for (const s of options.scenarios) {
    if (s.kind === 'read')
      for (const c of s.cases)
        ms += c.subjects.length * (c.loads.length * run + 5_000) + c.subjects.reduce((sum, spec) => sum + spec.population.clients * 10, 0);
    else if (s.kind === 'memory') ms += options.rounds * s.subjects.reduce((sum, spec) => sum + 10_000 + spec.population.clients * 10, 0);
    else if (s.kind === 'scan') ms += s.scanners.length * (run + 5_000);
    else if (s.kind === 'listing') ms += s.cases.length * (s.walkers.length * run + 120_000);
    else if (s.kind === 'cold-start') ms += s.subjects.length * (s.starts + 1) * 10_000;
    else if (s.kind === 'fleet-read') ms += 60_000 + 2 * options.warmupMs + s.concurrencies.length * s.destinations.length * run + s.clients * 30;
    else if (s.kind === 'fleet-scale') ms += Math.min(options.rounds, FLEET_SCALE_MAX_ROUNDS) * (180_000 + 3 * s.ttlMs + s.clients * 15);
    else ms += s.subjects.length * (run + 5_000);
  }
  return 3 * ms + 120_000;
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const machine = machineInfo();
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const limitMs = timeLimitMs(options);
  log(
    `bench: ${options.scenarios.map((s) => s.name).join(', ')} · ${options.rounds} rounds × ${options.durationMs / 1000} s · stops itself after ${Math.round(limitMs / 1000)} s`,
  );
  log(describeMachine(machine));
  if (options.profileDir) log(`profiling every server into ${options.profileDir} (figures of this run are not comparable)`);

  const watchdog = setTimeout(() => {
    log(`bench: time limit of ${Math.round(limitMs / 1000)} s reached, stopping`);
    void stopAll().finally(() => process.exit(1));
  }, limitMs);
  watchdog.unref();

  const loadgen = new LoadGenerator();
  const records: RunRecord[] = [];
  try {
    for (const scenario of options.scenarios) {
      records.push(
        ...(await runScenario(scenario, loadgen, {
          rounds: options.rounds,
          durationMs: options.durationMs,
          warmupMs: options.warmupMs,
          server: { cpuProfileDir: options.profileDir, nodeArgs: options.serverNodeArgs },
          log,
        })),
      );
    }
  } finally {
    await stopAll();
    clearTimeout(watchdog);
  }

  const rows = summarize(records);
  const comparisons = compare(options.scenarios, records);
  const checked = checks(options.scenarios, rows);
  const skipped = options.scenarios.flatMap((s) => {
    const reason = scenarioSkipReason(s);
    return reason === undefined ? [] : [{ scenario: s.name, reason }];
  });
  process.stdout.write(`\n## Bench figures\n\n${describeMachine(machine)}\n`);
  process.stdout.write(`${options.rounds} rounds × ${options.durationMs / 1000} s per run, medians over rounds\n\n`);
  for (const { scenario, reason } of skipped) process.stdout.write(`SKIPPED ${scenario}: ${reason}\n\n`);
  process.stdout.write(`${renderTables(options.scenarios, rows, comparisons, checked)}\n`);

  if (options.profileDir) {
    mkdirSync(options.profileDir, { recursive: true });
    process.stdout.write(`\n## Where the time goes (${options.profileDir})\n\n${summarizeProfileDir(options.profileDir)}\n`);
  }
  if (options.json) {
    writeFileSync(
      options.json,
      `${JSON.stringify({ machine, options: { ...options, scenarios: options.scenarios.map((s) => s.name) }, records, rows, comparisons, checks: checked, skipped }, null, 2)}\n`,
    );
  }
  const errors = rows.reduce((sum, r) => sum + r.errors, 0);
  if (errors > 0) return 1;
  if (options.strict && (comparisons.some((c) => c.pass === false) || checked.some((c) => !c.pass) || coldStartMisses(options.scenarios, rows).length > 0))
    return 2;
  return 0;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}, stopping every process it started\n`);
    void stopAll().finally(() => process.exit(130));
  });
}
process.once('exit', killAllNow);

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    void stopAll().finally(() => process.exit(1));
  },
);
