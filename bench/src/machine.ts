/** The machine a run happened on, for the README table. */
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg, totalmem } from 'node:os';

export interface MachineInfo {
  readonly date: string;
  readonly nproc: number;
  readonly node: string;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  /** 1-minute load average when the run started: how busy the shared machine was. */
  readonly loadAverage: number;
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
  };
}

export function describeMachine(m: MachineInfo): string {
  return `${m.date} · nproc ${m.nproc} · node ${m.node} · CPU ${m.cpuModel} · ${m.memoryGiB} GiB · load average ${m.loadAverage} at start`;
}
