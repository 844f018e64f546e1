/**
 * The discovery round (`discovery` scenario): one scan of a range of loopback ports, as an auto-mode
 * server runs it every 2 s, timed scan after scan for the length of a run. The scan runs in the
 * orchestrator's own process, which does nothing else meanwhile, so its CPU time is the scan's.
 * `bare connect` opens a TCP connection to each port and waits for its outcome: the floor of a scan.
 */
import { connect } from 'node:net';
import { scanRange } from '@mdp/cluster';
import { SampleBuffer, summarize, type LatencySummary } from './stats.js';

export type Scanner = 'scan-range' | 'bare-connect';

export interface ScanResult {
  readonly scans: number;
  readonly elapsedMs: number;
  /** Wall time of one scan, ms. */
  readonly latency: LatencySummary;
  /** Process CPU (user + system) per scan, µs. */
  readonly cpuUsPerScan: number;
  /** Probes that neither got an answer nor were refused (a probe timed out or was cut). */
  readonly errors: number;
  readonly lastError: string | undefined;
}

/** One TCP connect to `port`: refused, or connected (then closed at once). Never rejects. */
function connectOnce(host: string, port: number): Promise<'refused' | 'open' | string> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      resolve('open');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED' ? 'refused' : (error.code ?? error.message)));
  });
}

/** Problems of one scan: probes that timed out or failed otherwise than by a refusal or an answer. */
async function scanOnce(scanner: Scanner, host: string, from: number, to: number): Promise<string[]> {
  if (scanner === 'scan-range') {
    const results = await scanRange(host, from, to);
    return results.flatMap((r) => (r.ok || r.kind === 'not-mdp' || r.refused === true ? [] : [`${r.url}: ${r.reason}`]));
  }
  const ports = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const outcomes = await Promise.all(ports.map((port) => connectOnce(host, port)));
  return outcomes.flatMap((outcome, i) => (outcome === 'refused' || outcome === 'open' ? [] : [`${host}:${ports[i]}: ${outcome}`]));
}

/** Scan `host:from..to` again and again for `durationMs`, one scan at a time. */
export async function runScans(scanner: Scanner, host: string, from: number, to: number, durationMs: number): Promise<ScanResult> {
  const samples = new SampleBuffer();
  let errors = 0;
  let lastError: string | undefined;
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const end = started + durationMs;
  // At least one scan, however short the run.
  do {
    const t0 = performance.now();
    const problems = await scanOnce(scanner, host, from, to);
    samples.push(performance.now() - t0);
    errors += problems.length;
    lastError = problems.at(-1) ?? lastError;
  } while (performance.now() < end);
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpu0);
  return { scans: samples.length, elapsedMs, latency: summarize(samples), cpuUsPerScan: (cpu.user + cpu.system) / samples.length, errors, lastError };
}
