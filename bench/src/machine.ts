/** The machine a run happened on, for the README table. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { availableParallelism, loadavg, totalmem } from 'node:os';

export interface MachineInfo {
  readonly date: string;
  readonly nproc: number;
  readonly node: string;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  /** 1-minute load average when the run started: how busy the shared machine was. */
  readonly loadAverage: number;
  /** The commit measured, and how many files under packages/ and apps/ differed from it. */
  readonly commit: string;
  readonly uncommittedFiles: number;
}

function git(args: string[]): string | undefined {
  try {
    const cwd = fileURLToPath(new URL('../..', import.meta.url));
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

function cpuModel(): string {
  try {
    const match = readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.+)$/m);
    return match?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function machineInfo(): MachineInfo {
  return {
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    node: process.version,
    cpuModel: cpuModel(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage: Number((loadavg()[0] ?? 0).toFixed(2)),
    commit: git(['rev-parse', '--short', 'HEAD']) ?? 'unknown',
    uncommittedFiles: (git(['status', '--porcelain', '--', 'packages', 'apps']) ?? '').split('\n').filter(Boolean).length,
  };
}

export function describeMachine(m: MachineInfo): string {
  const tree = m.uncommittedFiles > 0 ? ` + ${m.uncommittedFiles} uncommitted files in packages/ apps/` : '';
  return `${m.date} · commit ${m.commit}${tree} · nproc ${m.nproc} · node ${m.node} · CPU ${m.cpuModel} · ${m.memoryGiB} GiB · load average ${m.loadAverage} at start`;
}
