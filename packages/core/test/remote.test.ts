/**
 * The fleet seam (remote.ts, SPEC §16): a router with a remote directory reaches the clients of
 * another node through the same methods, and the host contract over it lists, calls and hears them
 * without knowing where they live. Two routers in one process stand for two nodes: node A's
 * directory reads node B's router, as the bus would over NATS.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MdpError, Router, createLocalHost, createTenancy, type CallRecord, type HostApi, type InvokeOutcome } from '../src/index.js';
import { PeerDirectory } from '../../test-kit/src/peer-directory.js';
import { client, connect, connectClient, endpoint, flush, manualClock, skill, track, type ManualClock } from './helpers.js';

let clockA: ManualClock;
let clockB: ManualClock;
let a: Router;
let b: Router;
let directory: PeerDirectory;
let detach: () => void;
let records: CallRecord[];

beforeEach(() => {
  clockA = manualClock();
  clockB = manualClock();
  records = [];
  a = new Router({ clock: clockA, onCallEnd: (record) => records.push(record) });
  b = new Router({ clock: clockB });
  directory = new PeerDirectory(b, { notReady: (message, retryAfterMs) => new MdpError('not_ready', message, { details: { retryAfterMs } }) });
  detach = a.fleet.attach(directory);
});

afterEach(async () => {
  detach();
  await a.close();
  await b.close();
});

/** Answer every call the client of `connected` gets with `data`. */
function answering(connected: ReturnType<typeof connectClient>, data: (path: string) => unknown = (path) => `from ${path}`): void {
  const send = connected.transport.send.bind(connected.transport);
  connected.transport.send = (message) => {
    send(message);
    if (message.type === 'callClient') {
      queueMicrotask(() => connected.session.handle({ type: 'callClientResult', requestId: message.requestId, ok: true, data: data(message.path) }));
    }
  };
}

describe('calls', () => {
  it("reach another node's client through invoke, with what a local call carries", async () => {
    const onB = connectClient(b, 'printer', [endpoint('/jobs/:id', 'POST')]);
    answering(onB, () => ({ queued: true }));
    const auth = { scheme: 'Bearer', token: 'fwd' };
    const outcome = await a.invoke('printer', 'POST', '/jobs/7', { query: { q: '1' }, body: { n: 1 }, headers: { 'x-h': 'v' }, auth, route: 'skill' });
    expect(outcome).toEqual({ ok: true, data: { queued: true } });
    expect(onB.transport.lastCall).toMatchObject({ path: '/jobs/7', params: { id: '7' }, query: { q: '1' }, body: { n: 1 }, headers: { 'x-h': 'v' }, auth });
    expect(directory.calls).toEqual([{ method: 'POST', path: '/jobs/7', query: { q: '1' }, body: { n: 1 }, headers: { 'x-h': 'v' }, auth, route: 'skill' }]);
    // A call needs no catalog here: the client's node resolves the path.
    expect(directory.fetches).toEqual([]);
    expect(records).toMatchObject([{ route: 'skill', clientId: 'printer', method: 'POST', path: '/jobs/7', outcome: { ok: true } }]);
  });

  it('end as a local call does: client errors, unknown paths, time-outs', async () => {
    const onB = connectClient(b, 'printer', [endpoint('/jobs')]);
    const failing = a.invoke('printer', 'GET', '/jobs');
    await flush();
    onB.session.handle({ type: 'callClientResult', requestId: onB.transport.lastCall.requestId, ok: false, error: { code: 'busy', message: 'later' } });
    expect(await failing).toEqual({ ok: false, source: 'client', error: { code: 'busy', message: 'later' } });

    expect(await a.invoke('printer', 'GET', '/nope')).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });
    expect(await a.invoke('nobody', 'GET', '/jobs')).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });

    const slow = track(a.invoke('printer', 'GET', '/jobs', { timeoutMs: 50 }));
    await flush();
    clockB.advance(50);
    await flush();
    expect(slow.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'timeout' } });
  });

  it('fail at once when the caller goes away, and the client is not kept waiting', async () => {
    const onB = connectClient(b, 'printer', [endpoint('/jobs')]);
    const controller = new AbortController();
    const call = track(a.invoke('printer', 'GET', '/jobs', { signal: controller.signal }));
    await flush();
    expect(b.pendingCount).toBe(1);
    controller.abort();
    await flush();
    expect(call.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    expect(b.pendingCount).toBe(0);
    expect(a.fleet.pendingCount).toBe(0);
    expect(onB.transport.calls).toHaveLength(1);
  });

  it('cancel a dispatched remote call by its handle', async () => {
    connectClient(b, 'printer', [endpoint('/jobs')]);
    const target = await a.fleet.locateTarget('printer', 'GET', '/jobs');
    expect(target).toMatchObject({ path: '/jobs', method: 'GET' });
    let outcome: InvokeOutcome | undefined;
    const handle = a.dispatch('printer', target as NonNullable<typeof target>, {}, (o) => (outcome = o));
    expect(handle).toBeDefined();
    a.cancel(handle as NonNullable<typeof handle>);
    await flush();
    expect(outcome).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    expect(b.pendingCount).toBe(0);
  });

  it('fail fast with not_ready and a retry hint while the bus is down', async () => {
    connectClient(b, 'printer', [endpoint('/jobs')]);
    directory.down = true;
    expect(await a.invoke('printer', 'GET', '/jobs')).toEqual({
      ok: false,
      source: 'server',
      error: { code: 'not_ready', message: 'bus down', details: { retryAfterMs: 2000 } },
    });
    await expect(a.fleet.describe('printer')).rejects.toMatchObject({ code: 'not_ready' });
  });

  it("go to this node's client when both nodes hold the id (until the replacement rule settles it)", async () => {
    const onB = connectClient(b, 'twin', [endpoint('/who')]);
    answering(onB, () => 'b');
    const onA = connectClient(a, 'twin', [endpoint('/who')]);
    answering(onA, () => 'a');
    expect(await a.invoke('twin', 'GET', '/who')).toEqual({ ok: true, data: 'a' });
    expect(a.fleet.locate('twin')?.node).toBeUndefined();
    onA.session.end();
    expect(await a.invoke('twin', 'GET', '/who')).toEqual({ ok: true, data: 'b' });
    expect(a.fleet.locate('twin')?.node).toBe('node-b');
  });

  it('answer for another node only with its own clients (invokeHere never goes back out)', async () => {
    connectClient(b, 'printer', [endpoint('/jobs')]);
    expect(await a.invokeHere('printer', 'GET', '/jobs')).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(directory.calls).toEqual([]);
  });

  it('drain waits for remote calls in flight and refuses new ones; close ends them', async () => {
    const onB = connectClient(b, 'printer', [endpoint('/jobs')]);
    const first = track(a.invoke('printer', 'GET', '/jobs'));
    await flush();
    let drained = false;
    void a.drain().then(() => (drained = true));
    expect(await a.invoke('printer', 'GET', '/jobs')).toMatchObject({ ok: false, error: { code: 'not_ready' } });
    await flush();
    expect(drained).toBe(false);
    onB.session.handle({ type: 'callClientResult', requestId: onB.transport.lastCall.requestId, ok: true, data: 1 });
    await flush();
    await flush();
    expect(first.outcome).toEqual({ ok: true, data: 1 });
    expect(drained).toBe(true);
  });

  it('close ends the remote calls in flight at once', async () => {
    connectClient(b, 'printer', [endpoint('/jobs')]);
    const pending = track(a.invoke('printer', 'GET', '/jobs'));
    await flush();
    await a.close();
    await flush();
    expect(pending.outcome).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    expect(b.pendingCount).toBe(0);
  });
});

describe('lookups', () => {
  it('fetch a catalog once per descriptor and resolve skills in it', async () => {
    connectClient(b, 'docs', [skill('/guide/skill.md'), endpoint('/x')]);
    expect(a.hasClient('docs')).toBe(false);
    expect(a.fleet.locate('docs')).toEqual({ id: 'docs', principal: undefined, origin: undefined, node: 'node-b' });
    expect(await a.fleet.locateSkillRead('docs', '/guide')).toMatchObject({ path: '/guide/skill.md' });
    expect(await a.fleet.locateTarget('docs', 'GET', '/x')).toMatchObject({ path: '/x' });
    expect(await a.fleet.locateTarget('docs', 'GET', '/y')).toBeUndefined();
    expect(await a.fleet.locateTarget('docs', 'GET', 'no-slash')).toBeUndefined();
    expect(await a.fleet.describe('docs')).toMatchObject({
      id: 'docs',
      node: 'node-b',
      transportKind: 'fake',
      paths: [{ path: '/guide/skill.md' }, { path: '/x' }],
    });
    expect(a.fleet.locateSkillRead('nobody', '/guide')).toBeUndefined();
  });

  it('resolve a read at once, without a fetch or a promise, when the directory has the catalog at hand', async () => {
    connectClient(b, 'docs', [skill('/guide/skill.md'), endpoint('/x')]);
    detach();
    const cached: string[] = [];
    const withCache = Object.assign(Object.create(directory) as PeerDirectory, {
      cachedDescriptor: (clientId: string) => {
        cached.push(clientId);
        return b.getClient(clientId)?.descriptor;
      },
    });
    detach = a.fleet.attach(withCache);
    const read = a.fleet.locateSkillRead('docs', '/guide');
    expect(read).not.toBeInstanceOf(Promise);
    expect(read).toMatchObject({ path: '/guide/skill.md' });
    expect(a.fleet.locateTarget('docs', 'GET', '/x')).toMatchObject({ path: '/x' });
    expect(a.fleet.locateTarget('docs', 'GET', '/y')).toBeUndefined();
    expect(a.fleet.locateSkillRead('docs', '/none')).toBeUndefined();
    expect(cached).toEqual(['docs', 'docs', 'docs', 'docs']);
    expect(directory.fetches).toEqual([]);
    // The call itself still goes to the client's node, as every remote call does.
    answering(connectClient(b, 'docs', [skill('/guide/skill.md')]), () => 'text');
    expect(await a.invoke('docs', 'GET', '/guide/skill.md')).toEqual({ ok: true, data: 'text' });
    // A descriptor of another id is not taken for this client's: the fetch decides.
    const wrong = Object.assign(Object.create(directory) as PeerDirectory, { cachedDescriptor: () => b.getClient('docs')?.descriptor });
    detach();
    detach = a.fleet.attach(wrong);
    connectClient(b, 'other', [skill('/o/skill.md')]);
    expect(a.fleet.locateSkillRead('other', '/o')).toBeInstanceOf(Promise);
    expect(await a.fleet.locateSkillRead('other', '/o')).toMatchObject({ path: '/o/skill.md' });
  });

  it("read a page's origin from the principal another node announces", () => {
    const page = connect(b, { principal: 'origin:https://app.example' });
    page.session.handle({ type: 'registerClient', client: client('page') });
    expect(a.fleet.locate('page')?.origin).toBe('https://app.example');
  });

  it('hear changes of remote clients by id', () => {
    const heard: string[] = [];
    const off = a.onClientChange((id) => heard.push(id));
    const onB = connectClient(b, 'c1');
    connectClient(a, 'c2');
    onB.session.end();
    off();
    connectClient(b, 'c3');
    expect(heard).toEqual(['c1', 'c2', 'c1']);
  });

  it('detach forgets the other nodes', () => {
    connectClient(b, 'c1');
    expect(a.fleet.attached).toBe(true);
    detach();
    detach = () => undefined;
    expect(a.fleet.attached).toBe(false);
    expect(a.fleet.locate('c1')).toBeUndefined();
    expect(() => a.fleet.attach(directory)).not.toThrow();
    expect(() => a.fleet.attach(directory)).toThrow(/attached already/);
  });
});

describe('registration', () => {
  it('refuse an id another principal holds on another node, as on one node', () => {
    const held = connect(b, { principal: 'token:owner' });
    held.session.handle({ type: 'registerClient', client: client('mine') });
    const thief = connect(a, { principal: 'token:thief' });
    expect(() => thief.session.handle({ type: 'registerClient', client: client('mine') })).toThrow(
      expect.objectContaining({ code: 'bad_request', refusal: 'client_id_taken' }),
    );
    // Its owner may move it to this node (the other node's session is then replaced there).
    const owner = connect(a, { principal: 'token:owner' });
    owner.session.handle({ type: 'registerClient', client: client('mine') });
    expect(a.hasClient('mine')).toBe(true);
  });

  it("refuse what the fleet cannot announce, with the directory's reason", () => {
    directory.problem = 'Client id is longer than 4096 bytes, the most a fleet announces';
    const connected = connect(a);
    expect(() => connected.session.handle({ type: 'registerClient', client: client('long') })).toThrow(/4096 bytes/);
    expect(a.hasClient('long')).toBe(false);
  });

  it('close a client of this node that a newer registration elsewhere replaced', () => {
    const onA = connectClient(a, 'moved');
    expect(a.closeClient('moved', 'replaced')).toBe(true);
    expect(onA.transport.closes).toEqual([{ code: 4000, reason: 'Replaced by newer client session' }]);
    expect(a.hasClient('moved')).toBe(false);
    expect(a.closeClient('moved', 'replaced')).toBe(false);
  });
});

describe('the host contract over a fleet', () => {
  let host: HostApi;

  beforeEach(() => {
    host = createLocalHost(a);
  });

  it("lists this node's and the other node's clients in one order", async () => {
    connectClient(b, 'b-2', [endpoint('/x'), skill('/docs/skill.md')]);
    connectClient(a, 'a-1', [endpoint('/y')]);
    connectClient(b, 'b-1');
    const listed = await host.listClients();
    expect(listed.clients.map((c) => c.id)).toEqual(['a-1', 'b-1', 'b-2']);
    expect(listed.clients[2]).toMatchObject({ id: 'b-2', name: 'Client b-2', status: 'online', connection: { mode: 'fake' } });
    const paths = await host.listPaths({ depth: 2 });
    expect(paths.paths.map((p) => `${p.clientId} ${p.path}`)).toEqual(['a-1 /y', 'b-1 /ping', 'b-2 /docs/skill.md', 'b-2 /x']);
    expect((await host.listPaths({ clientId: 'b-2' })).paths.map((p) => p.path)).toEqual(['/docs/skill.md', '/x']);
    await expect(host.listPaths({ clientId: 'nobody' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('fetches the catalogs of the page it builds, not of every remote client', async () => {
    for (let i = 0; i < 10; i++) connectClient(b, `c${i}`);
    const first = await host.listClients({ limit: 3 });
    expect(first.clients.map((c) => c.id)).toEqual(['c0', 'c1', 'c2']);
    expect(new Set(directory.fetches)).toEqual(new Set(['c0', 'c1', 'c2']));
    const second = await host.listClients({ limit: 3, cursor: first.nextCursor });
    expect(second.clients.map((c) => c.id)).toEqual(['c3', 'c4', 'c5']);
    expect(directory.fetches).toHaveLength(6);
  });

  it('pages through more remote clients than one page fetches, each listed once', async () => {
    for (let i = 0; i < 30; i++) connectClient(b, `c${String(i).padStart(2, '0')}`);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await host.listClients({ limit: 7, ...(cursor ? { cursor } : {}) });
      seen.push(...page.clients.map((c) => c.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => `c${String(i).padStart(2, '0')}`));
  });

  it('searches remote catalogs, and lists a remote client that leaves mid-fetch as gone', async () => {
    connectClient(b, 'alpha', [endpoint('/print')]);
    const leaving = connectClient(b, 'beta', [endpoint('/print')]);
    expect((await host.listClients({ search: 'print' })).clients.map((c) => c.id)).toEqual(['alpha', 'beta']);
    directory.held = [];
    const page = host.listClients({}).then((r) => r.clients.map((c) => c.id));
    await flush();
    await new Promise((resolve) => setImmediate(resolve));
    leaving.session.end();
    directory.release();
    expect(await page).toEqual(['alpha']);
  });

  it('leaves out a remote client whose catalog cannot be had, and lists the rest', async () => {
    connectClient(b, 'far');
    connectClient(a, 'near');
    directory.down = true;
    expect((await host.listClients()).clients.map((c) => c.id)).toEqual(['near']);
  });

  it('calls remote clients by id and by path, and reports their changes', async () => {
    answering(connectClient(b, 'b1', [endpoint('/ping')]), () => 'b1');
    answering(connectClient(a, 'a1', [endpoint('/ping')]), () => 'a1');
    connectClient(b, 'other', [endpoint('/else')]);
    expect(await host.callPath({ clientId: 'b1', method: 'GET', path: '/ping' })).toEqual({ ok: true, data: 'b1' });
    const many = await host.callPaths({ method: 'GET', path: '/ping' });
    expect(many.results.map((r) => [r.clientId, r.ok && r.data])).toEqual([
      ['a1', 'a1'],
      ['b1', 'b1'],
    ]);
    let changes = 0;
    const off = host.onChange(() => changes++);
    connectClient(b, 'late');
    off();
    expect(changes).toBe(1);
  });

  it('keeps tenancy by the principal a remote client was announced with', async () => {
    host = createLocalHost(a, { tenancy: createTenancy({ mode: 'principal', sharedClients: ['shared'] }) });
    for (const [id, principal] of [
      ['mine', 'token:me'],
      ['theirs', 'token:them'],
      ['shared', 'token:them'],
    ] as const) {
      const connected = connect(b, { principal });
      connected.session.handle({ type: 'registerClient', client: client(id) });
      answering({ ...connected, session: connected.session }, () => id);
    }
    const me = { principal: 'token:me' };
    expect((await host.listClients({}, { viewer: me })).clients.map((c) => c.id)).toEqual(['mine', 'shared']);
    expect(await host.callPath({ clientId: 'theirs', method: 'GET', path: '/ping' }, { viewer: me })).toMatchObject({
      ok: false,
      error: { code: 'not_found', message: 'No client "theirs" is connected' },
    });
    await expect(host.callPaths({ method: 'GET', path: '/ping' }, { viewer: { principal: 'token:nobody' } })).resolves.toMatchObject({
      results: [{ clientId: 'shared' }],
    });
    expect(directory.fetches).not.toContain('theirs');
    let heard = 0;
    const off = host.onChange(() => heard++, me);
    connect(b, { principal: 'token:them' }).session.handle({ type: 'registerClient', client: client('theirs-2') });
    expect(heard).toBe(0);
    connect(b, { principal: 'token:me' }).session.handle({ type: 'registerClient', client: client('mine-2') });
    expect(heard).toBe(1);
    off();
  });
});
