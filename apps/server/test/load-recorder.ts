/**
 * A real server (the built binary, standalone, on loopback) with a load hook that records every
 * module of some packages it loads: a file of such a package itself, or a file of the bundled
 * binary (`dist/cli.js` and its chunks) that holds one, as esbuild names each bundled module in a
 * comment with its path. For the tests of what the binary loads only when it is used.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePorts } from '@mdp/test-kit';
import { printed, spawnServer, type Proc } from './processes.js';

/** An `--import` module that registers a load hook appending every module of `packages` loaded (path per line) to `log`. */
function recorderSource(log: string, packages: string): string {
  const hooks = `
import { appendFileSync } from 'node:fs';
const OWN = new RegExp(${JSON.stringify(`/(?:${packages})/`)});
const BUNDLED = new RegExp(${JSON.stringify(`[^\\s'"]*/(?:${packages})/[^\\s'"]+`)}, 'g');
export async function load(url, context, next) {
  const loaded = await next(url, context);
  const found = OWN.test(url) ? [url] : String(loaded.source ?? '').match(BUNDLED) ?? [];
  if (found.length > 0) appendFileSync(${JSON.stringify(log)}, found.join('\\n') + '\\n');
  return loaded;
}`;
  return `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));\n`;
}

export interface RecordedServer {
  readonly proc: Proc;
  readonly port: number;
  readonly base: string;
  /** The recorded modules so far, one path each. */
  loaded(): Promise<string[]>;
}

/**
 * Start the binary in `dir` (its state and the hook's files go there) recording the modules whose
 * path has `/<packages>/` in it; `packages` is a regular expression's source (`prom-client|@nats-io/[^/]+`).
 */
export async function serverRecordingLoads(dir: string, packages: string, clusterId: string): Promise<RecordedServer> {
  const log = join(dir, 'modules.txt');
  const recorder = join(dir, 'recorder.mjs');
  await writeFile(recorder, recorderSource(log, packages));
  const [port, rangeStart] = (await freePorts(2)) as [number, number];
  const proc = spawnServer({
    port,
    rangeStart,
    rangeSize: 1,
    stateDir: join(dir, 'state'),
    clusterId,
    extra: ['--cluster-mode', 'standalone'],
    nodeArgs: ['--import', pathToFileURL(recorder).href],
  });
  await printed(proc, /listening on/);
  const loaded = async (): Promise<string[]> => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return { proc, port, base: `http://127.0.0.1:${port}`, loaded };
}
