/** Medians over rounds, paired ratios against targets, and the Markdown tables `pnpm bench` prints. */
import type { RunRecord } from './runner.js';
import type { ComparisonMetric, ComparisonSpec, Scenario } from './scenarios.js';
import { median } from './stats.js';

export interface SummaryRow {
  readonly scenario: string;
  readonly caseLabel: string;
  readonly load: string;
  readonly subject: string;
  readonly rounds: number;
  readonly ops: number;
  readonly opsPerSec: number;
  readonly p50: number;
  readonly p99: number;
  /** Sum over rounds (not a median): any error fails the run. */
  readonly errors: number;
  readonly lastError: string | undefined;
  readonly cpuUsPerOp: number;
  readonly rssBytes: number;
  /** The largest over rounds (not a median): the peak of the server's whole run. */
  readonly rssPeakBytes: number;
  /** Read scenarios: the peak once the clients had registered, before any load. */
  readonly rssPeakRegisteredBytes: number | undefined;
  readonly bytesPerConn: number | undefined;
  readonly heapBytesPerConn: number | undefined;
  /** Listing only (medians over rounds). */
  readonly max: number | undefined;
  readonly bytesPerSec: number | undefined;
  readonly largestPage: number | undefined;
  readonly pageP99: number | undefined;
  readonly loopMax: number | undefined;
  readonly loopP99: number | undefined;
  readonly turnMax: number | undefined;
  readonly turnP99: number | undefined;
  /** Cold start only: median over rounds of the start's excess over the floor's. */
  readonly overFloorMs: number | undefined;
  /** Fleet read (medians over rounds). */
  readonly busCpuUsPerOp: number | undefined;
  readonly fleetCpuUsPerOp: number | undefined;
  /** Fleet scale (medians over rounds, but `agreeMs`: the largest, a bound). */
  readonly remoteClients: number | undefined;
  readonly heapBytesPerRemote: number | undefined;
  readonly catchUpMs: number | undefined;
  readonly agreeMs: number | undefined;
  readonly agreeStepMs: number | undefined;
  readonly nodeDownMs: number | undefined;
  readonly ttlMs: number | undefined;
}

export interface ComparisonResult {
  readonly scenario: string;
  readonly caseLabel: string;
  readonly load: string;
  readonly a: string;
  readonly b: string;
  /** Taken off a before dividing, per round. */
  readonly minus: string | undefined;
  readonly metric: ComparisonMetric;
  /** Median over rounds of a_round / b_round (or (a_round − minus_round) / b_round); for `rssPeakBytes`, the peak of a's run / the peak of b's. */
  readonly ratio: number;
  readonly target: number | undefined;
  readonly pass: boolean | undefined;
}

const keyOf = (r: { scenario: string; caseLabel: string; load: string; subject: string }): string =>
  `${r.scenario}\u0000${r.caseLabel}\u0000${r.load}\u0000${r.subject}`;

export function summarize(records: readonly RunRecord[]): SummaryRow[] {
  const groups = new Map<string, RunRecord[]>();
  for (const record of records) {
    const key = keyOf(record);
    const list = groups.get(key) ?? [];
    list.push(record);
    groups.set(key, list);
  }
  return [...groups.values()].map((runs) => {
    const first = runs[0] as RunRecord;
    const m = (pick: (r: RunRecord) => number | undefined): number => median(runs.map((r) => pick(r) ?? Number.NaN));
    return {
      scenario: first.scenario,
      caseLabel: first.caseLabel,
      load: first.load,
      subject: first.subject,
      rounds: runs.length,
      ops: m((r) => r.ops),
      opsPerSec: m((r) => r.opsPerSec),
      p50: m((r) => r.p50),
      p99: m((r) => r.p99),
      errors: runs.reduce((sum, r) => sum + r.errors, 0),
      lastError: runs.find((r) => r.lastError)?.lastError,
      cpuUsPerOp: m((r) => r.cpuUsPerOp),
      rssBytes: m((r) => r.rssBytes),
      rssPeakBytes: Math.max(...runs.map((r) => r.rssPeakBytes)),
      rssPeakRegisteredBytes: first.rssPeakRegisteredBytes,
      bytesPerConn: first.bytesPerConn === undefined ? undefined : m((r) => r.bytesPerConn),
      heapBytesPerConn: first.heapBytesPerConn === undefined ? undefined : m((r) => r.heapBytesPerConn),
      max: first.max === undefined ? undefined : m((r) => r.max),
      bytesPerSec: first.bytesPerSec === undefined ? undefined : m((r) => r.bytesPerSec),
      // The largest over rounds, not a median: it is a bound.
      largestPage: first.largestPage === undefined ? undefined : Math.max(...runs.map((r) => r.largestPage ?? 0)),
      pageP99: first.pageP99 === undefined ? undefined : m((r) => r.pageP99),
      loopMax: first.loopMax === undefined ? undefined : m((r) => r.loopMax),
      loopP99: first.loopP99 === undefined ? undefined : m((r) => r.loopP99),
      turnMax: first.turnMax === undefined ? undefined : m((r) => r.turnMax),
      turnP99: first.turnP99 === undefined ? undefined : m((r) => r.turnP99),
      overFloorMs: first.overFloorMs === undefined ? undefined : m((r) => r.overFloorMs),
      busCpuUsPerOp: first.busCpuUsPerOp === undefined ? undefined : m((r) => r.busCpuUsPerOp),
      fleetCpuUsPerOp: first.fleetCpuUsPerOp === undefined ? undefined : m((r) => r.fleetCpuUsPerOp),
      remoteClients: first.remoteClients,
      heapBytesPerRemote: first.heapBytesPerRemote === undefined ? undefined : m((r) => r.heapBytesPerRemote),
      catchUpMs: first.catchUpMs === undefined ? undefined : m((r) => r.catchUpMs),
      // The slowest round: the time to agree is a bound.
      agreeMs: first.agreeMs === undefined ? undefined : Math.max(...runs.map((r) => r.agreeMs ?? Number.NaN)),
      agreeStepMs: first.agreeStepMs === undefined ? undefined : m((r) => r.agreeStepMs),
      nodeDownMs: first.nodeDownMs === undefined ? undefined : Math.max(...runs.map((r) => r.nodeDownMs ?? Number.NaN)),
      ttlMs: first.ttlMs,
    };
  });
}

export function compare(scenarios: readonly Scenario[], records: readonly RunRecord[]): ComparisonResult[] {
  const results: ComparisonResult[] = [];
  for (const scenario of scenarios) {
    const defaultMetric: ComparisonMetric = scenario.kind === 'memory' ? 'bytesPerConn' : scenario.kind === 'cold-start' ? 'p50' : 'cpuUsPerOp';
    // Comparisons belong to a case (read scenarios) or to the whole scenario.
    const comparisonsOf = (caseLabel: string): readonly ComparisonSpec[] =>
      scenario.kind === 'read' ? (scenario.cases.find((c) => c.label === caseLabel)?.comparisons ?? []) : scenario.comparisons;
    const mine = records.filter((r) => r.scenario === scenario.name);
    const cases = new Map<string, RunRecord[]>();
    for (const r of mine) {
      const key = `${r.caseLabel}\u0000${r.load}`;
      cases.set(key, [...(cases.get(key) ?? []), r]);
    }
    for (const runs of cases.values()) {
      const { caseLabel, load } = runs[0] as RunRecord;
      for (const c of comparisonsOf(caseLabel)) {
        const as = runs.filter((r) => r.subject === c.a);
        const bs = runs.filter((r) => r.subject === c.b);
        const minus = c.minus === undefined ? [] : runs.filter((r) => r.subject === c.minus);
        if (as.length === 0 || bs.length === 0 || (c.minus !== undefined && minus.length === 0)) continue;
        const metric = c.metric ?? defaultMetric;
        // A peak is the server's over its whole run, not a round's: the largest against the largest.
        const peak = (list: RunRecord[]): number => Math.max(...list.map((r) => r.rssPeakBytes));
        const ratio =
          metric === 'rssPeakBytes'
            ? peak(as) / peak(bs)
            : median(
                as.map((a) => {
                  const b = bs.find((r) => r.round === a.round);
                  const off = c.minus === undefined ? 0 : (minus.find((r) => r.round === a.round)?.[metric] ?? Number.NaN);
                  return b ? ((a[metric] ?? Number.NaN) - off) / (b[metric] ?? Number.NaN) : Number.NaN;
                }),
              );
        results.push({
          scenario: scenario.name,
          caseLabel,
          load,
          a: c.a,
          b: c.b,
          minus: c.minus,
          metric,
          ratio,
          target: c.target,
          pass: c.target === undefined ? undefined : Number.isFinite(ratio) && ratio > 0 && ratio <= c.target,
        });
      }
    }
  }
  return results;
}

const METRIC_NAMES: Record<ComparisonMetric, string> = {
  cpuUsPerOp: 'server CPU per op',
  bytesPerConn: 'bytes per connection',
  rssPeakBytes: 'server RSS peak',
  p50: 'median time',
  fleetCpuUsPerOp: 'CPU per op, nodes + NATS',
};

/** A figure held against an absolute target (not a ratio): the fleet's memory and time to agree. */
export interface CheckResult {
  readonly scenario: string;
  readonly caseLabel: string;
  readonly what: string;
  readonly value: number;
  readonly unit: string;
  readonly target: number;
  readonly pass: boolean;
}

export function checks(scenarios: readonly Scenario[], rows: readonly SummaryRow[]): CheckResult[] {
  const results: CheckResult[] = [];
  for (const scenario of scenarios) {
    if (scenario.kind !== 'fleet-scale') continue;
    for (const row of rows.filter((r) => r.scenario === scenario.name)) {
      const check = (what: string, value: number | undefined, unit: string, target: number): void => {
        const v = value ?? Number.NaN;
        results.push({ scenario: scenario.name, caseLabel: row.caseLabel, what, value: v, unit, target, pass: Number.isFinite(v) && v <= target });
      };
      check(`heap per remote client on ${row.subject} (median)`, row.heapBytesPerRemote, 'B', scenario.heapTargetBytes);
      check('SIGKILL of a node → no other node lists its clients (slowest round)', row.agreeMs, 'ms', row.ttlMs ?? scenario.ttlMs);
      check('SIGKILL of a node → every other node logged bus.node_down (slowest round)', row.nodeDownMs, 'ms', row.ttlMs ?? scenario.ttlMs);
    }
  }
  return results;
}

const fixed = (value: number | undefined, digits: number): string => (value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits));
const whole = (value: number | undefined): string => (value === undefined || !Number.isFinite(value) ? '–' : Math.round(value).toLocaleString('en-US'));
const mb = (bytes: number): string => fixed(bytes / (1024 * 1024), 1);

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

const coldStartPass = (row: SummaryRow, targetMs: number): boolean => Number.isFinite(row.p50) && row.p50 <= targetMs && row.errors === 0;

/** Cold-start commands whose median start missed its target (for `--strict`). */
export function coldStartMisses(scenarios: readonly Scenario[], rows: readonly SummaryRow[]): string[] {
  return scenarios.flatMap((scenario) =>
    scenario.kind !== 'cold-start'
      ? []
      : scenario.subjects
          .filter((subject) => subject.targetMs !== undefined)
          .filter((subject) => {
            const row = rows.find((r) => r.scenario === scenario.name && r.subject === subject.label);
            return row !== undefined && !coldStartPass(row, subject.targetMs as number);
          })
          .map((subject) => subject.label),
  );
}

export function renderTables(
  scenarios: readonly Scenario[],
  rows: readonly SummaryRow[],
  comparisons: readonly ComparisonResult[],
  checked: readonly CheckResult[] = [],
): string {
  const out: string[] = [];
  for (const scenario of scenarios) {
    const mine = rows.filter((r) => r.scenario === scenario.name);
    if (mine.length === 0) continue;
    out.push(`### ${scenario.name}: ${scenario.title}`, '');
    if (scenario.kind === 'listing') {
      out.push(
        table(
          [
            'catalog',
            'load',
            '/mdp/meta p50 ms',
            'p99 ms',
            'max ms',
            `under ${scenario.metaTargetMs} ms`,
            'loop delay p99 / max ms',
            'turn CPU p99 / max ms',
            'pages/s',
            'MB/s listed',
            'page p99 ms',
            'largest page KB',
            'CPU µs/page',
            'RSS MB',
            'errors',
          ],
          mine.map((r) => [
            r.caseLabel,
            r.load,
            fixed(r.p50, 2),
            fixed(r.p99, 2),
            fixed(r.max, 2),
            r.max === undefined ? '–' : r.max < scenario.metaTargetMs ? 'yes' : 'NO',
            `${fixed(r.loopP99, 1)} / ${fixed(r.loopMax, 1)}`,
            `${fixed(r.turnP99, 1)} / ${fixed(r.turnMax, 1)}`,
            whole(r.opsPerSec),
            fixed((r.bytesPerSec ?? Number.NaN) / 1e6, 1),
            fixed(r.pageP99, 1),
            whole((r.largestPage ?? Number.NaN) / 1024),
            fixed(r.cpuUsPerOp, 0),
            mb(r.rssBytes),
            String(r.errors),
          ]),
        ),
      );
    } else if (scenario.kind === 'cold-start') {
      out.push(
        table(
          ['command', 'done when', 'starts', 'median ms', 'over node alone ms', 'CPU ms', 'target', 'result', 'errors'],
          scenario.subjects.flatMap((subject) => {
            const r = mine.find((row) => row.subject === subject.label);
            if (!r) return [];
            const target = subject.targetMs;
            return [
              [
                subject.label,
                subject.start.until === 'exit' ? 'exits' : 'initialize answered',
                String(r.rounds),
                fixed(r.p50, 0),
                subject === scenario.subjects[0] ? '–' : fixed(r.overFloorMs, 0),
                fixed(r.cpuUsPerOp / 1000, 0),
                target === undefined ? '–' : `≤ ${target} ms`,
                target === undefined ? 'info' : coldStartPass(r, target) ? 'pass' : 'FAIL',
                String(r.errors),
              ],
            ];
          }),
        ),
      );
    } else if (scenario.kind === 'fleet-read') {
      out.push(
        table(
          [
            'case',
            'load',
            'reads sent to',
            'req/s',
            'p50 ms',
            'p99 ms',
            'errors',
            'CPU µs/req, 3 nodes',
            'NATS CPU µs/req',
            'nodes + NATS µs/req',
            'RSS MB, 3 nodes',
          ],
          mine.map((r) => [
            r.caseLabel,
            r.load,
            r.subject,
            whole(r.opsPerSec),
            fixed(r.p50, 3),
            fixed(r.p99, 3),
            String(r.errors),
            fixed(r.cpuUsPerOp, 1),
            fixed(r.busCpuUsPerOp, 1),
            fixed(r.fleetCpuUsPerOp, 1),
            mb(r.rssBytes),
          ]),
        ),
      );
    } else if (scenario.kind === 'fleet-scale') {
      out.push(
        table(
          [
            'clients',
            'measured',
            'remote clients',
            'heap B/remote client',
            'RSS B/remote client',
            'registrations/s',
            'CPU µs/registration, 3 nodes',
            'directory caught up ms',
            'agreed after SIGKILL ms',
            '± ms (poll step)',
            'bus.node_down logged ms',
            'survivors: longest turn CPU ms / loop delay max ms',
            'bus TTL ms',
            'RSS MB',
            'errors',
          ],
          mine.map((r) => [
            r.caseLabel,
            r.subject,
            whole(r.remoteClients),
            whole(r.heapBytesPerRemote),
            whole(r.bytesPerConn),
            whole(r.opsPerSec),
            fixed(r.cpuUsPerOp, 1),
            whole(r.catchUpMs),
            whole(r.agreeMs),
            whole(r.agreeStepMs),
            whole(r.nodeDownMs),
            `${whole(r.turnMax)} / ${whole(r.loopMax)}`,
            whole(r.ttlMs),
            mb(r.rssBytes),
            String(r.errors),
          ]),
        ),
      );
    } else if (scenario.kind === 'memory') {
      out.push(
        table(
          ['clients', 'server', 'bytes/conn (RSS)', 'heap+ext bytes/conn', 'connect+register/s', 'CPU µs/registration', 'RSS MB', 'errors'],
          mine.map((r) => [
            r.caseLabel,
            r.subject,
            whole(r.bytesPerConn),
            whole(r.heapBytesPerConn),
            whole(r.opsPerSec),
            fixed(r.cpuUsPerOp, 1),
            mb(r.rssBytes),
            String(r.errors),
          ]),
        ),
      );
    } else {
      const unit = scenario.kind === 'registration' ? 'registration' : scenario.kind === 'scan' ? 'scan' : 'req';
      out.push(
        table(
          ['case', 'load', 'server', `${unit}/s`, 'p50 ms', 'p99 ms', 'errors', `CPU µs/${unit}`, 'RSS MB', 'RSS peak MB', 'peak registered MB'],
          mine.map((r) => [
            r.caseLabel,
            r.load,
            r.subject,
            whole(r.opsPerSec),
            fixed(r.p50, 3),
            fixed(r.p99, 3),
            String(r.errors),
            fixed(r.cpuUsPerOp, 1),
            mb(r.rssBytes),
            mb(r.rssPeakBytes),
            r.rssPeakRegisteredBytes === undefined ? '–' : mb(r.rssPeakRegisteredBytes),
          ]),
        ),
      );
    }
    out.push('');
  }
  if (comparisons.length > 0) {
    out.push('### Ratios (median over rounds of the paired per-round ratio)', '');
    out.push(
      table(
        ['scenario', 'case', 'load', 'compared', 'of', 'ratio', 'target', 'result'],
        comparisons.map((c) => [
          c.scenario,
          c.caseLabel,
          c.load,
          c.minus === undefined ? `${c.a} / ${c.b}` : `(${c.a} − ${c.minus}) / ${c.b}`,
          METRIC_NAMES[c.metric],
          fixed(c.ratio, 2) + '×',
          c.target === undefined ? '–' : `≤ ${c.target}×`,
          c.pass === undefined ? 'info' : c.pass ? 'pass' : 'FAIL',
        ]),
      ),
    );
    out.push('');
  }
  if (checked.length > 0) {
    out.push('### Targets', '');
    out.push(
      table(
        ['scenario', 'case', 'figure', 'value', 'target', 'result'],
        checked.map((c) => [c.scenario, c.caseLabel, c.what, `${whole(c.value)} ${c.unit}`, `≤ ${whole(c.target)} ${c.unit}`, c.pass ? 'pass' : 'FAIL']),
      ),
    );
    out.push('');
  }
  const errors = rows.reduce((sum, r) => sum + r.errors, 0);
  out.push(`Errors in all runs: ${errors}${errors === 0 ? ' (pass)' : ' (FAIL)'}`);
  for (const r of rows.filter((row) => row.errors > 0)) out.push(`  ${r.scenario} ${r.caseLabel} ${r.load} ${r.subject}: ${r.lastError}`);
  return out.join('\n');
}
