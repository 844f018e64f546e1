/**
 * Nodes of one fleet on a real nats-server: the directory, calls, relays, hostile ids, large
 * messages, duplicate ids. Faults (dead nodes, a NATS restart) are in faults.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CallCancel, systemClock, type Clock } from '@mdp/core';
import { Inbox } from '@mdp/test-kit';
import { MAX_FLEET_ID_BYTES, announcementProblem, idToken } from '../src/index.js';
import { echo, startNode, type TestNode } from './fleet.js';
import { NatsServer, natsServerAvailable, warnIfNoNatsServer } from './nats-server.js';

warnIfNoNatsServer('bus.test');

describe.skipIf(!natsServerAvailable())('a fleet on a real nats-server', () => {
  let server: NatsServer;
  const nodes: TestNode[] = [];
  let prefixCount = 0;
  /** Each test gets its own fleet prefix, so tests share the server and nothing else. */
  const fleet = async (...ids: string[]): Promise<TestNode[]> => {
    const prefix = `t${process.pid}x${prefixCount++}`;
    const started = await Promise.all(ids.map((id) => startNode(server.url, id, { prefix })));
    nodes.push(...started);
    return started;
  };

  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((node) => node.close()));
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('a client announced on one node is seen and called on another', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('c1');
    await b.sees('c1', 'node-a');
    expect(b.bus.resolve('c1')).toMatchObject({ clientId: 'c1', node: 'node-a', transport: 'websocket' });
    expect(a.bus.resolve('c1')).toBeUndefined(); // its own clients are not remote
    const outcome = await b.bus.call('c1', {
      method: 'POST',
      path: '/x',
      body: { n: 1 },
      query: { q: 'v' },
      headers: { 'x-h': '1' },
      auth: { scheme: 'Bearer', token: 't' },
    });
    expect(outcome).toEqual({ ok: true, data: { path: '/x', body: { n: 1 }, query: { q: 'v' } } });
    const seen = a.calls.items[0];
    expect(seen?.call).toEqual({
      method: 'POST',
      path: '/x',
      body: { n: 1 },
      query: { q: 'v' },
      headers: { 'x-h': '1' },
      auth: { scheme: 'Bearer', token: 't' },
    });
    expect(b.bus.cachedDescriptor('c1')).toBeUndefined();
    const descriptor = await b.bus.descriptor('c1');
    expect(descriptor).toEqual(a.clients.get('c1')?.descriptor);
    // Fetched once, it is at hand without a request until the client's catalog changes.
    expect(b.bus.cachedDescriptor('c1')).toEqual(descriptor);
    expect(b.bus.cachedDescriptor('nobody')).toBeUndefined();
  });

  it('a withdrawn client leaves every view at once', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('c1');
    await b.sees('c1', 'node-a');
    a.remove('c1');
    await b.sees('c1', undefined);
    const outcome = await b.bus.call('c1', { method: 'GET', path: '/x' });
    expect(outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });
  });

  it('a client error and a client time-out come back as they would locally', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('fails', () => ({ ok: false, source: 'client', error: { code: 'boom', message: 'it broke', details: { x: 1 } } }));
    a.add('slow', () => ({ ok: false, source: 'server', error: { code: 'timeout', message: 'Client did not answer within 50 ms' } }));
    await b.sees('slow', 'node-a');
    expect(await b.bus.call('fails', { method: 'GET', path: '/x' })).toEqual({
      ok: false,
      source: 'client',
      error: { code: 'boom', message: 'it broke', details: { x: 1 } },
    });
    expect(await b.bus.call('slow', { method: 'GET', path: '/x' }, { timeoutMs: 50 })).toMatchObject({ ok: false, error: { code: 'timeout' } });
  });

  it('a call whose node never answers ends with timeout, not a hang', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('mute', () => new Promise(() => undefined));
    await b.sees('mute', 'node-a');
    // The holder's handler never answers: the caller's own time-out (call time-out + grace) ends it.
    const outcome = await b.bus.call('mute', { method: 'GET', path: '/x' }, { timeoutMs: 100 });
    expect(outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'timeout' } });
  });

  it('a caller that goes away cancels the call on the holding node', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    const aborted = new Inbox<string>();
    a.add(
      'waits',
      (_call, signal) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => {
            aborted.push('aborted');
            resolve({ ok: false, source: 'server', error: { code: 'transport_error', message: 'cancelled' } });
          }),
        ),
    );
    await b.sees('waits', 'node-a');
    const controller = new AbortController();
    const call = b.bus.call('waits', { method: 'GET', path: '/x' }, { signal: controller.signal });
    await a.calls.seen();
    controller.abort();
    expect(await call).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    await aborted.seen();
  });

  it('calls made in one turn go out together, each answered as its own; one cancelled before it went out never arrives', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('app');
    await b.sees('app', 'node-a');
    const calls = Array.from({ length: 40 }, (_, i) => b.bus.call('app', { method: 'POST', path: `/p${i}`, body: i }));
    // A CallCancel, as core passes: aborted in the same turn, before the wire's outbox went out.
    const cancel = new CallCancel();
    const cancelled = b.bus.call('app', { method: 'POST', path: '/cancelled' }, { signal: cancel });
    cancel.abort();
    const outcomes = await Promise.all(calls);
    expect(outcomes).toEqual(calls.map((_, i) => ({ ok: true, data: { path: `/p${i}`, body: i, query: null } })));
    expect(await cancelled).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    // One more call after the batch: by the time it is answered, anything sent before it has arrived.
    expect(await b.bus.call('app', { method: 'GET', path: '/last' })).toMatchObject({ ok: true });
    expect(a.calls.items.map((item) => item.call.path)).toEqual([...calls.map((_, i) => `/p${i}`), '/last']);
  });

  it('messages over max_payload (1 MiB and more) go in parts both ways', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    const big = 'x'.repeat(1024 * 1024);
    a.add('big', (call) => ({ ok: true, data: `${String(call.body).length}:${big}` }));
    await b.sees('big', 'node-a');
    expect(b.bus.metrics().serverMaxPayload).toBe(1024 * 1024);
    const outcome = await b.bus.call('big', { method: 'POST', path: '/x', body: big });
    expect(outcome).toEqual({ ok: true, data: `${big.length}:${big}` });
  });

  it('a message over maxMessageBytes is refused before it is sent', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('c1');
    await b.sees('c1', 'node-a');
    const outcome = await b.bus.call('c1', { method: 'POST', path: '/x', body: 'y'.repeat(1024 * 1024 + 65 * 1024) });
    expect(outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'bad_request' } });
    expect(a.calls.items).toHaveLength(0);
  });

  it('hostile ids: each reaches only its own client, whatever it holds', async () => {
    const [a, b] = (await fleet('node.a *>', 'node-b')) as [TestNode, TestNode];
    const ids = [
      'a.b',
      'a',
      '*',
      '>',
      'a.*',
      'a.>',
      'with space',
      'Case',
      'case',
      'CASE',
      '日本語.クライアント',
      '\uD800',
      '\uFFFD',
      'x'.repeat(500),
      `${'x'.repeat(499)}y`,
      '..',
      '.',
    ];
    for (const id of ids) a.add(id, () => ({ ok: true, data: id }));
    for (const id of ids) await b.sees(id, 'node.a *>');
    for (const id of ids) {
      expect(await b.bus.call(id, { method: 'GET', path: '/who' })).toEqual({ ok: true, data: id });
    }
    expect(new Set(ids.map(idToken)).size).toBe(ids.length);
  });

  it('an id or principal too long to announce is refused with bad_request before anything is written', async () => {
    const [a] = (await fleet('node-a')) as [TestNode];
    expect(() => a.add('x'.repeat(MAX_FLEET_ID_BYTES + 1))).toThrow(expect.objectContaining({ code: 'bad_request' }));
    expect(() => a.add('ok', echo, 'p'.repeat(MAX_FLEET_ID_BYTES + 1))).toThrow(/principal/);
    expect(announcementProblem({ descriptor: { id: '日'.repeat(1366), name: '', paths: [] }, principal: undefined })).toMatch(/longer than 4096 bytes/);
    expect(announcementProblem({ descriptor: { id: 'x'.repeat(MAX_FLEET_ID_BYTES), name: '', paths: [] }, principal: undefined })).toBeUndefined();
  });

  it('a request whose body names another client than its subject is refused', async () => {
    // What a node would do to make one id answer for another: the body names `victim`, the subject `attacker`.
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('victim');
    a.add('attacker');
    await b.sees('attacker', 'node-a');
    const { connect } = await import('@nats-io/transport-node');
    const nc = await connect({ servers: server.url });
    try {
      const prefix = (b.bus as unknown as { names: { prefix: string } }).names.prefix;
      const subject = `${prefix}.n.${idToken('node-a')}.call.${idToken('attacker')}`;
      const reply = await nc.request(subject, JSON.stringify({ id: 'x', clientId: 'victim', timeoutMs: 1000, method: 'GET', path: '/x' }), { timeout: 2000 });
      expect(JSON.parse(reply.string())).toMatchObject({ ok: false, error: { code: 'bad_request' } });
      expect(a.calls.items).toHaveLength(0);
    } finally {
      await nc.close();
    }
  });

  it('the same id on two nodes: the newer registration holds it, the older is told to close', async () => {
    const [a, b, c] = (await fleet('node-a', 'node-b', 'node-c')) as [TestNode, TestNode, TestNode];
    a.add('dup', () => ({ ok: true, data: 'on a' }));
    await c.sees('dup', 'node-a');
    await b.sees('dup', 'node-a');
    b.add('dup', () => ({ ok: true, data: 'on b' }));
    const replaced = await a.replaced.seen();
    expect(replaced).toEqual({ clientId: 'dup', byNode: 'node-b' });
    await c.sees('dup', 'node-b');
    expect(await c.bus.call('dup', { method: 'GET', path: '/x' })).toEqual({ ok: true, data: 'on b' });
    expect(a.bus.resolve('dup')?.node).toBe('node-b');
    expect(b.replaced.items).toHaveLength(0);
  });

  it('a node that leaves fails its callers\u2019 pending calls at once', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('hangs', () => new Promise(() => undefined));
    await b.sees('hangs', 'node-a');
    const call = b.bus.call('hangs', { method: 'GET', path: '/x' }, { timeoutMs: 60_000 });
    await a.calls.seen();
    await a.close();
    expect(await call).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    await b.sees('hangs', undefined);
  });

  it('no responders: a call to a node that has no subscription fails at once with transport_error', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('c1');
    await b.sees('c1', 'node-a');
    // Cut node-a's subscription as a dying process would, before its heartbeat expires.
    const inside = a.bus as unknown as { nodeSub: { unsubscribe(): void }; nc: { flush(): Promise<void> } };
    inside.nodeSub.unsubscribe();
    await inside.nc.flush();
    const outcome = await b.bus.call('c1', { method: 'GET', path: '/x' }, { timeoutMs: 60_000 });
    expect(outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
  });

  it('relays: to a node, and to whichever node holds an HTTP loop session', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    const toNode = await b.bus.relayToNode('node-a', Buffer.from('hi'));
    expect(toNode.ok && Buffer.from(toNode.payload).toString()).toBe('node-a:hi');
    const release = await a.bus.holdSession('3f1c1b8e-1111-4222-8333-444455556666', async (payload) => Buffer.concat([Buffer.from('session:'), payload]));
    const held = await b.bus.relayToSession('3f1c1b8e-1111-4222-8333-444455556666', Buffer.from('poll'));
    expect(held.ok && Buffer.from(held.payload).toString()).toBe('session:poll');
    const big = Buffer.alloc(1024 * 1024 + 10, 7);
    const large = await b.bus.relayToSession('3f1c1b8e-1111-4222-8333-444455556666', big);
    expect(large.ok && large.payload.length).toBe(big.length + 'session:'.length);
    release();
    // The unsubscription reaches the server with the connection's next flush.
    await (a.bus as unknown as { nc: { flush(): Promise<void> } }).nc.flush();
    expect(await b.bus.relayToSession('3f1c1b8e-1111-4222-8333-444455556666', Buffer.from('poll'))).toMatchObject({ ok: false, reason: 'unknown' });
    expect(await b.bus.relayToSession('unknown-session', Buffer.from('poll'))).toMatchObject({ ok: false, reason: 'unknown' });
  });

  it('close() leaves no timer behind and is idempotent', async () => {
    const live = new Set<unknown>();
    const clock: Clock = {
      now: () => systemClock.now(),
      wallNow: () => systemClock.wallNow(),
      setTimeout: (fn, ms) => {
        const handle = systemClock.setTimeout(() => {
          live.delete(handle);
          fn();
        }, ms);
        live.add(handle);
        return handle;
      },
      clearTimeout: (handle) => {
        live.delete(handle);
        systemClock.clearTimeout(handle);
      },
    };
    const prefix = `t${process.pid}x${prefixCount++}`;
    const [a, b] = await Promise.all([startNode(server.url, 'node-a', { prefix, clock }), startNode(server.url, 'node-b', { prefix, clock })]);
    a.add('c1', () => new Promise(() => undefined));
    await b.sees('c1', 'node-a');
    const pending = b.bus.call('c1', { method: 'GET', path: '/x' }, { timeoutMs: 60_000 });
    await a.calls.seen();
    expect(live.size).toBeGreaterThan(0);
    await Promise.all([a.close(), b.close()]);
    await Promise.all([a.close(), b.close()]);
    expect(await pending).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    expect(live.size).toBe(0);
    expect(await b.bus.call('c1', { method: 'GET', path: '/x' })).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    await b.statuses.seen((s) => s.type === 'closed');
  });

  it('figures: requests, latency, directory size', async () => {
    const [a, b] = (await fleet('node-a', 'node-b')) as [TestNode, TestNode];
    a.add('c1', echo);
    a.add('c2', echo);
    await b.sees('c2', 'node-a');
    await b.bus.call('c1', { method: 'GET', path: '/x' });
    await b.bus.call('nobody', { method: 'GET', path: '/x' });
    const m = b.bus.metrics();
    expect(m).toMatchObject({ connected: true, ready: true, requestsSent: 2, requestsFailed: 1, remoteClients: 2, nodes: 1, reconnects: 0 });
    expect(m.latency.count).toBe(2);
    expect(a.bus.metrics().requestsServed).toBe(1);
  });
});
