/**
 * Bus mode on a real `nats-server` (SPEC §16): servers in this process, each a node of one fleet,
 * reach each other's clients by every way in, settle one id by the replacement rule and ownership
 * fleet-wide, say bus mode in /mdp/meta, /readyz and /metrics, and live through losing NATS. The
 * process-level fleet (SIGKILL, load balancer) is fleet.e2e.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { MetaDocumentSchema, type ClientDescriptor } from '@mdp/protocol';
import {
  LoopTestClient,
  NatsServer,
  TestClient,
  closedPort,
  type LoopFetch,
  descriptor,
  endpoint,
  natsServerAvailable,
  skill,
  recordingLogger,
  stopAll,
  until,
  warnIfNoNatsServer,
} from '@mdp/test-kit';
import { createMdpServer } from '../src/index.js';
import type { MdpServerOptions } from '../src/options.js';
import { registeredClient, registeredLoopClient, startServer, type TestServer } from './harness.js';

warnIfNoNatsServer('bus.e2e.test.ts');

let nats: NatsServer;
/** Each test its own fleet prefix: fleets on one NATS do not see each other. */
let fleet = 0;

beforeAll(async () => {
  if (natsServerAvailable()) nats = await NatsServer.start();
});

afterAll(async () => {
  await nats?.dispose();
});

afterEach(async () => {
  await stopAll();
  // A test that stopped NATS leaves it running for the next one.
  if (nats && !nats.running) await nats.start();
});

const BOUND = { timeoutMs: 15_000 };

/** `count` nodes of a fresh fleet on the test's NATS. */
async function nodes(count: number, options: MdpServerOptions = {}): Promise<TestServer[]> {
  fleet += 1;
  const started: TestServer[] = [];
  for (let i = 0; i < count; i++) {
    started.push(
      await startServer({
        serverId: `node-${String.fromCharCode(97 + i)}`,
        bus: { servers: [nats.url], prefix: `fleet${fleet}`, ttlMs: 1000, reconnectWaitMs: 100 },
        ...options,
      }),
    );
  }
  return started;
}

/** Resolves once `t` sees `clientId` (held here or on another node), or no longer does. */
function sees(t: TestServer, clientId: string, present = true): Promise<unknown> {
  return until(
    (change) => t.server.router.onClientChange(change),
    () => (t.server.router.locate(clientId) !== undefined) === present,
    { ...BOUND, what: `${t.server.info?.serverId} to ${present ? 'see' : 'lose'} ${clientId}` },
  );
}

/** Resolves once the bus of `t` is up (ready) or down. */
function busOf(t: TestServer, ready: boolean): Promise<unknown> {
  const bus = t.server.bus;
  if (!bus) throw new Error('no bus');
  return until(
    (change) => bus.onStatus(change),
    () => bus.ready === ready,
    { ...BOUND, what: `the bus ${ready ? 'up' : 'down'}` },
  );
}

function call(t: TestServer, body: unknown, path = '/mdp/call', headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

const DOCS: ClientDescriptor = descriptor('app', [skill('/docs/skill.md'), endpoint('/status'), endpoint('/items/:id', 'POST')]);

describe.skipIf(!natsServerAvailable())('a fleet of nodes on NATS', () => {
  it('lists, reads and calls a client of another node through every way in', async () => {
    const [a, b] = (await nodes(2)) as [TestServer, TestServer];
    const app = await registeredClient(a, DOCS);
    app.handler = (message) => (message.path === '/docs/skill.md' ? '# Docs' : { path: message.path, body: message.body ?? null });
    await sees(b, 'app');

    const listed = (await (await fetch(`${b.http}/mdp/clients`)).json()) as { clients: Array<Record<string, unknown>> };
    expect(listed.clients).toEqual([expect.objectContaining({ id: 'app', status: 'online', connection: { mode: 'ws', secure: false, authSource: 'none' } })]);
    const paths = (await (await fetch(`${b.http}/mdp/paths?clientId=app`)).json()) as { paths: Array<{ path: string }> };
    expect(paths.paths.map((p) => p.path)).toEqual(['/docs/skill.md', '/items/:id', '/status']);

    const read = await fetch(`${b.http}/skills/app/docs?x=1`, { headers: { 'x-trace': 't1' } });
    expect(read.status).toBe(200);
    expect(read.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(await read.text()).toBe('# Docs');
    expect(app.calls.at(-1)).toMatchObject({ path: '/docs/skill.md', query: { x: '1' }, headers: expect.objectContaining({ 'x-trace': 't1' }) });

    const called = await call(b, { clientId: 'app', method: 'POST', path: '/items/7', body: { n: 1 } });
    expect(await called.json()).toEqual({ ok: true, data: { path: '/items/7', body: { n: 1 } } });
    const many = await call(b, { method: 'GET', path: '/status' }, '/mdp/call-many');
    expect(await many.json()).toMatchObject({ results: [{ clientId: 'app', ok: true }] });

    // A catalog change reaches the other node's listings (and its change listeners: MCP, inspector).
    const changed = new Promise<void>((resolve) => {
      const off = b.server.router.onClientChange((id) => {
        if (id !== 'app') return;
        off();
        resolve();
      });
    });
    app.send({ type: 'updateClientCatalog', clientId: 'app', paths: [endpoint('/fresh')] });
    await changed;
    const fresh = (await (await fetch(`${b.http}/mdp/paths?clientId=app`)).json()) as { paths: Array<{ path: string }> };
    expect(fresh.paths.map((p) => p.path)).toEqual(['/fresh']);

    await app.close();
    await sees(b, 'app', false);
    const gone = await fetch(`${b.http}/skills/app/docs`);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toBe('');
  });

  it('gives an id to its newest registration fleet-wide: the older session closes with 4000', async () => {
    const [a, b] = (await nodes(2)) as [TestServer, TestServer];
    const first = await registeredClient(a, descriptor('twin', [endpoint('/who')]));
    first.handler = () => 'a';
    await sees(b, 'twin');
    const second = await registeredClient(b, descriptor('twin', [endpoint('/who')]));
    second.handler = () => 'b';
    expect(await first.closed).toEqual({ code: 4000, reason: 'Replaced by newer client session' });
    await until(
      (change) => a.server.router.onClientChange(change),
      () => a.server.router.locate('twin')?.node === 'node-b',
      BOUND,
    );
    expect(await (await call(a, { clientId: 'twin', method: 'GET', path: '/who' })).json()).toEqual({ ok: true, data: 'b' });
  });

  it("keeps an id its principal's fleet-wide under an auth policy (4403, 403)", async () => {
    const [a, b] = (await nodes(2, { authTokens: ['token-one', 'token-two'] })) as [TestServer, TestServer];
    const one = { authorization: 'Bearer token-one' };
    const two = { authorization: 'Bearer token-two' };
    await registeredClient(a, descriptor('owned', [endpoint('/x')]), one);
    await sees(b, 'owned');
    const thief = await TestClient.connect(b.ws, { headers: two });
    thief.send({ type: 'registerClient', client: descriptor('owned', [endpoint('/x')]) });
    expect((await thief.closed).code).toBe(4403);

    const connect = await fetch(`${b.http}/mdp/http-loop/connect`, { method: 'POST', headers: two, body: '{}' });
    const { sessionId } = (await connect.json()) as { sessionId: string };
    const sent = await fetch(`${b.http}/mdp/http-loop/send`, {
      method: 'POST',
      headers: { ...two, 'x-mdp-session-id': sessionId, 'content-type': 'application/json' },
      body: JSON.stringify({ message: { type: 'registerClient', client: descriptor('owned', [endpoint('/x')]) } }),
    });
    expect(sent.status).toBe(403);
    // Its owner may move it to the other node.
    const moved = await registeredClient(b, descriptor('owned', [endpoint('/x')]), one);
    expect(moved.wasOpened).toBe(true);
  });

  it('says bus mode in /mdp/meta (the seed schema holds), /readyz and /metrics', async () => {
    const [a, b] = (await nodes(2)) as [TestServer, TestServer];
    await registeredClient(a, descriptor('seen', [endpoint('/x')]));
    await sees(b, 'seen');
    const meta = (await (await fetch(`${b.http}/mdp/meta`)).json()) as Record<string, unknown>;
    expect(v.safeParse(MetaDocumentSchema, meta).success).toBe(true);
    expect(meta.fleet).toEqual({ bus: 'nats', prefix: `fleet${fleet}`, nodeId: 'node-b', connected: true, nodes: 1 });
    expect(meta.cluster).toMatchObject({ role: 'leader', leaderId: 'node-b', membershipFingerprint: `nats-bus:fleet${fleet}`, knownMemberCount: 2 });
    const ready = await fetch(`${b.http}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ready: true, bus: { connected: true, nodes: 1, remoteClients: 1 } });
    const text = await (await fetch(`${b.http}/metrics`)).text();
    expect(text).toMatch(/^mdp_bus_connected 1$/m);
    expect(text).toMatch(/^mdp_bus_remote_clients 1$/m);
    expect(text).toMatch(/^mdp_bus_nodes 1$/m);
    expect(text).toMatch(/^mdp_bus_request_duration_seconds_count \d+$/m);
  });

  it('losing NATS: remote calls 503 with Retry-After, local ones go on, /readyz says so; back, it recovers by itself', async () => {
    const [a, b] = (await nodes(2)) as [TestServer, TestServer];
    await registeredClient(a, descriptor('far', [endpoint('/x')]));
    (await registeredClient(b, descriptor('near', [endpoint('/x')]))).handler = () => 'near';
    await sees(b, 'far');
    const down = busOf(b, false);
    await nats.stop();
    await down;

    const remote = await call(b, { clientId: 'far', method: 'GET', path: '/x' });
    expect(remote.status).toBe(503);
    expect(Number(remote.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await remote.json()).toMatchObject({ error: { code: 'not_ready' } });
    const skillRead = await fetch(`${b.http}/skills/far/x`);
    expect(skillRead.status).toBe(503);
    expect(Number(skillRead.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await (await call(b, { clientId: 'near', method: 'GET', path: '/x' })).json()).toEqual({ ok: true, data: 'near' });
    const ready = await fetch(`${b.http}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ ready: false, reason: 'fleet bus (NATS) not connected' });

    const up = Promise.all([busOf(a, true), busOf(b, true)]);
    await nats.start();
    await up;
    await sees(b, 'far');
    expect(await (await call(b, { clientId: 'far', method: 'GET', path: '/x' })).json()).toEqual({ ok: true, data: 'ok' });
    expect((await fetch(`${b.http}/readyz`)).status).toBe(200);
  });

  it('on shutdown, drains the calls it sent to other nodes before it ends them', async () => {
    const logger = recordingLogger();
    const [a, b] = (await nodes(2, { drainTimeoutMs: 10_000, logger: logger.logger })) as [TestServer, TestServer];
    const slow = await registeredClient(a, descriptor('slow', [endpoint('/x')]));
    let answer: (data: string) => void = () => undefined;
    const called = new Promise<void>((arrived) => {
      slow.handler = () =>
        new Promise((resolve) => {
          answer = resolve;
          arrived();
        });
    });
    await sees(b, 'slow');
    const pending = call(b, { clientId: 'slow', method: 'GET', path: '/x' });
    await called;
    const draining = logger.next('server.draining');
    const closing = b.server.close();
    // Shutdown began with this call in flight: it is waited for, not ended.
    expect(await draining).toMatchObject({ pending: 1 });
    answer('late');
    expect(await (await pending).json()).toEqual({ ok: true, data: 'late' });
    await closing;
  });

  it('carries hostile client ids to their own client only', async () => {
    const [a, b] = (await nodes(2)) as [TestServer, TestServer];
    const ids = ['victim', 'victim.>', '*', '>', 'a.b c', 'with space', 'x.*.y'];
    for (const [i, id] of ids.entries()) {
      const client = await registeredClient(i % 2 === 0 ? a : b, descriptor(id, [endpoint('/who')]));
      client.handler = () => id;
    }
    for (const id of ids) await Promise.all([sees(a, id), sees(b, id)]);
    for (const id of ids) {
      for (const t of [a, b]) {
        expect(await (await call(t, { clientId: id, method: 'GET', path: '/who' })).json()).toEqual({ ok: true, data: id });
      }
    }
  });

  it('serves an HTTP loop client whose requests land on any node, round-robin, with the seed statuses', async () => {
    const [a, b] = (await nodes(2)) as [TestServer, TestServer];
    const landed: string[] = [];
    let next = 0;
    // A load balancer without stickiness: each request goes to the next node.
    const balanced: LoopFetch = (path, init) => {
      const t = [a, b][next++ % 2] as TestServer;
      landed.push(`${t.server.info?.serverId} ${path.replace(/\?.*/, '')}`);
      return fetch(`${t.http}/mdp/http-loop${path}`, init);
    };
    const loop = await LoopTestClient.register(balanced, descriptor('roaming', [endpoint('/x')]), { waitMs: 500 });
    loop.handler = () => 'roamed';
    await Promise.all([sees(a, 'roaming'), sees(b, 'roaming')]);
    for (const t of [a, b, a, b])
      expect(await (await call(t, { clientId: 'roaming', method: 'GET', path: '/x' })).json()).toEqual({ ok: true, data: 'roamed' });
    expect(landed.slice(0, 2)).toEqual(['node-a /connect', 'node-b /send']);
    expect(new Set(landed.filter((line) => line.endsWith('/poll')).map((line) => line.split(' ')[0]))).toEqual(new Set(['node-a', 'node-b']));
    // A session nobody holds: the seed's empty 404 (and 204 for disconnect) from any node.
    const unknown = await fetch(`${b.http}/mdp/http-loop/poll?sessionId=00000000-0000-4000-8000-000000000000&waitMs=0`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toBe('');
    await loop.close();
    await Promise.all([sees(a, 'roaming', false), sees(b, 'roaming', false)]);
  });

  it('takes HTTP loop clients of another node like websocket ones', async () => {
    const [a, b] = (await nodes(2)) as [TestServer, TestServer];
    const loop = await registeredLoopClient(a, descriptor('looper', [endpoint('/x')]));
    loop.handler = () => 'from the loop';
    await sees(b, 'looper');
    expect(await (await call(b, { clientId: 'looper', method: 'GET', path: '/x' })).json()).toEqual({ ok: true, data: 'from the loop' });
  });
});

describe('bus mode settings', () => {
  it('excludes the cluster discovery and election', () => {
    expect(() => createMdpServer({ bus: { servers: ['nats://127.0.0.1:4222'] }, cluster: { mode: 'auto' } })).toThrow(/bus mode excludes/);
    expect(() => createMdpServer({ bus: { servers: ['nats://127.0.0.1:4222'] }, cluster: { mode: 'standalone' } })).not.toThrow();
  });

  it('refuses to start when NATS cannot be reached, leaving nothing listening', async () => {
    const port = await closedPort();
    const server = createMdpServer({ host: '127.0.0.1', port: 0, logLevel: 'silent', bus: { servers: [`nats://127.0.0.1:${port}`], connectTimeoutMs: 500 } });
    await expect(server.listen()).rejects.toThrow(/cannot connect to NATS/);
    expect(server.info).toBeUndefined();
  });
});
