/** The host contract answered from the router (SPEC §12): listings, search, depth, calls, errors. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CallPathsRequest, PathDescriptor } from '@mdp/protocol';
import { MdpError, Router, createLocalHost, fanoutTargets, type HostApi } from '../src/index.js';
import { connectClient, endpoint, flush, manualClock, prompt, skill, type ManualClock } from './helpers.js';

let router: Router;
let host: HostApi;
let clock: ManualClock;

beforeEach(() => {
  clock = manualClock(Date.parse('2026-11-24T10:00:00Z'));
  router = new Router({ clock, invocationTimeoutMs: 1000 });
  host = createLocalHost(router);
});

afterEach(async () => {
  await router.close();
});

/** Answer the newest call of a connected client. */
function answer(
  transport: ReturnType<typeof connectClient>['transport'],
  session: ReturnType<typeof connectClient>['session'],
  data: unknown,
  ok = true,
): void {
  const call = transport.lastCall;
  session.handle(
    ok
      ? { type: 'callClientResult', requestId: call.requestId, ok: true, data }
      : { type: 'callClientResult', requestId: call.requestId, ok: false, error: data as { code: string; message: string } },
  );
}

describe('listClients', () => {
  it('lists descriptors with status, ISO times, connection and aliases', async () => {
    connectClient(router, 'app', [endpoint('/page/click', 'POST')], { kind: 'ws' });
    clock.advance(5000);
    const { clients } = await host.listClients();
    expect(clients).toEqual([
      {
        id: 'app',
        name: 'Client app',
        paths: [{ type: 'endpoint', path: '/page/click', method: 'POST' }],
        status: 'online',
        connectedAt: '2026-11-24T10:00:00.000Z',
        lastSeenAt: '2026-11-24T10:00:00.000Z',
        connection: { mode: 'ws', secure: false, authSource: 'none' },
        aliases: [],
      },
    ]);
  });

  it('searches id, name, description, paths, methods, descriptions and content types, ignoring case', async () => {
    connectClient(router, 'editor', [endpoint('/doc/save', 'PUT', { description: 'Save the Document' })]);
    connectClient(router, 'browser', [skill('/tabs/skill.md', { contentType: 'text/x-Tabs' })]);
    const ids = async (search: string) => (await host.listClients({ search })).clients.map((c) => c.id);
    expect(await ids('EDIT')).toEqual(['editor']);
    expect(await ids('document')).toEqual(['editor']);
    expect(await ids('put')).toEqual(['editor']);
    expect(await ids('x-tabs')).toEqual(['browser']);
    expect(await ids('/tabs')).toEqual(['browser']);
    // Listed by id.
    expect(await ids('client')).toEqual(['browser', 'editor']);
    expect(await ids('nothing like it')).toEqual([]);
    expect(await ids('  ')).toEqual(['browser', 'editor']);
  });
});

describe('listPaths', () => {
  const catalog = [
    skill('/docs/skill.md'),
    skill('/docs/review/skill.md'),
    skill('/docs/review/deep/skill.md', { description: 'Deep review notes' }),
    endpoint('/click', 'POST'),
    prompt('/ask.prompt.md'),
  ];

  it('lists depth 1 only without search or depth, with clientId and clientName, by path', async () => {
    connectClient(router, 'c', catalog);
    const { paths } = await host.listPaths();
    expect(paths).toEqual([
      { type: 'prompt', path: '/ask.prompt.md', clientId: 'c', clientName: 'Client c' },
      { type: 'endpoint', path: '/click', method: 'POST', clientId: 'c', clientName: 'Client c' },
      { type: 'skill', path: '/docs/skill.md', clientId: 'c', clientName: 'Client c' },
    ]);
  });

  it('lists up to the depth given, and every depth for a search unless a depth is given', async () => {
    connectClient(router, 'c', catalog);
    const paths = async (request: Parameters<HostApi['listPaths']>[0]) => (await host.listPaths(request)).paths.map((p) => p.path);
    expect(await paths({ depth: 2 })).toEqual(['/ask.prompt.md', '/click', '/docs/review/skill.md', '/docs/skill.md']);
    expect(await paths({ search: 'review' })).toEqual(['/docs/review/deep/skill.md', '/docs/review/skill.md']);
    expect(await paths({ search: 'review', depth: 2 })).toEqual(['/docs/review/skill.md']);
    expect(await paths({ search: 'deep review notes' })).toEqual(['/docs/review/deep/skill.md']);
  });

  it('filters by client, through an alias too, and refuses an unknown client with not_found', async () => {
    connectClient(router, 'one', [endpoint('/a')]);
    connectClient(router, 'S:1.two', [endpoint('/b')], {});
    expect((await host.listPaths({ clientId: 'one' })).paths.map((p) => p.path)).toEqual(['/a']);
    await expect(host.listPaths({ clientId: 'ghost' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(host.listPaths({ clientId: 'ghost' })).rejects.toBeInstanceOf(MdpError);
  });
});

describe('callPath', () => {
  it('calls the client and returns its data', async () => {
    const { session, transport } = connectClient(router, 'app', [endpoint('/page/click', 'POST')]);
    const result = host.callPath({ clientId: 'app', method: 'POST', path: '/page/click', body: { x: 1 }, query: { q: '1' } });
    expect(transport.lastCall).toMatchObject({ method: 'POST', path: '/page/click', body: { x: 1 }, query: { q: '1' } });
    answer(transport, session, { clicked: true });
    expect(await result).toEqual({ ok: true, data: { clicked: true } });
  });

  it('reports the client failing with source client, and server-side failures with source server', async () => {
    const { session, transport } = connectClient(router, 'app', [endpoint('/x')]);
    const failed = host.callPath({ clientId: 'app', method: 'GET', path: '/x' });
    answer(transport, session, { code: 'handler_error', message: 'boom' }, false);
    expect(await failed).toEqual({ ok: false, error: { code: 'handler_error', message: 'boom' }, source: 'client' });

    expect(await host.callPath({ clientId: 'app', method: 'GET', path: '/nope' })).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });
    expect(await host.callPath({ clientId: 'ghost', method: 'GET', path: '/x' })).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });

    const late = host.callPath({ clientId: 'app', method: 'GET', path: '/x' });
    await clock.advanceSettled(1000);
    expect(await late).toMatchObject({ ok: false, source: 'server', error: { code: 'timeout' } });
  });

  it('reaches a mirrored client by its bare id, and names the candidates when two could be meant', async () => {
    // In a cluster whose servers are A:1 and B:2.
    host = createLocalHost(router, { isServerId: (id) => id === 'A:1' || id === 'B:2' });
    const mirrored = (serverId: string) => ({ metadata: { mdpProxy: { serverId, clientId: 'hello' } } });
    const a = connectClient(router, 'A:1.hello', [endpoint('/hi')]);
    a.session.handle({ type: 'registerClient', client: { id: 'A:1.hello', name: 'hello', paths: [endpoint('/hi')], ...mirrored('A:1') } });
    const call = host.callPath({ clientId: 'hello', method: 'GET', path: '/hi' });
    answer(a.transport, a.session, 'hi');
    expect(await call).toEqual({ ok: true, data: 'hi' });

    const b = connectClient(router, 'B:2.hello', [endpoint('/hi')]);
    b.session.handle({ type: 'registerClient', client: { id: 'B:2.hello', name: 'hello', paths: [endpoint('/hi')], ...mirrored('B:2') } });
    expect(await host.callPath({ clientId: 'hello', method: 'GET', path: '/hi' })).toEqual({
      ok: false,
      source: 'server',
      error: { code: 'not_found', message: expect.stringContaining('several clients'), details: { candidates: ['A:1.hello', 'B:2.hello'] } },
    });
  });

  it('without server ids (no cluster), calls only the client an id names', async () => {
    const app = connectClient(router, 'app', [endpoint('/deploy', 'POST')]);
    const posing = connectClient(router, 'evil.deploy', [endpoint('/deploy', 'POST')]);
    posing.session.handle({
      type: 'registerClient',
      client: { id: 'x.deploy', name: 'x', paths: [endpoint('/deploy', 'POST')], metadata: { mdpProxy: { serverId: 'x', clientId: 'deploy' } } },
    });
    expect(await host.callPath({ clientId: 'com.acme.app', method: 'POST', path: '/deploy' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await host.callPath({ clientId: 'deploy', method: 'POST', path: '/deploy' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect([app.transport.calls.length, posing.transport.calls.length]).toEqual([0, 0]);
    expect((await host.listClients()).clients.map((c) => c.aliases)).toEqual([[], []]);
  });

  it('ends at once, and is never answered later, when the caller aborts', async () => {
    const { session, transport } = connectClient(router, 'app', [endpoint('/x')]);
    const controller = new AbortController();
    const call = host.callPath({ clientId: 'app', method: 'GET', path: '/x' }, { signal: controller.signal });
    expect(router.pendingCount).toBe(1);
    controller.abort();
    expect(router.pendingCount).toBe(0);
    expect(await call).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    answer(transport, session, 'too late');
    await flush();

    const aborted = AbortSignal.abort();
    const before = transport.calls.length;
    expect(await host.callPath({ clientId: 'app', method: 'GET', path: '/x' }, { signal: aborted })).toMatchObject({ ok: false });
    expect(transport.calls.length).toBe(before);
  });
});

describe('a client that cannot be written as JSON', () => {
  it('is left out of the listings instead of making them fail for everyone', async () => {
    connectClient(router, 'good', [endpoint('/x')]);
    // Nested far deeper than a validated message may be (the transports refuse it): JSON.stringify overflows on it.
    const deep = JSON.parse(`${'['.repeat(20_000)}${']'.repeat(20_000)}`) as unknown;
    connectClient(router, 'deep', [{ ...endpoint('/y'), inputSchema: { a: deep } } as PathDescriptor]);
    const clients = await host.listClients();
    expect(clients.clients.map((c) => c.id)).toEqual(['good']);
    expect(() => JSON.stringify(clients)).not.toThrow();
    const paths = await host.listPaths({ depth: 5 });
    expect(paths.paths.map((p) => p.clientId)).toEqual(['good']);
    expect(() => JSON.stringify(paths)).not.toThrow();
  });
});

describe('callPaths', () => {
  it('calls every client that has the path, in parallel, when no ids are given', async () => {
    const a = connectClient(router, 'a', [endpoint('/status')]);
    const b = connectClient(router, 'b', [endpoint('/status')]);
    connectClient(router, 'c', [endpoint('/other')]);
    const result = host.callPaths({ method: 'GET', path: '/status' });
    answer(b.transport, b.session, 'b ok');
    answer(a.transport, a.session, { code: 'handler_error', message: 'a down' }, false);
    expect(await result).toEqual({
      results: [
        { clientId: 'a', ok: false, error: { code: 'handler_error', message: 'a down' }, source: 'client' },
        { clientId: 'b', ok: true, data: 'b ok' },
      ],
    });
  });

  it('tells onResult each outcome as it comes, with the number of clients; a listener that throws changes nothing', async () => {
    const a = connectClient(router, 'a', [endpoint('/status')]);
    const b = connectClient(router, 'b', [endpoint('/status')]);
    const heard: Array<[string, boolean, number]> = [];
    const result = host.callPaths(
      { method: 'GET', path: '/status' },
      {
        onResult: (entry, total) => {
          heard.push([entry.clientId, entry.ok, total]);
          throw new Error('listener bug');
        },
      },
    );
    answer(b.transport, b.session, 'b ok');
    await flush();
    expect(heard).toEqual([['b', true, 2]]);
    answer(a.transport, a.session, 'a ok');
    expect((await result).results.map((r) => r.ok)).toEqual([true, true]);
    expect(heard).toEqual([
      ['b', true, 2],
      ['a', true, 2],
    ]);
  });

  it('reports unknown ids per entry, and rejects with not_found when no client has the path', async () => {
    const a = connectClient(router, 'a', [endpoint('/status')]);
    const result = host.callPaths({ clientIds: ['a', 'ghost'], method: 'GET', path: '/status' });
    answer(a.transport, a.session, 'fine');
    expect((await result).results).toEqual([
      { clientId: 'a', ok: true, data: 'fine' },
      { clientId: 'ghost', ok: false, source: 'server', error: { code: 'not_found', message: 'No client "ghost" is connected' } },
    ]);
    await expect(host.callPaths({ method: 'GET', path: '/missing' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('lists the clients once for a whole batch of absent ids, and not at all when every id is registered', async () => {
    const a = connectClient(router, 'a', [endpoint('/status')]);
    const listings = vi.spyOn(router, 'listClients');
    const ghosts = Array.from({ length: 50 }, (_, i) => `ghost-${i}`);
    const result = await host.callPaths({ clientIds: ghosts, method: 'GET', path: '/status' });
    expect(result.results.every((r) => !r.ok && r.error.code === 'not_found')).toBe(true);
    expect(listings).toHaveBeenCalledTimes(1);
    listings.mockClear();
    const known = host.callPaths({ clientIds: ['a'], method: 'GET', path: '/status' });
    answer(a.transport, a.session, 'fine');
    expect((await known).results).toEqual([{ clientId: 'a', ok: true, data: 'fine' }]);
    expect(listings).not.toHaveBeenCalled();
  });

  it('refuses to call more clients than maxTargets, before calling any', async () => {
    const a = connectClient(router, 'a', [endpoint('/status')]);
    const b = connectClient(router, 'b', [endpoint('/status')]);
    const requests: CallPathsRequest[] = [
      { method: 'GET', path: '/status' },
      { clientIds: ['a', 'b'], method: 'GET', path: '/status' },
    ];
    for (const request of requests) {
      await expect(host.callPaths(request, { maxTargets: 1 })).rejects.toMatchObject({ code: 'bad_request', details: { clients: 2, maxTargets: 1 } });
    }
    expect([a.transport.calls.length, b.transport.calls.length]).toEqual([0, 0]);
  });
});

describe('fanoutTargets', () => {
  it('is the budget over the bytes of one copy of the payload, at least 1', () => {
    const payload = { body: 'x'.repeat(1000) };
    const bytes = Buffer.byteLength(JSON.stringify([undefined, payload.body, undefined, undefined]));
    expect(fanoutTargets(payload, 10 * bytes)).toBe(10);
    expect(fanoutTargets(payload, 10 * bytes - 1)).toBe(9);
    expect(fanoutTargets({ body: 'y'.repeat(10_000), headers: { a: 'b' } }, 100)).toBe(1);
    // Query, headers and auth are copied too.
    expect(fanoutTargets({ headers: { h: 'z'.repeat(1000) } }, 4000)).toBe(3);
  });
});

describe('onChange', () => {
  it('tells listeners when clients register, change their catalog and leave, until unsubscribed', () => {
    const seen: number[] = [];
    const off = host.onChange(() => seen.push(seen.length));
    const { session } = connectClient(router, 'a', [endpoint('/x')]);
    session.handle({ type: 'updateClientCatalog', clientId: 'a', paths: [endpoint('/y')] });
    session.end();
    expect(seen).toHaveLength(3);
    off();
    connectClient(router, 'b');
    expect(seen).toHaveLength(3);
  });
});
