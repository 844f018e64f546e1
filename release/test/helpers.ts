/**
 * Shared by the release tests: the repository's packages, child processes with their output, and
 * scratch directories under the system temp dir (every test writes only there).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly [field: string]: unknown;
}

export interface WorkspacePackage {
  /** Path from the repository root, e.g. `packages/core`. */
  readonly dir: string;
  readonly manifest: Manifest;
}

export function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** Every workspace package (the `packages:` globs of pnpm-workspace.yaml: packages/*, apps/*, …). */
export function workspacePackages(): WorkspacePackage[] {
  const lines = readFileSync(join(REPO, 'pnpm-workspace.yaml'), 'utf8').split('\n');
  const start = lines.findIndex((line) => /^packages:\s*$/.test(line)) + 1;
  const end = lines.findIndex((line, i) => i >= start && /^\S/.test(line));
  const globs = lines
    .slice(start, end === -1 ? undefined : end)
    .map((line) => /^\s*-\s*["']?([^"']+)["']?\s*$/.exec(line)?.[1])
    .filter((glob): glob is string => glob !== undefined);
  const dirs = globs.flatMap((glob) =>
    glob.endsWith('/*')
      ? readdirSync(join(REPO, glob.slice(0, -2)), { withFileTypes: true })
          .filter((entry) => entry.isDirectory())
          .map((entry) => `${glob.slice(0, -2)}/${entry.name}`)
      : [glob],
  );
  return dirs
    .filter((dir) => existsSync(join(REPO, dir, 'package.json')))
    .map((dir) => ({ dir, manifest: readJson<Manifest>(join(REPO, dir, 'package.json')) }));
}

/** The packages that are published (not `private`). */
export function publishedPackages(): WorkspacePackage[] {
  return workspacePackages().filter((p) => p.manifest.private !== true);
}

const scratchDirs: string[] = [];

/** A new directory under the system temp dir, removed by `removeScratch()`. */
export function scratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `mdp-${prefix}-`));
  scratchDirs.push(dir);
  return dir;
}

export function removeScratch(): void {
  for (const dir of scratchDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run a command to its end; the result carries both outputs (nothing is thrown for a failure). */
export function run(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<RunResult> {
  const child = spawn(command, args, { cwd: REPO, ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
}

/** The result's output, for assertion messages. */
export function output(result: RunResult): string {
  return `exit ${result.code ?? result.signal}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
}

export interface Server {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>`, from the line the server prints once it listens. */
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
}

const servers: ChildProcess[] = [];

/** Start a server process and resolve once it prints `listening on http://…`. */
export function startServer(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<Server> {
  const child = spawn(command, args, { cwd: REPO, ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  servers.push(child);
  let stdout = '';
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) =>
    child.once('exit', (code, signal) => resolveExit({ code, signal })),
  );
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    void exited.then(({ code, signal }) => reject(new Error(`exited (${code ?? signal}) before listening:\n${stdout}\n${stderr}`)));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
      if (url) resolvePromise({ child, url, exited, stdout: () => stdout, stderr: () => stderr });
    });
  });
}

/**
 * Stop what `startServer` started and is still running: SIGTERM first (a launcher such as
 * `pnpm start` passes it on to the server it runs), SIGKILL if that has not ended it in 5 s.
 */
export async function stopServers(): Promise<void> {
  await Promise.all(
    servers.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolveGone) => child.once('exit', resolveGone));
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(kill);
    }),
  );
}

/** Environment for a server started by a test: its cluster state goes to a scratch directory. */
export function serverEnv(stateHome: string): NodeJS.ProcessEnv {
  return { ...process.env, XDG_STATE_HOME: stateHome };
}
