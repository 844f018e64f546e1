/**
 * The real `nats-server` of the fleet scenarios (Debian's package, as the fleet tests use it):
 * JetStream on, 127.0.0.1, a port of its own choosing (`-p -1`), its store in a scratch directory
 * removed when it exits. Tracked like every bench process (proc.ts), so it never outlives a run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Child } from './proc.js';

/** Where the binary is: `NATS_SERVER`, or Debian's path (as `@mdp/test-kit` looks for it). */
export const NATS_SERVER_PATH = process.env['NATS_SERVER'] ?? '/usr/sbin/nats-server';

/** Why the fleet scenarios cannot run here, or undefined when they can. */
export function natsServerMissing(): string | undefined {
  return existsSync(NATS_SERVER_PATH)
    ? undefined
    : `${NATS_SERVER_PATH} not found: install Debian's nats-server package (apt-get install nats-server) or set NATS_SERVER to the binary`;
}

/** Time nats-server has to say it is ready, ms (well under a second on a calm machine). */
const START_TIMEOUT_MS = 15_000;

let clockTicks: number | undefined;

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`, 100 on Linux). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/**
 * User + system CPU time of a process that has no probe (nats-server), µs, from /proc/<pid>/stat;
 * its resolution is one clock tick (10 ms). NaN where /proc is not there.
 */
export function procCpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces, in parentheses): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond()) * 1e6;
  } catch {
    return Number.NaN;
  }
}

export class NatsProcess {
  private constructor(
    readonly child: Child,
    readonly port: number,
  ) {}

  static async start(label: string): Promise<NatsProcess> {
    const missing = natsServerMissing();
    if (missing) throw new Error(missing);
    const dir = mkdtempSync(join(tmpdir(), 'mdp-bench-nats-'));
    const child = new Child(`${label} nats-server`, NATS_SERVER_PATH, ['-a', '127.0.0.1', '-p', '-1', '-js', '-sd', join(dir, 'store')], {
      executable: true,
      cwd: dir,
    });
    // The store goes with the process, however it ends (stopped, killed by the bench's own stop on
    // Ctrl-C or its time limit, or a failed start).
    void child.exited.then(() => rmSync(dir, { recursive: true, force: true }));
    try {
      // It logs to stderr.
      const ready = child.waitForLine(/Server is ready/, START_TIMEOUT_MS, 'stderr');
      const match = await child.waitForLine(/Listening for client connections on 127\.0\.0\.1:(\d+)/, START_TIMEOUT_MS, 'stderr');
      await ready;
      return new NatsProcess(child, Number(match[1]));
    } catch (error) {
      await child.stop();
      throw error;
    }
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Its CPU time so far, µs (10 ms resolution). */
  cpuUs(): number {
    return procCpuUs(this.child.pid);
  }

  /** Stop it; its store is removed once it has exited. */
  async stop(): Promise<void> {
    await this.child.stop();
  }
}
