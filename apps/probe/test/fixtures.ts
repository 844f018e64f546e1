/** Real servers and processes for the probe tests: HTTP servers on 127.0.0.1 port 0, the built CLI. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { buildMetaDocument, metaEndpoints, standaloneClusterView, type ClusterView } from '@mdp/protocol';
import { bindConsecutive, listen, until } from '@mdp/test-kit';

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

/** An HTTP server on 127.0.0.1 at a free port; `handler` gets its own port. */
export async function serve(handler: (port: number) => Handler): Promise<number> {
  let port = 0;
  const server = createServer((req, res) => handler(port)(req, res));
  servers.push(server);
  port = await listen(server, 0);
  return port;
}

/** Servers on consecutive free ports (for --scan over an exact range); resolves with the first. */
export async function serveConsecutive(handlers: ReadonlyArray<(port: number) => Handler>): Promise<number> {
  const { first, servers: started } = await bindConsecutive(handlers.length, async (port, i) => {
    const server = createServer((req, res) => (handlers[i] as (port: number) => Handler)(port)(req, res));
    await listen(server, port);
    return server;
  });
  servers.push(...started);
  return first;
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

export const mdp =
  (overrides: (doc: Record<string, unknown>) => void = () => undefined) =>
  (port: number): Handler => {
    const doc = metaDocument(port);
    overrides(doc);
    return answer(200, doc);
  };

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Run a built CLI as a child process. Asynchronous on purpose: the servers it probes live in this
 * process, so a synchronous spawn would block them from answering.
 */
export function runNode(script: string, args: readonly string[]): Promise<CliRun> {
  if (!existsSync(script)) throw new Error(`${script} is missing: build first (npx turbo run build --filter=@mdp/probe...)`);
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export const probe = (...args: string[]): Promise<CliRun> => runNode(PROBE_CLI, args);

export interface MdpProcess {
  /** Its base URL, from the line it prints once it listens. */
  readonly url: string;
  /** Resolves with the first match of `pattern` in what it printed on stdout; rejects if it exits first. */
  printed(pattern: RegExp): Promise<RegExpExecArray>;
}

/**
 * Start `mdp-server --port 0 --host 127.0.0.1`; resolves once it listens. The process is stopped
 * by `stopAll()`.
 */
export async function startMdpServer(extraArgs: readonly string[] = []): Promise<MdpProcess> {
  const child = spawn(process.execPath, [SERVER_CLI, '--port', '0', '--host', '127.0.0.1', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const printed = (pattern: RegExp): Promise<RegExpExecArray> =>
    until(
      (change) => {
        child.stdout.on('data', change);
        child.on('exit', change);
        return () => {
          child.stdout.off('data', change);
          child.off('exit', change);
        };
      },
      () => {
        const match = pattern.exec(stdout);
        if (match) return match;
        if (child.exitCode !== null) throw new Error(`mdp-server exited with ${child.exitCode} before printing ${pattern}: ${stderr}`);
        return undefined;
      },
    );
  const url = (await printed(/(http:\/\/127\.0\.0\.1:\d+)/))[1] as string;
  return { url, printed };
}
