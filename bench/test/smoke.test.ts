/**
 * Smoke of every bench scenario: tiny sizes, one short round, through the built CLI exactly as
 * `pnpm bench` runs it. Asserts only that each completes with zero errors and reports figures —
 * never a figure threshold (the machine running tests is shared and noisy).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { natsServerMissing } from '../src/nats.js';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mdp-bench-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The fleet scenarios need a real nats-server (Debian's package); without one they are skipped. */
const noNats = natsServerMissing();
if (noNats) console.warn(`[bench smoke] fleet-read and fleet-scale SKIPPED: ${noNats}`);

interface Row {
  readonly subject: string;
  readonly load: string;
  readonly p50: number;
  readonly p99: number;
  readonly max?: number;
  readonly largestPage?: number;
  readonly errors: number;
  readonly ops: number;
  readonly opsPerSec: number;
  readonly cpuUsPerOp: number;
  readonly rssBytes: number;
  readonly rssPeakBytes: number;
  readonly bytesPerConn?: number;
  readonly busCpuUsPerOp?: number;
  readonly remoteClients?: number;
  readonly heapBytesPerRemote?: number;
  readonly agreeMs?: number;
}

interface Report {
  readonly rows: readonly Row[];
  // A ratio that is not a finite number (a division by zero) is null in JSON.
  readonly comparisons: ReadonlyArray<{
    readonly ratio: number | null;
    readonly metric: 'cpuUsPerOp' | 'bytesPerConn' | 'rssPeakBytes' | 'p50';
    readonly a: string;
    readonly b: string;
  }>;
  readonly checks?: ReadonlyArray<{ readonly what: string; readonly value: number | null; readonly pass: boolean }>;
  readonly skipped?: ReadonlyArray<{ readonly scenario: string; readonly reason: string }>;
}

let runs = 0;

function runBench(
  scenario: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; stdout: string; stderr: string; report: Report | undefined }> {
  const json = join(dir, `run-${++runs}.json`);
  return new Promise((resolve) => {
    // The CLI bounds itself; the kill is only a backstop.
    execFile(
      process.execPath,
      [cli, '--smoke', '--scenario', scenario, '--json', json],
      { timeout: 110_000, killSignal: 'SIGTERM', env },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: number }).code ?? null) : 0;
        resolve({ code, stdout, stderr, report: existsSync(json) ? (JSON.parse(readFileSync(json, 'utf8')) as Report) : undefined });
      },
    );
  });
}

describe('pnpm bench --smoke', () => {
  it('is built (pnpm build / turbo run build builds bench/dist)', () => {
    expect(existsSync(cli), `${cli} is missing: run the build first`).toBe(true);
  });

  const subjects: Record<string, string[]> = {
    'ws-read': ['mdp-server', 'bare relay', 'bare http'],
    'loop-read': ['mdp-server', 'bare loop relay'],
    'jwt-read': ['skill read, JWT', 'skill read, static token', 'skill read, no auth'],
    catalog: [
      'mdp-server, 20 clients',
      'mdp-server, 1 client',
      'mdp-server, 20 clients, reads to 1',
      'mdp-server, 20 clients, reads to 5',
      'bare relay, 20 clients',
      'bare relay, 1 client',
      'bare relay, 20 clients, reads to 5',
    ],
    'mcp-call': ['host call', 'mcp call', 'bare SDK mcp call'],
    'idle-memory': ['mdp-server', 'bare ws'],
    discovery: ['scanRange', 'bare connect'],
    registration: ['mdp-server', 'bare ws'],
    'fleet-read': ['local read', 'remote read', 'read to any node'],
  };

  it('listing completes with zero errors and times /mdp/meta with and without listings', { timeout: 120_000 }, async () => {
    const { code, stderr, report } = await runBench('listing');
    expect(code, stderr.slice(-2000)).toBe(0);
    const rows = report?.rows ?? [];
    // Two catalogs and the bare pages control, each with no walker, one and several.
    expect(rows).toHaveLength(9);
    for (const row of rows) {
      expect(row.subject).toBe('GET /mdp/meta');
      expect(row.errors, `${row.load}`).toBe(0);
      expect(row.ops).toBeGreaterThan(0);
      expect(Number.isFinite(row.p99) && Number.isFinite(row.max)).toBe(true);
      if (row.load !== '0 walkers') {
        expect(row.opsPerSec).toBeGreaterThan(0);
        expect(row.largestPage).toBeGreaterThan(0);
      }
    }
  });

  it.skipIf(noNats !== undefined)(
    'fleet-scale completes with zero errors: the heap per remote client and the time to agree after SIGKILL',
    { timeout: 120_000 },
    async () => {
      const { code, stderr, report } = await runBench('fleet-scale');
      expect(code, stderr.slice(-2000)).toBe(0);
      const rows = report?.rows ?? [];
      expect(rows).toHaveLength(1);
      const row = rows[0] as Row;
      expect(row.errors).toBe(0);
      // 30 clients over three nodes: the measured node sees the 20 of the other two.
      expect(row.remoteClients).toBe(20);
      expect(Number.isFinite(row.heapBytesPerRemote)).toBe(true);
      expect(row.agreeMs).toBeGreaterThan(0);
      expect(report?.checks?.map((c) => c.what)).toHaveLength(3);
    },
  );

  it('cold-start completes with zero errors and times every command', { timeout: 120_000 }, async () => {
    const { code, stderr, report } = await runBench('cold-start');
    expect(code, stderr.slice(-2000)).toBe(0);
    const rows = report?.rows ?? [];
    expect(rows.map((r) => r.subject).sort()).toEqual(
      [
        'node alone',
        'mdp-server --version',
        'mdp-server --help',
        'bare SDK, stdio',
        'bare SDK bundled, stdio',
        'mdp-server mcp',
        'mdp-server mcp, auto mode',
      ].sort(),
    );
    for (const row of rows) {
      expect(row.errors, row.subject).toBe(0);
      expect(row.p50, row.subject).toBeGreaterThan(0);
    }
    expect(report?.comparisons.map((c) => [c.a, c.b, Number.isFinite(c.ratio)])).toEqual([
      ['mdp-server mcp', 'bare SDK bundled, stdio', true],
      ['mdp-server mcp', 'bare SDK, stdio', true],
      ['mdp-server --version', 'node alone', true],
    ]);
  });

  it('fleet scenarios are skipped, with the reason, where nats-server is not installed', { timeout: 60_000 }, async () => {
    const missing = join(dir, 'no-such-nats-server');
    const { code, stdout, stderr, report } = await runBench('fleet-read,fleet-scale', { ...process.env, NATS_SERVER: missing });
    expect(code, stderr.slice(-2000)).toBe(0);
    expect(report?.rows).toEqual([]);
    expect(report?.skipped?.map((s) => s.scenario)).toEqual(['fleet-read', 'fleet-scale']);
    expect(stdout).toContain(`SKIPPED fleet-read: ${missing} not found`);
  });

  for (const [scenario, expected] of Object.entries(subjects)) {
    it.skipIf(scenario.startsWith('fleet-') && noNats !== undefined)(
      `${scenario} completes with zero errors and reports figures`,
      { timeout: 120_000 },
      async () => {
        const { code, stderr, report } = await runBench(scenario);
        expect(code, stderr.slice(-2000)).toBe(0);
        expect(report).toBeDefined();
        const rows = report?.rows ?? [];
        expect([...new Set(rows.map((r) => r.subject))].sort()).toEqual([...expected].sort());
        for (const row of rows) {
          expect(row.errors, `${scenario} ${row.subject}`).toBe(0);
          expect(row.ops).toBeGreaterThan(0);
          expect(row.opsPerSec).toBeGreaterThan(0);
          expect(Number.isFinite(row.cpuUsPerOp)).toBe(true);
          expect(row.rssBytes).toBeGreaterThan(0);
          expect(row.rssPeakBytes).toBeGreaterThan(0);
          if (scenario === 'idle-memory') expect(Number.isFinite(row.bytesPerConn)).toBe(true);
          if (scenario === 'fleet-read') expect(Number.isFinite(row.busCpuUsPerOp)).toBe(true);
        }
        expect(report?.comparisons.length).toBeGreaterThan(0);
        if (scenario === 'catalog') expect(report?.comparisons.some((c) => c.metric === 'rssPeakBytes')).toBe(true);
        for (const c of report?.comparisons ?? []) {
          // CPU per operation and a peak RSS are never zero, so their ratios are finite numbers. Memory over a
          // smoke's 20 connections can round to zero pages and divide by zero, which says nothing
          // here; the JSON report writes such a ratio (NaN or ±Infinity) as null.
          if (c.metric !== 'bytesPerConn') expect(Number.isFinite(c.ratio), `${scenario} ${c.a} / ${c.b}`).toBe(true);
          else expect(c.ratio === null || typeof c.ratio === 'number', `${scenario} ${c.a} / ${c.b}`).toBe(true);
        }
      },
    );
  }
});
