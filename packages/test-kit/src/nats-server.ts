/**
 * A real `nats-server` for tests (Debian's package; `.ci/run` installs it): JetStream on, 127.0.0.1
 * on a free port, its store in a scratch directory. `stop()` and `start()` again keep the port and
 * the store, as an operator's restart would; `kill()` is a crash.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort } from './ports.js';

export const NATS_SERVER_PATH = process.env['NATS_SERVER'] ?? '/usr/sbin/nats-server';

export function natsServerAvailable(): boolean {
  return existsSync(NATS_SERVER_PATH);
}

/** Log once per file when the binary is missing, saying how to get it. */
export function warnIfNoNatsServer(file: string): void {
  if (natsServerAvailable()) return;
  console.warn(
    `[${file}] SKIPPED: ${NATS_SERVER_PATH} not found. Install Debian's nats-server package ` +
      '(apt-get install nats-server; .ci/run does this) to run the tests against a real NATS server.',
  );
}

/** Bound on the server's start, ms: it prints "Server is ready" within a second on a calm machine. */
const START_TIMEOUT_MS = 15_000;

export interface NatsServerOptions {
  /** Extra lines of configuration file (authorization, limits), in nats-server's config syntax. */
  readonly config?: string;
  /** Start with JetStream (`-js`). Default true. */
  readonly jetstream?: boolean;
}

export class NatsServer {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly configFile: string,
    private readonly jetstream: boolean,
  ) {}

  static async start(options: NatsServerOptions = {}): Promise<NatsServer> {
    const dir = mkdtempSync(join(tmpdir(), 'mdp-nats-'));
    const port = await closedPort();
    const configFile = join(dir, 'nats.conf');
    writeFileSync(configFile, `${options.config ?? ''}\n`);
    const server = new NatsServer(port, dir, configFile, options.jetstream ?? true);
    await server.start();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Start (again) on the same port with the same store. */
  async start(): Promise<void> {
    if (this.child) return;
    const args = ['-c', this.configFile, '-a', '127.0.0.1', '-p', String(this.port), ...(this.jetstream ? ['-js', '-sd', join(this.dir, 'store')] : [])];
    const child = spawn(NATS_SERVER_PATH, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    void this.exited.then(() => {
      if (this.child === child) this.child = undefined;
    });
    let log = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nats-server did not start within ${START_TIMEOUT_MS} ms:\n${log}`)), START_TIMEOUT_MS);
      const onData = (chunk: Buffer): void => {
        log += chunk.toString();
        if (log.includes('Server is ready')) {
          clearTimeout(timer);
          child.stderr?.off('data', onData);
          child.stderr?.resume();
          resolve();
        }
      };
      child.stderr?.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`nats-server exited with ${code} before it was ready:\n${log}`));
      });
    });
  }

  /** Stop as an operator would (SIGTERM) and wait until it has exited. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const forced = setTimeout(() => child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(forced);
  }

  /** Crash (SIGKILL). */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGKILL');
    await this.exited;
  }

  /** Stop and remove the store. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
