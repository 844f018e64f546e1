/**
 * Processes the bench starts: every one is tracked, talks RPC over IPC, and is stopped (SIGTERM,
 * then SIGKILL after a grace period) when the bench ends, fails or is interrupted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { RPC_TAG, type RpcReply } from './rpc.js';

const live = new Set<Child>();

/** How long a stopping process gets between SIGTERM and SIGKILL, ms (a --cpu-prof server writes its profile then). */
const STOP_GRACE_MS = 5000;
/** Bytes of stderr kept per process for error reports. */
const TAIL_BYTES = 4096;

export interface SpawnOptions {
  readonly nodeArgs?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /** Working directory; default the bench's own. */
  readonly cwd?: string;
  /** Run `script` as an executable of its own (nats-server), not as a node script: no IPC channel, so no RPC. */
  readonly executable?: boolean;
}

export class Child {
  readonly proc: ChildProcess;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private stdoutBuffer = '';
  /** The partial last line of stderr (server logs, nats-server's). */
  private stderrBuffer = '';
  private stderrTail = '';
  private readonly lineWatchers = { stdout: new Set<(line: string) => void>(), stderr: new Set<(line: string) => void>() };
  readonly exited: Promise<number | null>;

  constructor(
    readonly name: string,
    script: string,
    args: readonly string[],
    options: SpawnOptions = {},
  ) {
    this.proc = options.executable
      ? spawn(script, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env, cwd: options.cwd })
      : spawn(process.execPath, [...(options.nodeArgs ?? []), script, ...args], {
          stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
          env: options.env ?? process.env,
          cwd: options.cwd,
        });
    live.add(this);
    // Always drain both pipes: a server blocked on a full stderr pipe would measure nothing.
    this.proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdoutBuffer += chunk;
      this.stdoutBuffer = this.emitLines(this.stdoutBuffer, this.lineWatchers.stdout);
    });
    this.proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-TAIL_BYTES);
      // Lines are split only while someone waits for one (a server's logs can be many); otherwise
      // only the partial line at the end is kept, for a watcher that starts before it ends.
      if (this.lineWatchers.stderr.size > 0) this.stderrBuffer = this.emitLines(this.stderrBuffer + chunk, this.lineWatchers.stderr);
      else {
        const nl = chunk.lastIndexOf('\n');
        this.stderrBuffer = (nl >= 0 ? chunk.slice(nl + 1) : this.stderrBuffer + chunk).slice(-TAIL_BYTES);
      }
    });
    this.proc.on('message', (message: unknown) => {
      const reply = message as RpcReply;
      if (typeof reply !== 'object' || reply === null || reply.rpc !== RPC_TAG) return;
      const entry = this.waiting.get(reply.id);
      if (!entry) return;
      this.waiting.delete(reply.id);
      clearTimeout(entry.timer);
      if (reply.ok) entry.resolve(reply.result);
      else entry.reject(new Error(`${this.name}: ${reply.error}`));
    });
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        live.delete(this);
        const error = new Error(`${this.name} exited (code ${code}, signal ${signal})${this.describeTail()}`);
        for (const entry of this.waiting.values()) {
          clearTimeout(entry.timer);
          entry.reject(error);
        }
        this.waiting.clear();
        resolve(code);
      });
    });
  }

  /** Hand each whole line of `buffer` to `watchers`; returns what is left after the last newline. */
  private emitLines(buffer: string, watchers: ReadonlySet<(line: string) => void>): string {
    let rest = buffer;
    let nl;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      for (const watcher of watchers) watcher(line);
    }
    return rest;
  }

  get pid(): number {
    return this.proc.pid as number;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  private describeTail(): string {
    const tail = this.stderrTail.trim();
    return tail ? `\n--- ${this.name} stderr (tail) ---\n${tail}` : '';
  }

  /** Send one RPC command and wait for its answer, at most `timeoutMs`. */
  call<T>(cmd: string, args?: unknown, timeoutMs = 30_000): Promise<T> {
    if (!this.running || !this.proc.connected) return Promise.reject(new Error(`${this.name} is not running${this.describeTail()}`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`${this.name}: ${cmd} took longer than ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.proc.send({ rpc: RPC_TAG, id, cmd, args });
    });
  }

  /**
   * Wait for a line matching `pattern` on stdout (or stderr: an executable's logs, a server's JSON
   * log lines), printed from now on; resolves with the match.
   */
  waitForLine(pattern: RegExp, timeoutMs: number, stream: 'stdout' | 'stderr' = 'stdout'): Promise<RegExpMatchArray> {
    const watchers = this.lineWatchers[stream];
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (settle: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        watchers.delete(watcher);
        settle();
      };
      const watcher = (line: string): void => {
        const match = line.match(pattern);
        if (match) finish(() => resolve(match));
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`${this.name} did not print ${pattern} within ${timeoutMs} ms${this.describeTail()}`))),
        timeoutMs,
      );
      watchers.add(watcher);
      void this.exited.then(() => finish(() => reject(new Error(`${this.name} exited before printing ${pattern}${this.describeTail()}`))));
    });
  }

  /** SIGKILL at once (a crash), and wait until it has exited. */
  async kill(): Promise<void> {
    if (this.running) this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM, then SIGKILL after the grace period. Idempotent. */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    if (!this.running) {
      await this.exited;
      return;
    }
    this.proc.kill('SIGTERM');
    const killer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(killer);
  }
}

/** Stop every process the bench started (in parallel: each one is independent). */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((child) => child.stop()));
}

/** Last resort on a synchronous exit: no bench process outlives the orchestrator. */
export function killAllNow(): void {
  for (const child of live) if (child.running) child.proc.kill('SIGKILL');
}
