/**
 * Real `mdp-server` processes for tests: spawn the built binary, wait on what it prints (stdout
 * lines, JSON log lines on stderr), read its /mdp/meta, stop it every way. Each process gets the
 * state directory it is given (one per simulated user), so the cluster secret and term files of a
 * test never touch the real user's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { parseMetaDocument, type ClientDescriptor, type MetaDocument } from '@mdp/protocol';
import { until } from '@mdp/test-kit';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const children = new Set<ChildProcess>();

/** Cluster timings for tests that are not about the defaults: heartbeats every 100 ms. */
export const FAST_CLUSTER = [
  ['--cluster-heartbeat-interval-ms', 100],
  ['--lease-duration-ms', 800],
  ['--election-timeout-min-ms', 1000],
  ['--election-timeout-max-ms', 1500],
  ['--discover-interval-ms', 300],
  ['--discover-timeout-ms', 200],
]
  .flat()
  .map(String);

/** SIGKILL whatever a test left running. */
export function killAll(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
}

export interface Proc {
  readonly child: ChildProcess;
  readonly port: number;
  /** Everything printed on stdout so far. */
  stdout: string;
  /** Log lines (JSON on stderr) so far. */
  readonly logs: Record<string, unknown>[];
  /** Emits 'change' whenever something was printed or logged. */
  readonly changes: EventEmitter;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface ServerArgs {
  readonly port: number;
  /** First port of the discovery range (the "default port" of a test). */
  readonly rangeStart: number;
  readonly rangeSize: number;
  /** The simulated user's state directory (term, vote, cluster secret). */
  readonly stateDir: string;
  readonly clusterId: string;
  readonly extra?: readonly string[];
  /** node's own flags, before the script (`--import …`). */
  readonly nodeArgs?: readonly string[];
}

export function spawnServer(a: ServerArgs): Proc {
  return spawnCli(a.port, [
    ...(a.nodeArgs ?? []),
    CLI,
    ...['--port', a.port, '--cluster-id', a.clusterId, '--discover-start-port', a.rangeStart, '--discover-attempts', a.rangeSize].map(String),
    ...['--cluster-state-dir', a.stateDir, '--log-level', 'info'],
    ...(a.extra ?? []),
  ]);
}

/** `mdp-server` on `port` with `args` and nothing else (no discovery range: a node of a fleet on NATS). */
export function spawnPlain(port: number, stateDir: string, args: readonly string[]): Proc {
  return spawnCli(port, [CLI, '--port', String(port), '--cluster-state-dir', stateDir, '--log-level', 'info', ...args]);
}

function spawnCli(port: number, args: readonly string[]): Proc {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const proc: Proc = {
    child,
    port,
    stdout: '',
    logs: [],
    changes: new EventEmitter(),
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    proc.stdout += d;
    proc.changes.emit('change');
  });
  let partial = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    const lines = (partial + d).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      try {
        proc.logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        proc.logs.push({ event: 'text', text: line });
      }
    }
    proc.changes.emit('change');
  });
  return proc;
}

/** What a failed wait shows of `proc`: its port, exit status, stdout and its last log lines. */
function described(proc: Proc): string {
  const { exitCode, signalCode } = proc.child;
  const status = exitCode === null && signalCode === null ? 'running' : `exited (${exitCode ?? signalCode})`;
  const logs = proc.logs.slice(-8).map((l) => JSON.stringify(l));
  return [`process on port ${proc.port}, ${status}`, 'stdout:', proc.stdout, 'last log lines:', ...logs].join('\n');
}

/**
 * Resolves once `check()` returns a value, checked whenever one of `procs` prints or logs; rejects
 * after `timeoutMs` (naming `what`) or as soon as one of them exits with nothing matched: once its
 * output is closed, it can print nothing more.
 */
function waitFor<T>(procs: readonly Proc[], check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  let gone: Proc | undefined;
  return until(
    procs.map((proc) => (change: () => void) => {
      const onClose = (): void => ((gone ??= proc), change());
      proc.changes.on('change', change);
      proc.child.on('close', onClose);
      return () => {
        proc.changes.off('change', change);
        proc.child.off('close', onClose);
      };
    }),
    () => {
      const value = check();
      if (value === undefined && gone) throw new Error(`${what}: the process on port ${gone.port} exited first\n${described(gone)}`);
      return value;
    },
    { timeoutMs, what: () => `${what}\n${procs.map(described).join('\n')}` },
  );
}

/** The first stdout line matching `pattern` printed at or after character `from` of stdout. */
export function printed(proc: Proc, pattern: RegExp, timeoutMs = 10_000, from = 0): Promise<RegExpExecArray> {
  return waitFor([proc], () => pattern.exec(proc.stdout.slice(from)) ?? undefined, timeoutMs, `${pattern} on stdout`);
}

/** The first log line with `event` (and the given fields) logged at or after line `from`. */
export function logged(proc: Proc, event: string, fields: Record<string, unknown> = {}, timeoutMs = 10_000, from = 0): Promise<Record<string, unknown>> {
  const matches = (line: Record<string, unknown>): boolean => line.event === event && Object.entries(fields).every(([k, v]) => line[k] === v);
  return waitFor([proc], () => proc.logs.slice(from).find(matches), timeoutMs, `log ${event} ${JSON.stringify(fields)}`);
}

const LEADS = /cluster \S+: this node is the leader \(term (\d+)\)/;
const FOLLOWS = /cluster \S+: following (\S+) at \S+ \(term (\d+)\)/;

/** Resolves once `proc` prints, after what it printed so far, that it leads; with the term. */
export async function leadsNext(proc: Proc, timeoutMs = 10_000, from = proc.stdout.length): Promise<number> {
  return Number((await printed(proc, LEADS, timeoutMs, from))[1]);
}

/** Resolves once `proc` prints, after what it printed so far, that it follows `leader`. */
export async function followsNext(proc: Proc, leader: Proc, timeoutMs = 10_000, from = proc.stdout.length): Promise<void> {
  await printed(proc, new RegExp(FOLLOWS.source.replace('(\\S+)', `(127\\.0\\.0\\.1:${leader.port})`)), timeoutMs, from);
}

/** The last line of leadership `proc` printed: `leader`, `follower` (of someone) or `none`. */
export function lastRole(proc: Proc): 'leader' | 'follower' | 'none' {
  const lines = proc.stdout.split('\n').filter((l) => / cluster \S+: /.test(l));
  const last = lines.at(-1) ?? '';
  return LEADS.test(last) ? 'leader' : FOLLOWS.test(last) ? 'follower' : 'none';
}

/** Whom the last leadership line of `proc` names as leader (itself when it leads), if any. */
function leaderNamed(proc: Proc): string | undefined {
  const lines = proc.stdout.split('\n').filter((l) => / cluster \S+: /.test(l));
  const last = lines.at(-1) ?? '';
  if (LEADS.test(last)) return `127.0.0.1:${proc.port}`;
  return FOLLOWS.exec(last)?.[1];
}

/** Resolves with the one process all of `procs` name as leader in their last lines. */
export function agreedLeader(procs: readonly Proc[], timeoutMs = 10_000): Promise<Proc> {
  const check = (): Proc | undefined => {
    const named = procs.map(leaderNamed);
    const leader = procs.find((p) => named[0] !== undefined && named[0] === `127.0.0.1:${p.port}`);
    return leader && named.every((n) => n === named[0]) ? leader : undefined;
  };
  return waitFor(procs, check, timeoutMs, 'an agreed leader');
}

export async function metaOf(port: number): Promise<MetaDocument> {
  const res = await fetch(`http://127.0.0.1:${port}/mdp/meta`);
  const parsed = parseMetaDocument(await res.json());
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

/** SIGTERM, and the exit status. */
export async function terminate(proc: Proc): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  proc.child.kill('SIGTERM');
  return proc.exited;
}

/** SIGKILL, and wait until it is gone. */
export async function kill(proc: Proc): Promise<void> {
  proc.child.kill('SIGKILL');
  await proc.exited;
}

/** Where a {@link ReconnectingClient} is connected: its URL and the how-manieth connection it is. */
export interface ClientConnection {
  readonly url: string;
  readonly number: number;
}

export interface ReconnectingClientOptions {
  /** First wait before a new attempt, ms, doubled up to `maxBackoffMs`. Default 1000 (the SDK's). */
  readonly backoffMs?: number;
  /** Default 8000 (the SDK's). */
  readonly maxBackoffMs?: number;
  /**
   * Send a websocket ping this often and give the connection up (to try again, the next URL) when
   * no pong came back since the last one, ms: a server that stopped answering (SIGSTOP) is left
   * the way a dead one is. Default: off, as the SDK.
   */
  readonly pingEveryMs?: number;
}

/**
 * An MDP client the way the reference client SDK behaves with reconnect on: when the connection
 * drops it tries again after 1 s, doubling up to 8 s, and registers its client again on every new
 * connection. Given several URLs (the nodes of a fleet), each new attempt goes to the next one;
 * with `pingEveryMs`, a connection whose server stops answering pings is given up too.
 * Each call is answered with `answer(path, connection)` (an answer of a connection that closed
 * meanwhile is dropped).
 */
export class ReconnectingClient {
  private socket: WebSocket | undefined;
  private readonly urls: readonly string[];
  private nextUrl = 0;
  private backoffMs: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Connections that opened (and registered). */
  connections = 0;
  /** The open connection, if any. */
  current: ClientConnection | undefined;
  private readonly waiters: (() => void)[] = [];

  constructor(
    url: string | readonly string[],
    private readonly client: ClientDescriptor,
    private readonly answer: (path: string, connection: ClientConnection) => string | Promise<string>,
    private readonly options: ReconnectingClientOptions = {},
  ) {
    this.urls = typeof url === 'string' ? [url] : url;
    this.backoffMs = options.backoffMs ?? 1000;
    this.connect();
  }

  /** Resolves when the next connection opens and its register message is sent. */
  nextConnection(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private connect(): void {
    if (this.stopped) return;
    const url = this.urls[this.nextUrl++ % this.urls.length] as string;
    const socket = new WebSocket(url);
    this.socket = socket;
    let connection: ClientConnection | undefined;
    let liveness: NodeJS.Timeout | undefined;
    socket.on('open', () => {
      if (this.options.pingEveryMs !== undefined) {
        let answered = true;
        socket.on('pong', () => (answered = true));
        liveness = setInterval(() => {
          if (!answered) socket.terminate();
          answered = false;
          socket.ping();
        }, this.options.pingEveryMs);
      }
      this.backoffMs = this.options.backoffMs ?? 1000;
      this.connections += 1;
      connection = { url, number: this.connections };
      this.current = connection;
      socket.send(JSON.stringify({ type: 'registerClient', client: this.client }));
      for (const resolve of this.waiters.splice(0)) resolve();
    });
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; requestId?: string; path?: string; timestamp?: number };
      if (message.type === 'callClient' && connection) {
        void Promise.resolve(this.answer(message.path ?? '', connection)).then((answer) => {
          if (socket.readyState === WebSocket.OPEN)
            socket.send(JSON.stringify({ type: 'callClientResult', requestId: message.requestId, ok: true, data: answer }));
        });
      } else if (message.type === 'ping') {
        socket.send(JSON.stringify({ type: 'pong', timestamp: message.timestamp }));
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(liveness);
      if (this.current === connection) this.current = undefined;
      if (this.stopped) return;
      this.timer = setTimeout(() => this.connect(), this.backoffMs);
      this.backoffMs = Math.min(this.options.maxBackoffMs ?? 8000, this.backoffMs * 2);
    });
  }

  close(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.socket?.terminate();
  }
}
