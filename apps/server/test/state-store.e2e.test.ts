/**
 * The state store on a real server with real files (issue 31): the four files and their fields,
 * owner-only permissions, a reader in another thread that never reads a partial document while a
 * thousand clients register, the last write after the last change and on close, and the directory
 * problems: refused at creation, logged (once) while running.
 */
import { chmodSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import {
  TestClient,
  descriptor,
  endpoint,
  prompt,
  recordingLogger,
  removeScratch,
  scratchDir,
  skill,
  stopAll,
  until,
  type RecordingLogger,
} from '@mdp/test-kit';
import { createMdpServer, StateStoreDirError } from '../src/index.js';
import { dirProblem } from '../src/state-store/files.js';
import { registeredClient, registeredLoopClient, startServer } from './harness.js';

afterEach(async () => {
  await stopAll();
  removeScratch();
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const FILES = ['clients.json', 'routes.json', 'services.json', 'snapshot.json'];

// biome-ignore lint/suspicious/noExplicitAny: the tests read fields of files they wrote.
const read = (dir: string, name: string): any => JSON.parse(readFileSync(join(dir, name), 'utf8'));

/** A server with a state store in a scratch directory, its log recorded. */
async function storeServer(store: { minIntervalMs?: number; retryMs?: number } = {}, extra: Parameters<typeof startServer>[0] = {}) {
  const dir = join(scratchDir('mdp-store-'), 'store');
  const log = recordingLogger();
  const t = await startServer({ logger: log.logger, stateStore: { dir, ...store }, ...extra });
  return { t, dir, log };
}

/** Resolves once a write shows `check` true in the files (checked after each write the server logs). */
async function written(log: RecordingLogger, check: () => boolean): Promise<void> {
  const ok = (): true | undefined => {
    try {
      return check() || undefined;
    } catch {
      return undefined;
    }
  };
  await until((change) => log.lines.subscribe(change), ok);
}

describe('the state store', () => {
  it('writes the four documented files, owner-only, and rewrites them as clients come and go', async () => {
    const { t, dir, log } = await storeServer();
    // Made at creation, written before listen() resolves.
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir).sort()).toEqual(FILES);
    for (const name of FILES) expect(statSync(join(dir, name)).mode & 0o777, name).toBe(0o600);
    expect(read(dir, 'clients.json')).toEqual([]);
    expect(read(dir, 'routes.json')).toEqual([]);

    const services = read(dir, 'services.json');
    expect(services).toEqual({
      status: 'listening',
      secure: false,
      endpoints: {
        http: t.http,
        ws: t.ws,
        httpLoop: `${t.http}/mdp/http-loop`,
        auth: `${t.http}/mdp/auth`,
        meta: `${t.http}/mdp/meta`,
        cluster: `${t.ws}/mdp/cluster`,
      },
      skillRoutes: { direct: `${t.http}/skills/{clientId}/{path}`, nested: `${t.http}/{clientId}/skills/{path}` },
      hostApi: { clients: `${t.http}/mdp/clients`, paths: `${t.http}/mdp/paths`, call: `${t.http}/mdp/call`, callMany: `${t.http}/mdp/call-many` },
      mcp: `${t.http}/mcp`,
      guide: `${t.http}/SKILL.md`,
      inspector: `${t.http}/mdp/inspector`,
      probes: { healthz: `${t.http}/healthz`, readyz: `${t.http}/readyz`, metrics: `${t.http}/metrics` },
      upstreamProxy: null,
    });

    const ws = await registeredClient(
      t,
      descriptor(
        'app',
        [endpoint('/page/click', 'POST', { description: 'Click' }), skill('/docs/skill.md', { contentType: 'text/plain' }), prompt('/review/prompt.md')],
        { version: '1.2.0', platform: 'web' },
      ),
    );
    const loop = await registeredLoopClient(t, descriptor('loop', [endpoint('/status')]));
    await written(log, () => read(dir, 'snapshot.json').counts.clients === 2);

    const snapshot = read(dir, 'snapshot.json');
    expect(snapshot).toEqual({
      scope: 'node-local',
      format: 1,
      generation: expect.any(Number),
      updatedAt: expect.stringMatching(ISO),
      status: 'running',
      server: {
        serverId: `127.0.0.1:${t.port}`,
        clusterId: 'mdp',
        clusterMode: 'standalone',
        protocolVersion: '2.0.0',
        pid: process.pid,
        cwd: process.cwd(),
        storeDir: dir,
        startedAt: expect.stringMatching(ISO),
        url: t.http,
      },
      cluster: expect.objectContaining({ role: 'leader', term: 0, leaderId: `127.0.0.1:${t.port}`, knownMemberCount: 1 }),
      counts: { clients: 2, mirroredClients: 0, paths: 4, pathsByType: { endpoint: 2, prompt: 1, skill: 1 }, clientsByTransport: { ws: 1, 'http-loop': 1 } },
    });
    expect(snapshot.generation).toBeGreaterThan(1);

    expect(read(dir, 'clients.json')).toEqual([
      {
        id: 'app',
        name: 'Client app',
        version: '1.2.0',
        platform: 'web',
        connectedAt: expect.stringMatching(ISO),
        lastSeenAt: expect.stringMatching(ISO),
        connection: { mode: 'ws', secure: false, authSource: 'none' },
        paths: 3,
      },
      expect.objectContaining({ id: 'loop', name: 'Client loop', connection: { mode: 'http-loop', secure: false, authSource: 'none' }, paths: 1 }),
    ]);
    expect(read(dir, 'routes.json')).toEqual([
      { clientId: 'app', clientName: 'Client app', type: 'endpoint', method: 'POST', path: '/page/click', description: 'Click' },
      { clientId: 'app', clientName: 'Client app', type: 'skill', method: 'GET', path: '/docs/skill.md', contentType: 'text/plain' },
      { clientId: 'app', clientName: 'Client app', type: 'prompt', method: 'GET', path: '/review/prompt.md' },
      { clientId: 'loop', clientName: 'Client loop', type: 'endpoint', method: 'GET', path: '/status' },
    ]);
    // One entry per line.
    expect(readFileSync(join(dir, 'routes.json'), 'utf8').split('\n')).toHaveLength(4 + 3);

    // A catalog update and a client leaving are written too.
    ws.send({ type: 'updateClientCatalog', clientId: 'app', paths: [skill('/docs/skill.md')] });
    await written(log, () => read(dir, 'routes.json').length === 2);
    await loop.close();
    await written(log, () => read(dir, 'clients.json').length === 1);
    expect(read(dir, 'snapshot.json').counts).toMatchObject({ clients: 1, paths: 1 });

    // Closing writes once more: the clients it held, marked stopped. No temporary file is left.
    await t.server.close();
    expect(read(dir, 'snapshot.json')).toMatchObject({ status: 'stopped', counts: { clients: 1 } });
    expect(read(dir, 'services.json').status).toBe('stopped');
    expect(read(dir, 'clients.json').map((c: { id: string }) => c.id)).toEqual(['app']);
    expect(readdirSync(dir).sort()).toEqual(FILES);
  });

  it('a reader polling the files never reads a partial document while 1,000 clients register', async () => {
    // No interval: writes follow each other as fast as they can, the harshest case for a reader.
    const { t, dir, log } = await storeServer({ minIntervalMs: 0 }, { maxCatalogUpdatesPerMinute: 100_000 });
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const reader = new Worker(READER, { eval: true, workerData: { dir, files: FILES, stop } });
    // The reader says each new generation it reads, then its report.
    let seen = 0;
    const report = new Promise<ReaderReport>((resolve, reject) => {
      reader.on('message', (message: { generation?: number; report?: ReaderReport }) => {
        if (message.generation !== undefined) seen = Math.max(seen, message.generation);
        if (message.report) resolve(message.report);
      });
      reader.once('error', reject);
    });
    const readerSees = (generation: number) =>
      until(
        (change) => {
          reader.on('message', change);
          return () => reader.off('message', change);
        },
        () => seen >= generation || undefined,
      );

    let registered = 0;
    const unsubscribe = t.server.router.onClientEvent((event) => {
      if (event.type === 'registered') registered++;
    });
    // 20 sessions, 50 rounds of one registration each (each replaces the session's previous client);
    // the next round once this one is registered and a write has ended since it began: the files
    // change under the reader all along.
    const isWrite = (r: { event: string }): boolean => r.event === 'state_store.written';
    const clients = await Promise.all(Array.from({ length: 20 }, () => TestClient.connect(t.ws)));
    for (let round = 0; round < 50; round++) {
      const target = registered + clients.length;
      const writes = log.records.filter(isWrite).length;
      const done = until(
        (change) => t.server.router.onClientEvent(change),
        () => registered >= target || undefined,
      );
      clients.forEach((client, c) => {
        client.send({ type: 'registerClient', client: descriptor(`c${c}-${round}`, [skill('/docs/skill.md'), endpoint(`/run/${round}`)]) });
      });
      await done;
      const latest = (await log.lines.count(writes + 1, isWrite)).at(-1)!;
      await readerSees(Number(latest.generation));
    }
    unsubscribe();
    expect(registered).toBe(1000);
    // The last write follows the last change: the files end with the last client of each session.
    const last = clients.map((_, c) => `c${c}-49`).sort();
    const ids = (): string[] =>
      read(dir, 'clients.json')
        .map((client: { id: string }) => client.id)
        .sort();
    await written(log, () => JSON.stringify(ids()) === JSON.stringify(last));

    Atomics.store(stop, 0, 1);
    const result = await report;
    await reader.terminate();
    expect(result.bad).toEqual([]);
    // It read each round's files while the next ones were being written.
    expect(result.generations).toBeGreaterThanOrEqual(50);
  });

  it('refuses a directory it cannot use when the server is created, naming the file in the way', () => {
    const base = scratchDir('mdp-store-');
    const file = join(base, 'file');
    writeFileSync(file, 'x');
    for (const dir of [file, join(file, 'store')]) {
      expect(() => createMdpServer({ port: 0, logLevel: 'silent', stateStore: { dir } })).toThrow(StateStoreDirError);
      expect(() => createMdpServer({ port: 0, logLevel: 'silent', stateStore: { dir } })).toThrow(
        `cannot use ${dir} as the state store directory: ${file} is a file, not a directory`,
      );
    }
    expect(() => createMdpServer({ port: 0, logLevel: 'silent', stateStore: { dir: join(base, 'ok'), minIntervalMs: -1 } })).toThrow(/minIntervalMs must be/);
  });

  it.skipIf(process.getuid?.() === 0)('refuses a directory it may not write in (not as root, who may)', () => {
    const base = scratchDir('mdp-store-');
    chmodSync(base, 0o500);
    try {
      expect(() => createMdpServer({ port: 0, logLevel: 'silent', stateStore: { dir: join(base, 'store') } })).toThrow(/permission denied/);
    } finally {
      chmodSync(base, 0o700);
    }
  });

  it('says what is wrong in words', () => {
    expect(dirProblem(Object.assign(new Error('x'), { code: 'EACCES', path: '/srv/x' }), '/srv/x/store')).toBe('permission denied (/srv/x)');
    expect(dirProblem(Object.assign(new Error('x'), { code: 'EROFS', path: '/ro' }), '/ro/store')).toBe('read-only file system (/ro)');
  });

  it('a directory that breaks while running is logged once, the server goes on, and the files come back', async () => {
    const { t, dir, log } = await storeServer({ retryMs: 20 });
    rmSync(dir, { recursive: true });
    writeFileSync(dir, 'in the way');
    const failed = log.next('state_store.write_failed');
    await registeredClient(t, descriptor('app'));
    expect(await failed).toMatchObject({ level: 'error', dir });
    // Retried without a change, each failure a debug line only.
    await log.lines.count(3, (r) => r.event === 'state_store.write_failed');
    expect(log.records.filter((r) => r.event === 'state_store.write_failed' && r.level === 'error')).toHaveLength(1);
    expect((await fetch(`${t.http}/healthz`)).status).toBe(200);

    rmSync(dir);
    await log.seen('state_store.write_recovered');
    expect(read(dir, 'clients.json').map((c: { id: string }) => c.id)).toEqual(['app']);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('is off unless asked for; a relative directory is taken from the current directory', async () => {
    const base = scratchDir('mdp-store-');
    const cwd = process.cwd();
    process.chdir(base);
    try {
      await startServer();
      expect(readdirSync(base)).toEqual([]);
      await startServer({ stateStore: {} });
    } finally {
      process.chdir(cwd);
    }
    expect(readdirSync(join(base, '.mdp', 'store')).sort()).toEqual(FILES);
    expect(statSync(join(base, '.mdp')).mode & 0o777).toBe(0o700);
  });
});

interface ReaderReport {
  readonly reads: number;
  readonly generations: number;
  readonly bad: ReadonlyArray<{ name: string; error: string; length: number }>;
}

/** The reader thread: reads and parses every file in a loop until told to stop, then reports. */
const READER = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { dir, files, stop } = workerData;
let reads = 0;
const generations = new Set();
const bad = [];
while (Atomics.load(stop, 0) === 0) {
  for (const name of files) {
    let text = '';
    try {
      text = readFileSync(join(dir, name), 'utf8');
      const value = JSON.parse(text);
      if (name === 'snapshot.json' && !generations.has(value.generation)) {
        generations.add(value.generation);
        parentPort.postMessage({ generation: value.generation });
      }
      reads++;
    } catch (error) {
      if (bad.length < 5) bad.push({ name, error: String(error && error.message), length: text.length });
    }
  }
}
parentPort.postMessage({ report: { reads, generations: generations.size, bad } });
`;
