/**
 * What a server without `--bus` never loads, and what it loads only when asked (issue 33: the start
 * of `mdp-server mcp`): the NATS client only in bus mode, prom-client at the first scrape of
 * /metrics. A load hook in the real binary records every module of those packages it loads: a file
 * of the package itself, or a file of the bundled binary (`dist/cli.js` and its chunks) that holds
 * one, as esbuild names each bundled module in a comment with its path.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { freePorts, stopAll } from '@mdp/test-kit';
import { killAll, printed, spawnServer, terminate } from './processes.js';

let dir: string | undefined;
afterEach(async () => {
  killAll();
  await stopAll();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** An `--import` module that registers a load hook appending every NATS or prom-client module loaded (path per line) to `log`. */
function recorderSource(log: string): string {
  const hooks = `
import { appendFileSync } from 'node:fs';
const WATCHED = /[^\\s'"]*\\/(?:@nats-io\\/[^\\s'"/]+|prom-client)\\/[^\\s'"]+/g;
export async function load(url, context, next) {
  const loaded = await next(url, context);
  const found = /\\/(?:@nats-io\\/|prom-client\\/)/.test(url) ? [url] : String(loaded.source ?? '').match(WATCHED) ?? [];
  if (found.length > 0) appendFileSync(${JSON.stringify(log)}, found.join('\\n') + '\\n');
  return loaded;
}`;
  return `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));\n`;
}

const loadedModules = async (log: string): Promise<string[]> => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);

it('a server without --bus loads no NATS module, and prom-client only at the first scrape of /metrics', async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdp-lazy-modules-'));
  const log = join(dir, 'modules.txt');
  const recorder = join(dir, 'recorder.mjs');
  await writeFile(recorder, recorderSource(log));
  const [port, rangeStart] = await freePorts(2);
  const proc = spawnServer({
    port: port!,
    rangeStart: rangeStart!,
    rangeSize: 1,
    stateDir: join(dir, 'state'),
    clusterId: 'lazy-modules',
    extra: ['--cluster-mode', 'standalone'],
    nodeArgs: ['--import', pathToFileURL(recorder).href],
  });
  await printed(proc, /listening on/);
  const base = `http://127.0.0.1:${port}`;
  expect((await fetch(`${base}/healthz`)).status).toBe(200);
  expect(await loadedModules(log)).toEqual([]);

  const scrape = await fetch(`${base}/metrics`);
  expect(scrape.status).toBe(200);
  const text = await scrape.text();
  expect(text).toContain('process_cpu_user_seconds_total');
  expect(text).toContain('mdp_sessions');
  const loaded = await loadedModules(log);
  expect(loaded.some((url) => url.includes('/prom-client/'))).toBe(true);
  expect(loaded.filter((url) => url.includes('/@nats-io/'))).toEqual([]);
  // Made once: a second scrape answers the same way.
  expect((await fetch(`${base}/metrics`)).status).toBe(200);

  expect((await terminate(proc)).code).toBe(0);
});
