/**
 * The built `mdp-server` binary as a child process for the hardening tests, with a preloaded probe
 * (memory-probe.mjs) that reports the server's own memory over IPC: figures are measured in the
 * server, never in the test process, and never by timing anything.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const PROBE = fileURLToPath(new URL('./memory-probe.mjs', import.meta.url));

export interface ServerMemory {
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
  /** Largest resident set so far, bytes. */
  readonly maxRss: number;
}

export interface ChildServer {
  readonly child: ChildProcess;
  readonly port: number;
  readonly http: string;
  readonly ws: string;
  /** Memory of the server process; after full collections when `gc` is set. */
  memory(gc?: boolean): Promise<ServerMemory>;
  /** Resolves once the server has logged `event` (a JSON line on stderr) `count` times in all. */
  logged(event: string, count?: number): Promise<void>;
  /** SIGTERM, and wait for the exit. */
  stop(): Promise<void>;
}

const running = new Set<ChildServer>();

/** Stop every child server started here. */
export async function stopChildren(): Promise<void> {
  await Promise.all([...running].map((server) => server.stop()));
}

/** Start `mdp-server` standalone on 127.0.0.1, port 0, with `args`; resolves once it listens. */
export async function startChild(args: readonly string[]): Promise<ChildServer> {
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', PROBE, CLI, '--host', '127.0.0.1', '--port', '0', '--cluster-mode', 'standalone', '--log-level', 'info', ...args],
    { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
  );
  let stderr = '';
  const counts = new Map<string, number>();
  const waiters: Array<{ event: string; count: number; resolve: () => void }> = [];
  let partial = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      let event: unknown;
      try {
        event = (JSON.parse(line) as { event?: unknown }).event;
      } catch {
        continue;
      }
      if (typeof event !== 'string') continue;
      counts.set(event, (counts.get(event) ?? 0) + 1);
    }
    for (const waiter of [...waiters]) {
      if ((counts.get(waiter.event) ?? 0) < waiter.count) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`mdp-server exited (${code}) before listening: ${stderr}`)));
  });
  let nextId = 0;
  const server: ChildServer = {
    child,
    port,
    http: `http://127.0.0.1:${port}`,
    ws: `ws://127.0.0.1:${port}/`,
    memory(gc = false) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const onMessage = (message: { id?: number } & ServerMemory): void => {
          if (message.id !== id) return;
          child.off('message', onMessage);
          resolve(message);
        };
        child.on('message', onMessage);
        child.send({ type: 'memory', id, gc }, (error) => error && reject(error));
      });
    },
    logged(event, count = 1) {
      if ((counts.get(event) ?? 0) >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ event, count, resolve }));
    },
    async stop() {
      running.delete(server);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  running.add(server);
  return server;
}

export const MB = 1024 * 1024;
