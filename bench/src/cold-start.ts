/**
 * Cold starts (issue 33): a new node process per start, timed from `spawn` to the moment it has
 * done its job: exited (`--version`, `--help`), or answered the `initialize` an agent's host sends
 * as soon as it has launched an MCP server on stdio. The files are in the OS's cache (each command
 * runs once unmeasured first): what is measured is node's start, loading the program and its work.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/** What one start runs and when it is done. */
export interface StartCommand {
  /** node's arguments: a script and its arguments (`['-e', '']` for node alone). */
  readonly args: readonly string[];
  /** Done when the process exits 0, or when it answers `initialize` on stdout. */
  readonly until: 'exit' | 'initialize';
  readonly cwd?: string;
}

export interface StartFigures {
  /** spawn → done, ms. */
  readonly wallMs: number;
  /**
   * CPU time of the process (every thread) when it answered `initialize`, ms, from Linux's
   * /proc/<pid>/task/<tid>/schedstat; NaN elsewhere and for commands that exit (gone by then).
   */
  readonly cpuMs: number;
  readonly error?: string;
}

const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'mdp-bench', version: '1.0.0' } },
})}\n`;

/** CPU time of every thread of `pid`, ms; NaN where /proc has no schedstat. */
export function processCpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    return ns / 1e6;
  } catch {
    return Number.NaN;
  }
}

/** One cold start of `command`, at most `timeoutMs`; the process is gone when it resolves. */
export function coldStart(command: StartCommand, timeoutMs = 30_000): Promise<StartFigures> {
  const started = performance.now();
  const child = spawn(process.execPath, command.args, { stdio: ['pipe', 'pipe', 'pipe'], cwd: command.cwd });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise<StartFigures>((resolve) => {
    let settled = false;
    const finish = (figures: StartFigures): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // An MCP server stops when its stdin ends; anything still running after a while is killed.
      child.stdin.end();
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      void exited.then(() => {
        clearTimeout(killer);
        resolve(figures);
      });
    };
    const failed = (error: string): void =>
      finish({ wallMs: Number.NaN, cpuMs: Number.NaN, error: `${error}${stderr ? `: ${stderr.trim().split('\n').at(-1)}` : ''}` });
    const timer = setTimeout(() => failed(`no answer within ${timeoutMs} ms`), timeoutMs);
    child.on('error', (error) => failed(error.message));
    child.stdin.on('error', () => undefined);
    if (command.until === 'initialize') {
      child.stdin.write(INITIALIZE);
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const line = out.split('\n')[0] ?? '';
        if (!out.includes('\n')) return;
        const wallMs = performance.now() - started;
        const cpuMs = processCpuMs(child.pid as number);
        let answer: { id?: unknown; result?: { serverInfo?: unknown } } | undefined;
        try {
          answer = JSON.parse(line) as typeof answer;
        } catch {
          // Not JSON: reported below.
        }
        if (answer?.id === 1 && answer.result?.serverInfo) finish({ wallMs, cpuMs });
        else failed(`unexpected answer ${line.slice(0, 200)}`);
      });
      void exited.then((code) => failed(`exited (code ${code}) before answering initialize`));
    } else {
      child.stdout.resume();
      void exited.then((code) => {
        const wallMs = performance.now() - started;
        if (code === 0) finish({ wallMs, cpuMs: Number.NaN });
        else failed(`exited with code ${code}`);
      });
    }
  });
}
