/**
 * What a server without `--bus` never loads, and what it loads only when asked (issue 33: the start
 * of `mdp-server mcp`): the NATS client only in bus mode, prom-client at the first scrape of
 * /metrics, as the real binary's load hook records them (load-recorder.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { stopAll } from '@mdp/test-kit';
import { serverRecordingLoads } from './load-recorder.js';
import { killAll, terminate } from './processes.js';

let dir: string | undefined;
afterEach(async () => {
  killAll();
  await stopAll();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

it('a server without --bus loads no NATS module, and prom-client only at the first scrape of /metrics', async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdp-lazy-modules-'));
  const { proc, base, loaded: loadedModules } = await serverRecordingLoads(dir, '@nats-io/[^\\s\'"/]+|prom-client', 'lazy-modules');
  expect((await fetch(`${base}/healthz`)).status).toBe(200);
  expect(await loadedModules()).toEqual([]);

  const scrape = await fetch(`${base}/metrics`);
  expect(scrape.status).toBe(200);
  const text = await scrape.text();
  expect(text).toContain('process_cpu_user_seconds_total');
  expect(text).toContain('mdp_sessions');
  const loaded = await loadedModules();
  expect(loaded.some((url) => url.includes('/prom-client/'))).toBe(true);
  expect(loaded.filter((url) => url.includes('/@nats-io/'))).toEqual([]);
  // Made once: a second scrape answers the same way.
  expect((await fetch(`${base}/metrics`)).status).toBe(200);

  expect((await terminate(proc)).code).toBe(0);
});
