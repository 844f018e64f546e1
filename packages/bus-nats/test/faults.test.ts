/**
 * Faults on a real nats-server: a node process killed with SIGKILL (its clients leave every view
 * within the TTL; one that reconnects elsewhere is found there at once), and the NATS server
 * stopped and started again (calls fail fast with `not_ready` meanwhile, then the fleet recovers by
 * itself and re-announces).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { recordingLogger } from '@mdp/test-kit';
import { startNode, type TestNode } from './fleet.js';
import { NatsServer, natsServerAvailable, warnIfNoNatsServer } from './nats-server.js';

warnIfNoNatsServer('faults.test');

const NODE_PROCESS = fileURLToPath(new URL('./fixtures/node-process.mjs', import.meta.url));
const DIST = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** Start a node in its own process; resolves once it printed "ready". */
async function spawnNode(url: string, prefix: string, nodeId: string, clients: string[]): Promise<ChildProcess> {
  if (!existsSync(DIST)) throw new Error(`${DIST} is missing: run \`pnpm build\` first (the crash test runs the built package in a child process)`);
  const child = spawn(process.execPath, [NODE_PROCESS, url, prefix, nodeId, ...clients], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('ready\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`node process exited with ${code} before it was ready`)));
  });
  return child;
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe.skipIf(!natsServerAvailable())('fleet faults on a real nats-server', () => {
  let server: NatsServer;
  const nodes: TestNode[] = [];
  const children: ChildProcess[] = [];
  let count = 0;
  const prefix = (): string => `f${process.pid}x${count++}`;

  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterEach(async () => {
    await Promise.all(children.splice(0).map(killed));
    if (!server.running) await server.start();
    await Promise.all(nodes.splice(0).map((node) => node.close()));
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('a node killed with SIGKILL: its clients leave every view within the TTL, a call to them fails at once', async () => {
    const p = prefix();
    const [b, c] = await Promise.all([startNode(server.url, 'node-b', { prefix: p }), startNode(server.url, 'node-c', { prefix: p })]);
    nodes.push(b, c);
    const a = await spawnNode(server.url, p, 'node-a', ['c1', 'c2']);
    children.push(a);
    await Promise.all([b.sees('c1', 'node-a'), c.sees('c2', 'node-a')]);
    expect(await b.bus.call('c1', { method: 'GET', path: '/x' })).toEqual({ ok: true, data: 'node-a:c1:/x' });
    await killed(a);
    // Before the TTL runs out the directory still names node-a, but nobody answers there.
    const during = await b.bus.call('c1', { method: 'GET', path: '/x' }, { timeoutMs: 60_000 });
    expect(during.ok).toBe(false);
    expect(during.ok ? undefined : during.error.code).toMatch(/^(transport_error|not_found)$/);
    // Within one TTL (2 s here) both are gone from both views; each view says so by a change event.
    await Promise.all([b.sees('c1', undefined), b.sees('c2', undefined), c.sees('c1', undefined), c.sees('c2', undefined)]);
    await b.statuses.seen((s) => s.type === 'nodeDown' && s.node === 'node-a');
    expect(b.bus.metrics().nodes).toBe(1);
  });

  it('a node killed during a call: the call fails with transport_error when the node’s TTL runs out, not at its own time-out', async () => {
    const p = prefix();
    const b = await startNode(server.url, 'node-b', { prefix: p });
    nodes.push(b);
    const a = await spawnNode(server.url, p, 'node-a', ['hangs']);
    children.push(a);
    await b.sees('hangs', 'node-a');
    const call = b.bus.call('hangs', { method: 'GET', path: '/x' }, { timeoutMs: 600_000 });
    await killed(a);
    expect(await call).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error', message: expect.stringContaining('left the fleet') } });
  });

  it('a client that reconnects to another node is found there at once, before its dead node\u2019s TTL', async () => {
    const p = prefix();
    const [b, c] = await Promise.all([
      startNode(server.url, 'node-b', { prefix: p, ttlMs: 60_000 }),
      startNode(server.url, 'node-c', { prefix: p, ttlMs: 60_000 }),
    ]);
    nodes.push(b, c);
    const a = await spawnNode(server.url, p, 'node-a', ['moves']);
    children.push(a);
    await c.sees('moves', 'node-a');
    await killed(a);
    b.add('moves', () => ({ ok: true, data: 'on b' }));
    // node-a's heartbeat has a 2 s TTL; node-b's write is seen at once, whatever is left of it.
    await c.sees('moves', 'node-b');
    expect(await c.bus.call('moves', { method: 'GET', path: '/x' })).toEqual({ ok: true, data: 'on b' });
  });

  it('a node paused past its TTL and swept comes back by itself: it writes its keys again and is seen again', async () => {
    const p = prefix();
    const log = recordingLogger();
    const b = await startNode(server.url, 'node-b', { prefix: p, logger: log.logger });
    nodes.push(b);
    const a = await spawnNode(server.url, p, 'node-a', ['paused-1', 'paused-2']);
    children.push(a);
    await b.sees('paused-2', 'node-a');
    const swept = Promise.all([log.next('bus.swept', { clientId: 'paused-1' }), log.next('bus.swept', { clientId: 'paused-2' })]);
    a.kill('SIGSTOP');
    // node-b takes it for dead after one TTL and, as the live node with the smallest id, deletes its
    // keys one TTL later.
    await b.sees('paused-1', undefined);
    await swept;
    a.kill('SIGCONT');
    await Promise.all([b.sees('paused-1', 'node-a'), b.sees('paused-2', 'node-a')]);
    expect(await b.bus.call('paused-1', { method: 'GET', path: '/x' })).toEqual({ ok: true, data: 'node-a:paused-1:/x' });
  });

  it('NATS stopped: calls fail fast with not_ready and a retry hint; restarted: the fleet recovers by itself', async () => {
    const p = prefix();
    const [a, b] = await Promise.all([startNode(server.url, 'node-a', { prefix: p }), startNode(server.url, 'node-b', { prefix: p })]);
    nodes.push(a, b);
    a.add('c1', () => ({ ok: true, data: 'a' }));
    await b.sees('c1', 'node-a');
    const down = Promise.all([a.statuses.next((s) => s.type === 'disconnected'), b.statuses.next((s) => s.type === 'disconnected')]);
    await server.stop();
    await down;
    expect(b.bus.ready).toBe(false);
    expect(b.bus.metrics().connected).toBe(false);
    const refused = await b.bus.call('c1', { method: 'GET', path: '/x' }, { timeoutMs: 60_000 });
    expect(refused).toMatchObject({ ok: false, source: 'server', error: { code: 'not_ready', details: { retryAfterMs: expect.any(Number) } } });
    expect(await b.bus.relayToSession('s1', Buffer.from('x'))).toMatchObject({ ok: false, reason: 'not_ready' });
    // A client that registers while the bus is down is announced when it is back.
    a.add('c2', () => ({ ok: true, data: 'a2' }));
    const back = Promise.all([a.statuses.next((s) => s.type === 'ready'), b.statuses.next((s) => s.type === 'ready')]);
    await server.start();
    await back;
    await b.sees('c2', 'node-a');
    expect(await b.bus.call('c1', { method: 'GET', path: '/x' })).toEqual({ ok: true, data: 'a' });
    expect(await b.bus.call('c2', { method: 'GET', path: '/x' })).toEqual({ ok: true, data: 'a2' });
    expect(b.bus.metrics().reconnects).toBeGreaterThanOrEqual(1);
  });

  it('NATS down for longer than the TTL: after it is back every node sees every client again', async () => {
    const p = prefix();
    const [a, b] = await Promise.all([startNode(server.url, 'node-a', { prefix: p }), startNode(server.url, 'node-b', { prefix: p })]);
    nodes.push(a, b);
    a.add('c1');
    b.add('c2');
    await Promise.all([b.sees('c1', 'node-a'), a.sees('c2', 'node-b')]);
    const down = Promise.all([a.statuses.next((s) => s.type === 'disconnected'), b.statuses.next((s) => s.type === 'disconnected')]);
    await server.kill();
    await down;
    // Each node's view of the other lapses after one TTL without heartbeats.
    await Promise.all([b.sees('c1', undefined), a.sees('c2', undefined)]);
    const readyAgain = b.statuses.next((s) => s.type === 'ready');
    await server.start();
    await Promise.all([b.sees('c1', 'node-a'), a.sees('c2', 'node-b'), readyAgain]);
    expect(b.bus.remoteClients().map((r) => r.clientId)).toEqual(['c1']);
  });
});
