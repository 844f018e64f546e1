/**
 * The servers under test and their mock clients. Each subject is one server process (the real
 * `mdp-server` binary or a bare baseline) plus, when it relays to clients, one mock-client process
 * holding its population. Servers get the probe preloaded and listen on 127.0.0.1, port 0.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SERVER_DEFAULTS } from '@mdp/server';
import type { Population } from './fixtures.js';
import { Child } from './proc.js';
import type { ProcessUsage } from './probe.js';
import { BENCH_AUDIENCE, startBenchIssuer, type BenchIssuer } from './issuer.js';

export type ServerKind = 'mdp' | 'bare-http' | 'bare-relay' | 'bare-loop' | 'bare-ws' | 'bare-pages' | 'bare-mcp';
export type ClientTransport = 'ws' | 'loop' | 'none';

/** What one column of a comparison is: which server, reached how, by how many clients. */
export interface SubjectSpec {
  readonly label: string;
  readonly server: ServerKind;
  readonly transport: ClientTransport;
  readonly population: Population;
  /**
   * How the clients and the load sign in (`mdp` only): a static `--auth-token`, or an access token
   * of a stand-in issuer (`--auth-issuer`, issuer.ts). Default: no auth policy.
   */
  readonly auth?: 'token' | 'jwt';
}

/** The static token of `auth: 'token'` subjects. */
const BENCH_TOKEN = 'bench-static-token-0123456789abcdef';

const here = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url));

/** The real `mdp-server` binary, next to the @mdp/server entry point. */
export function mdpServerCli(): string {
  return fileURLToPath(new URL('./cli.js', import.meta.resolve('@mdp/server')));
}

const SCRIPTS: Record<Exclude<ServerKind, 'mdp'>, string> = {
  'bare-http': here('./servers/bare-http.js'),
  'bare-relay': here('./servers/bare-relay.js'),
  'bare-loop': here('./servers/bare-loop.js'),
  'bare-ws': here('./servers/bare-ws.js'),
  'bare-pages': here('./servers/bare-pages.js'),
  'bare-mcp': here('./servers/bare-mcp.js'),
};

/** The bare MCP SDK server on stdio (cold starts). */
export const BARE_MCP_STDIO = here('./servers/bare-mcp-stdio.js');
/** The same server bundled into one file by esbuild, as the binary is (`bundle-sdk.mjs`, at build). */
export const BARE_MCP_STDIO_BUNDLED = here('./servers/bare-mcp-stdio.bundle.js');

export interface ServerOptions {
  /** Write a V8 CPU profile of the server process into this directory when it exits. */
  readonly cpuProfileDir?: string | undefined;
  /** Extra node flags for the server process. */
  readonly nodeArgs?: readonly string[];
  /** How many clients the server will hold (they all connect from 127.0.0.1). */
  readonly clients?: number;
  /** Extra flags for `mdp-server` (tools; the scenarios run it with its defaults). */
  readonly extraArgs?: readonly string[];
}

/**
 * The flags a population of `clients` needs on `mdp-server`: every mock client connects from
 * 127.0.0.1, so past the server's default cap of clients per address (1,000) the cap is raised to
 * the population, and only then: otherwise the server runs with its defaults.
 */
export function populationArgs(clients: number | undefined): string[] {
  return clients !== undefined && clients > SERVER_DEFAULTS.maxClientsPerAddress ? ['--max-clients-per-address', String(clients)] : [];
}

/** A directory name for one subject's profile: `ws-read_1-client_mdp-server`. */
export function profileSlug(...parts: string[]): string {
  return parts.map((p) => p.replace(/[^A-Za-z0-9.]+/g, '-').replace(/^-|-$/g, '')).join('_');
}

/** Time a server has to print its listening line, ms. */
const START_TIMEOUT_MS = 15_000;

export class RunningServer {
  private constructor(
    readonly kind: ServerKind,
    readonly child: Child,
    readonly port: number,
  ) {}

  static async start(kind: ServerKind, label: string, options: ServerOptions = {}): Promise<RunningServer> {
    const nodeArgs = ['--expose-gc', ...(options.nodeArgs ?? []), '--import', pathToFileURL(here('./probe.js')).href];
    let script: string;
    let args: string[];
    if (options.cpuProfileDir) {
      mkdirSync(options.cpuProfileDir, { recursive: true });
      // 250 µs sampling: a request costs ~100 µs, the default 1 ms would blur it.
      nodeArgs.push('--cpu-prof', '--cpu-prof-interval', '250', '--cpu-prof-dir', options.cpuProfileDir);
    }
    if (kind === 'mdp') {
      script = mdpServerCli();
      // The binary as users run it (default options, loopback, any free port), as one node: the
      // CLI's default cluster mode (auto) probes 100 ports every 2 s and may follow and mirror
      // into whatever hub it finds on this machine, which is not the relay being measured.
      args = ['--host', '127.0.0.1', '--port', '0', '--cluster-mode', 'standalone', ...populationArgs(options.clients), ...(options.extraArgs ?? [])];
    } else {
      script = SCRIPTS[kind];
      args = ['0'];
    }
    // Servers run in the temp directory: flags like --perf-basic-prof or --heapsnapshot-signal
    // drop files into the working directory, which must not be the repository.
    const child = new Child(`${label} server`, script, args, { nodeArgs, cwd: tmpdir() });
    const match = await child.waitForLine(/listening on http:\/\/127\.0\.0\.1:(\d+)/, START_TIMEOUT_MS);
    return new RunningServer(kind, child, Number(match[1]));
  }

  get httpUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get wsUrl(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  usage(): Promise<ProcessUsage> {
    return this.child.call<ProcessUsage>('usage');
  }

  /** Start timing how late the server's event loop runs. */
  startLoopDelay(): Promise<void> {
    return this.child.call('startLoopDelay');
  }

  /** How late its event loop ran since `startLoopDelay`: the largest and the 99th-percentile delay, ms. */
  loopDelay(): Promise<{ maxMs: number; p99Ms: number }> {
    return this.child.call('loopDelay');
  }

  /** Start timing the CPU time of the server's turns of the event loop (the probe's 1 ms ticks). */
  startTurnCpu(): Promise<void> {
    return this.child.call('startTurnCpu');
  }

  /** The largest and the 99th-percentile CPU time between two ticks since `startTurnCpu`, ms. */
  turnCpu(): Promise<{ maxMs: number; p99Ms: number }> {
    return this.child.call('turnCpu');
  }

  /** Usage after full collections: for memory figures. */
  collectedUsage(): Promise<ProcessUsage> {
    return this.child.call<ProcessUsage>('gc');
  }

  stop(): Promise<void> {
    return this.child.stop();
  }
}

export interface ClientStatsSnapshot {
  readonly served: number;
  readonly errors: number;
  readonly lastError: string | undefined;
}

/** A mock-client process. */
export class ClientProcess {
  readonly child: Child;

  constructor(label: string) {
    this.child = new Child(`${label} clients`, here('./clients/main.js'), []);
  }

  /** Connect and confirm a population; returns how long it took, ms. */
  async connect(url: string, transport: 'ws' | 'loop', population: Population, timeoutMs: number): Promise<number> {
    const { ms } = await this.child.call<{ ms: number }>('connect', { url, transport, population, parallel: 64 }, timeoutMs);
    return ms;
  }

  disconnect(): Promise<void> {
    return this.child.call('disconnect', undefined, 30_000);
  }

  stats(): Promise<ClientStatsSnapshot> {
    return this.child.call<ClientStatsSnapshot>('stats');
  }

  stop(): Promise<void> {
    return this.child.stop();
  }
}

/** How a subject's population came up: the time to connect and confirm it, and the server CPU it took per client. */
export interface PopulationStart {
  readonly ms: number;
  readonly cpuUsPerClient: number;
}

/** A subject brought up: its server and, unless it has none, its clients connected. */
export class Subject {
  /** Set once its clients are connected (none for a subject without clients). */
  started: PopulationStart | undefined;
  /** The server's RSS peak once its clients were connected and registered, before any load, bytes. */
  registeredPeakBytes = 0;

  /** The issuer of its access tokens (`auth: 'jwt'`), stopped with it. */
  private issuer: BenchIssuer | undefined;

  private constructor(
    readonly spec: SubjectSpec,
    /** `spec.population` with the credential its clients and load send. */
    readonly population: Population,
    readonly server: RunningServer,
    readonly clients: ClientProcess | undefined,
    private readonly profileDir: string | undefined,
  ) {}

  static async start(spec: SubjectSpec, options: ServerOptions = {}): Promise<Subject> {
    const issuer = spec.auth === 'jwt' ? await startBenchIssuer() : undefined;
    const authArgs = spec.auth === 'token' ? ['--auth-token', BENCH_TOKEN] : issuer ? ['--auth-issuer', issuer.url, '--auth-audience', BENCH_AUDIENCE] : [];
    const credential = spec.auth === 'token' ? BENCH_TOKEN : issuer?.token('bench');
    const population = credential === undefined ? spec.population : { ...spec.population, authorization: `Bearer ${credential}` };
    let server: RunningServer;
    try {
      server = await RunningServer.start(spec.server, spec.label, {
        ...options,
        clients: spec.population.clients,
        extraArgs: [...(options.extraArgs ?? []), ...authArgs],
      });
    } catch (error) {
      await issuer?.close();
      throw error;
    }
    if (spec.transport === 'none') {
      const subject = new Subject(spec, population, server, undefined, options.cpuProfileDir);
      subject.issuer = issuer;
      subject.registeredPeakBytes = (await server.usage()).maxRss;
      return subject;
    }
    const clients = new ClientProcess(spec.label);
    const subject = new Subject(spec, population, server, clients, options.cpuProfileDir);
    subject.issuer = issuer;
    try {
      // 2,000 clients × 20 skills takes a few seconds on a busy machine; allow far more.
      const timeoutMs = 60_000 + spec.population.clients * 30;
      const u0 = await server.usage();
      const ms = await clients.connect(spec.transport === 'ws' ? server.wsUrl : server.httpUrl, spec.transport, population, timeoutMs);
      const u1 = await server.usage();
      subject.started = { ms, cpuUsPerClient: (u1.cpuUs - u0.cpuUs) / spec.population.clients };
      subject.registeredPeakBytes = u1.maxRss;
    } catch (error) {
      await subject.stop();
      throw error;
    }
    return subject;
  }

  async clientErrors(): Promise<ClientStatsSnapshot> {
    return this.clients ? this.clients.stats() : { served: 0, errors: 0, lastError: undefined };
  }

  /** Disconnect the clients (so the server sees them leave), then stop both processes. */
  async stop(): Promise<void> {
    if (this.profileDir && this.clients?.child.running) {
      // Calls relayed over the server's whole life (warm-up included): the divisor of its profile.
      const { served } = await this.clients.stats().catch(() => ({ served: 0 }));
      writeFileSync(join(this.profileDir, 'relayed.json'), JSON.stringify({ relayed: served }));
    }
    if (this.clients?.child.running) await this.clients.disconnect().catch(() => undefined);
    await Promise.all([this.clients?.stop(), this.server.stop()]);
    await this.issuer?.close();
  }
}

export interface ChurnFigures {
  readonly registrations: number;
  readonly errors: number;
  readonly elapsedMs: number;
  readonly latency: { readonly p50: number; readonly p99: number; readonly max: number };
}

/** Registration-rate loops run from a subject's mock-client process. */
export function churn(subject: Subject, concurrency: number, durationMs: number, skills: number): Promise<ChurnFigures> {
  if (!subject.clients) throw new Error(`${subject.spec.label} has no client process`);
  return subject.clients.child.call<ChurnFigures>('churn', { url: subject.server.wsUrl, concurrency, durationMs, skills }, durationMs + 60_000);
}
