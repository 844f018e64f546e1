/** Real servers and processes for the probe tests: HTTP servers on 127.0.0.1 port 0, the built CLI. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { buildMetaDocument, metaEndpoints, standaloneClusterView, type ClusterView } from '@mdp/protocol';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export const PROBE_CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
export const SERVER_CLI = fileURLToPath(new URL('../../server/dist/cli.js', import.meta.url));

/** Everything a test started, stopped by `stopAll()` in afterEach. */
const servers: Server[] = [];
const children: ChildProcess[] = [];

export async function stopAll(): Promise<void> {
  await Promise.all([
    ...servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
    ...children.splice(0).map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  ]);
}

async function listen(server: Server, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', onError);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** An HTTP server on 127.0.0.1 at a free port; `handler` gets its own port. */
export async function serve(handler: (port: number) => Handler): Promise<number> {
  let port = 0;
  const server = createServer((req, res) => handler(port)(req, res));
  servers.push(server);
  port = await listen(server, 0);
  return port;
}

/**
 * Servers on consecutive ports (for --scan over an exact range). The first port is picked at random
 * below the OS's ephemeral range (32768 and up on Linux), where a busy machine's outgoing
 * connections do not take ports; if a neighbour is taken, start again from another first port.
 */
export async function serveConsecutive(handlers: ReadonlyArray<(port: number) => Handler>): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const started: Server[] = [];
    try {
      const first = 20_000 + Math.floor(Math.random() * 12_000);
      for (const [i, handler] of handlers.entries()) {
        const port = first + i;
        const server = createServer((req, res) => handler(port)(req, res));
        started.push(server);
        await listen(server, port);
      }
      servers.push(...started);
      return first;
    } catch {
      await Promise.all(started.map((server) => new Promise((resolve) => server.close(resolve))));
    }
  }
  throw new Error('no run of consecutive free ports found');
}

/** A port nothing listens on: bound, then released. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server, 0);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export function metaDocument(port: number, cluster: Record<string, unknown> = {}): Record<string, unknown> {
  const id = `127.0.0.1:${port}`;
  const endpoints = metaEndpoints(id);
  return buildMetaDocument(id, endpoints, { ...standaloneClusterView('default', id, endpoints.ws, 4000), ...cluster } as ClusterView, {
    upstreamProxy: true,
    clusterControl: true,
  });
}

/** Answer `/mdp/meta` with `body` (JSON-encoded unless a string). */
export function answer(status: number, body: unknown, contentType = 'application/json'): Handler {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': contentType });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
}

export const mdp = (overrides: (doc: Record<string, unknown>) => void = () => undefined) => (port: number): Handler => {
  const doc = metaDocument(port);
  overrides(doc);
  return answer(200, doc);
};

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Wall time from spawn to exit, in ms. */
  readonly ms: number;
}

/**
 * Run a built CLI as a child process. Asynchronous on purpose: the servers it probes live in this
 * process, so a synchronous spawn would block them from answering.
 */
export function runNode(script: string, args: readonly string[]): Promise<CliRun> {
  if (!existsSync(script)) throw new Error(`${script} is missing: build first (npx turbo run build --filter=@mdp/probe...)`);
  const started = performance.now();
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

export const probe = (...args: string[]): Promise<CliRun> => runNode(PROBE_CLI, args);

/**
 * Start `mdp-server --port 0 --host 127.0.0.1` and resolve to its base URL, read from the line it
 * prints once it listens. The process is stopped by `stopAll()`.
 */
export function startMdpServer(extraArgs: readonly string[] = []): Promise<string> {
  const child = spawn(process.execPath, [SERVER_CLI, '--port', '0', '--host', '127.0.0.1', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`mdp-server exited with ${code}: ${stderr}`)));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /(http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match?.[1]) resolve(match[1]);
    });
  });
}
