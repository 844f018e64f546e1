/**
 * The bundled binary (`dist/cli.js` and `dist/bundle/`, made by bundle.mjs): the version and help
 * it prints come without loading the server, its MCP session says the package's version, and the
 * inspector's files, which the bundle copies beside its chunks, are the inspector package's own.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { freePorts } from '@mdp/test-kit';
import { HELP } from '../src/index.js';
import { killAll, printed, spawnServer, terminate } from './processes.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const DIST = fileURLToPath(new URL('../dist/', import.meta.url));
const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

let dir: string | undefined;
afterEach(async () => {
  killAll();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** An `--import` module whose load hook appends every module file it loads from `dist/` to `log`. */
async function recorder(): Promise<{ args: string[]; loaded: () => Promise<string[]> }> {
  dir = await mkdtemp(join(tmpdir(), 'mdp-bundle-'));
  const log = join(dir, 'loaded.txt');
  const hooks = `
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.startsWith(${JSON.stringify(pathToFileURL(DIST).href)})) appendFileSync(${JSON.stringify(log)}, url.slice(${pathToFileURL(DIST).href.length}) + '\\n');
  return next(url, context);
}`;
  const script = join(dir, 'recorder.mjs');
  await writeFile(script, `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));\n`);
  return {
    args: ['--import', pathToFileURL(script).href],
    loaded: async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean),
  };
}

function run(args: readonly string[]): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout })));
}

it('--version and --help answer from dist/cli.js alone, without loading a chunk of the server', async () => {
  const { args, loaded } = await recorder();
  const shown = await run([...args, CLI, '--version']);
  expect(shown).toEqual({ code: 0, stdout: `mdp-server ${version}\n` });
  const help = await run([...args, CLI, '--help']);
  expect(help).toEqual({ code: 0, stdout: `${HELP}\n` });
  expect(await loaded()).toEqual(['cli.js', 'cli.js']);
});

it('dist/cli.js holds of npm packages only those the settings need', async () => {
  // What every command loads: a package index re-exported into it (ws, the NATS client, jose…)
  // makes every start pay for it. A new one here is either needed to read the command line, or a
  // default that should move to a module of its own (as WS_LIMIT_DEFAULTS and BUS_DEFAULTS did).
  const { sources } = JSON.parse(await readFile(`${CLI}.map`, 'utf8')) as { sources: string[] };
  const packages = new Set(sources.flatMap((source) => /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\//.exec(source)?.[1] ?? []));
  expect([...packages].sort()).toEqual(['jsonc-parser', 'valibot']);
});

it('mdp-server mcp answers initialize with the package version, and loads the bridge from dist/bundle/', async () => {
  const { args, loaded } = await recorder();
  const child = spawn(process.execPath, [...args, CLI, 'mcp', '--port', '0', '--cluster-mode', 'standalone', '--log-level', 'warn'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  };
  child.stdin.write(`${JSON.stringify(initialize)}\n`);
  let out = '';
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.split('\n')[0] as string);
    });
    child.once('exit', (code) => reject(new Error(`exited (${code}) before answering`)));
  });
  expect((JSON.parse(line) as { result: { serverInfo: { name: string; version: string } } }).result.serverInfo).toMatchObject({ name: 'mdp-server', version });
  child.stdin.end();
  expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
  expect(await loaded()).toEqual(expect.arrayContaining(['cli.js', 'bundle/server.js', 'bundle/mcp-bridge.js']));
});

it("serves the inspector's page scripts and marked as the inspector package has them", async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdp-bundle-'));
  const [port, rangeStart] = await freePorts(2);
  const proc = spawnServer({
    port: port!,
    rangeStart: rangeStart!,
    rangeSize: 1,
    stateDir: join(dir, 'state'),
    clusterId: 'bundle',
    extra: ['--cluster-mode', 'standalone'],
  });
  await printed(proc, /listening on/);
  const inspector = fileURLToPath(new URL('../../../packages/inspector/', import.meta.url));
  const pages = (await readdir(join(inspector, 'dist/page'))).filter((name) => name.endsWith('.js'));
  expect(pages.length).toBeGreaterThan(0);
  const marked = createRequire(join(inspector, 'dist/assets.js')).resolve('marked');
  for (const [path, file] of [...pages.map((name) => [`/${name}`, join(inspector, 'dist/page', name)]), ['/marked.js', marked]] as const) {
    const response = await fetch(`http://127.0.0.1:${port}/mdp/inspector${path}`);
    expect(response.status, path).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(await readFile(file)), path).toBe(true);
  }
  expect((await terminate(proc)).code).toBe(0);
});

it('keeps source maps that name the TypeScript sources', async () => {
  const map = JSON.parse(await readFile(`${CLI}.map`, 'utf8')) as { sources: string[]; sourcesContent?: unknown[] };
  expect(map.sources).toContain('../src/cli.ts');
  expect(map.sourcesContent?.length).toBe(map.sources.length);
  // The workspace packages' sources, read through their own maps: what dist/bundle/ holds of @mdp/core.
  const chunks = (await readdir(join(DIST, 'bundle'))).filter((name) => name.endsWith('.js.map'));
  const sources = await Promise.all(
    chunks.map(async (name) => (JSON.parse(await readFile(join(DIST, 'bundle', name), 'utf8')) as { sources: string[] }).sources),
  );
  expect(sources.flat().some((source) => source.endsWith('packages/core/src/router.ts'))).toBe(true);
});
