/** Text and JSON renderings of a probe run. Nothing here does I/O. */
import type { MetaDocument } from '@mdp/protocol';
import type { ScanSpec } from './args.js';
import type { CheckedResult } from './check.js';

export interface ScanReport {
  readonly spec: ScanSpec;
  /** One result per port, in port order. */
  readonly results: readonly CheckedResult[];
}

export interface ProbeReport {
  /** Results of the targets named on the command line, in order. */
  readonly targets: readonly CheckedResult[];
  readonly scans: readonly ScanReport[];
  readonly exitCode: number;
}

const LABEL_WIDTH = 14;

/** Escape control characters, so a hostile server cannot drive the operator's terminal. */
function clean(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function line(label: string, value: string): string {
  return `  ${label.padEnd(LABEL_WIDTH)}${value}`;
}

const yesNo = (value: boolean): string => (value ? 'yes' : 'no');

/** The readable summary of one MDP server (SPEC §11). */
export function formatServer(url: string, meta: MetaDocument, problems: readonly string[]): string[] {
  const { cluster } = meta;
  const endpoints = Object.entries(meta.endpoints);
  const keyWidth = Math.max(...endpoints.map(([key]) => key.length)) + 2;
  const lines = [
    `${clean(url)}  MDP server, protocol ${clean(meta.protocol)} ${clean(meta.protocolVersion)}`,
    line('accepts', meta.supportedProtocolRanges.length ? clean(meta.supportedProtocolRanges.join(', ')) : '(no ranges)'),
    line('server id', clean(meta.serverId)),
    ...endpoints.map(([key, value], i) => line(i === 0 ? 'endpoints' : '', `${key.padEnd(keyWidth)}${clean(value)}`)),
    line(
      'features',
      Object.entries(meta.features)
        .map(([key, value]) => `${key} ${yesNo(value)}`)
        .join(', '),
    ),
    line('cluster', clean(cluster.id)),
    line('membership', `${cluster.membershipMode}, fingerprint ${clean(cluster.membershipFingerprint)}`),
    line('role', `${cluster.role}, term ${cluster.term}`),
    line('leader', `${clean(cluster.leaderId) || '(none)'}${cluster.leaderUrl ? ` at ${clean(cluster.leaderUrl)}` : ''}`),
    line('lease', `${cluster.leaseDurationMs} ms`),
    line('members', `${cluster.knownMemberCount} known, ${cluster.reachableMemberCount} reachable`),
    line('quorum', `${cluster.quorumSize}, ${cluster.hasQuorum ? 'held' : 'NOT held'}`),
  ];
  for (const problem of problems) lines.push(line('INCOMPATIBLE', clean(problem)));
  return lines;
}

function formatResult(result: CheckedResult): string[] {
  if (result.ok) return formatServer(result.url, result.meta, result.problems);
  const label = result.kind === 'not-mdp' ? 'not MDP' : 'unreachable';
  return [`${clean(result.url)}  ${label}: ${clean(result.reason)}`];
}

function scanCounts(scan: ScanReport): { mdp: number; notMdp: number; unreachable: number } {
  let mdp = 0;
  let notMdp = 0;
  for (const result of scan.results) {
    if (result.ok) mdp++;
    else if (result.kind === 'not-mdp') notMdp++;
  }
  return { mdp, notMdp, unreachable: scan.results.length - mdp - notMdp };
}

/** Blocks separated by blank lines; ports of a scan where nothing answered are counted, not listed. */
export function formatText(report: ProbeReport): string {
  const blocks: string[][] = report.targets.map(formatResult);
  for (const scan of report.scans) {
    for (const result of scan.results) {
      if (result.ok || result.kind === 'not-mdp') blocks.push(formatResult(result));
    }
    const { host, from, to } = scan.spec;
    const { mdp, notMdp, unreachable } = scanCounts(scan);
    blocks.push([`scan ${host}:${from}-${to}: ${scan.results.length} ports, ${mdp} MDP, ${notMdp} not MDP, ${unreachable} unreachable`]);
  }
  return `${blocks.map((block) => block.join('\n')).join('\n\n')}\n`;
}

/**
 * `--json`: `{ exitCode, servers: [{url, compatible, problems, meta}], failures: [{url, kind, reason}],
 * scans: [{host, from, to, ports, mdp, notMdp, unreachable}] }`. `meta` is the validated document.
 * Failures of scanned ports where nothing answered are counted in `scans`, not listed.
 */
export function formatJson(report: ProbeReport): string {
  const answered = [...report.targets, ...report.scans.flatMap((scan) => scan.results.filter((result) => result.ok || result.kind === 'not-mdp'))];
  const servers = [];
  const failures = [];
  for (const result of answered) {
    if (result.ok) {
      servers.push({ url: result.url, compatible: result.problems.length === 0, problems: result.problems, meta: result.meta });
    } else {
      failures.push({ url: result.url, kind: result.kind, reason: result.reason });
    }
  }
  const scans = report.scans.map((scan) => ({ ...scan.spec, ports: scan.results.length, ...scanCounts(scan) }));
  return `${JSON.stringify({ exitCode: report.exitCode, servers, failures, scans }, null, 2)}\n`;
}
