/**
 * The host contract under tenancy by principal (host.ts, tenancy.ts): a caller lists, resolves,
 * calls and hears changes of only the clients it sees; the others are unknown ids, and neither a
 * page's end nor its cursor tells of them.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PathDescriptor } from '@mdp/protocol';
import { Router, createLocalHost, createTenancy, type HostApi } from '../src/index.js';
import { client, connect, endpoint, skill, type Connected } from './helpers.js';

const A = { principal: 'token:a' };
const B = { principal: 'token:b' };

let router: Router;
let host: HostApi;

beforeEach(() => {
  router = new Router({ invocationTimeoutMs: 1000 });
  host = createLocalHost(router, { tenancy: createTenancy({ mode: 'principal', sharedClients: ['shared-*'] }) });
});

afterEach(async () => {
  await router.close();
});

function register(id: string, principal: string, paths: PathDescriptor[] = [endpoint('/ping'), skill('/docs/skill.md')]): Connected {
  const connected = connect(router, { principal });
  connected.session.handle({ type: 'registerClient', client: client(id, paths) });
  return connected;
}

const ids = (clients: readonly { id: string }[]) => clients.map((c) => c.id);

describe('listings', () => {
  beforeEach(() => {
    register('a1', 'token:a');
    register('b1', 'token:b');
    register('a2', 'token:a');
    register('shared-printer', 'token:b');
  });

  it("list only the caller's clients and the shared ones; no viewer lists all", async () => {
    expect(ids((await host.listClients({}, { viewer: A })).clients)).toEqual(['a1', 'a2', 'shared-printer']);
    expect(ids((await host.listClients({}, { viewer: B })).clients)).toEqual(['b1', 'shared-printer']);
    expect(ids((await host.listClients({}, { viewer: { principal: undefined } })).clients)).toEqual(['shared-printer']);
    expect(ids((await host.listClients()).clients)).toEqual(['a1', 'a2', 'b1', 'shared-printer']);
    expect((await host.listClients({ search: 'b1' }, { viewer: A })).clients).toEqual([]);
    const paths = await host.listPaths({}, { viewer: B });
    expect([...new Set(paths.paths.map((p) => p.clientId))]).toEqual(['b1', 'shared-printer']);
  });

  it("name another principal's client as an unknown one", async () => {
    const unknown = await host.listPaths({ clientId: 'nobody' }, { viewer: A }).catch((error: unknown) => error);
    const hidden = await host.listPaths({ clientId: 'b1' }, { viewer: A }).catch((error: unknown) => error);
    expect(hidden).toMatchObject({ code: 'not_found', message: 'No client "b1" is connected' });
    expect(JSON.stringify(hidden).replaceAll('b1', 'X')).toBe(JSON.stringify(unknown).replaceAll('nobody', 'X'));
  });

  it("page without cursors naming unseen clients, and end where the caller's clients end", async () => {
    // a1 a2 | b1 shared-printer: with limit 2, A's second page holds shared-printer, B's first ends after shared-printer.
    const first = await host.listClients({ limit: 1 }, { viewer: B });
    expect(ids(first.clients)).toEqual(['b1']);
    const decoded = (cursor: string | undefined) => Buffer.from(cursor ?? '', 'base64url').toString();
    expect(decoded(first.nextCursor)).toContain('b1');
    const second = await host.listClients({ limit: 1, cursor: first.nextCursor }, { viewer: B });
    expect(ids(second.clients)).toEqual(['shared-printer']);
    expect(second.nextCursor).toBeUndefined();
    // A's last own client is followed by unseen ones only: no cursor says there is more.
    register('zz-b', 'token:b');
    const page = await host.listClients({ limit: 3 }, { viewer: A });
    expect(ids(page.clients)).toEqual(['a1', 'a2', 'shared-printer']);
    expect(page.nextCursor).toBeUndefined();
    const paths = await host.listPaths({ limit: 2 }, { viewer: A });
    for (let cursor = paths.nextCursor; cursor !== undefined; ) {
      expect(decoded(cursor)).not.toMatch(/b1|zz-b/);
      const next = await host.listPaths({ limit: 2, cursor }, { viewer: A });
      expect(next.paths.every((p) => p.clientId !== 'b1' && p.clientId !== 'zz-b')).toBe(true);
      cursor = next.nextCursor;
    }
  });

  it("spend no scan budget on unseen clients: a page still reaches the caller's client past many others", async () => {
    const small = createLocalHost(router, { tenancy: createTenancy({ mode: 'principal' }), listing: { scanEntries: 3 } });
    for (let i = 0; i < 10; i++) register(`c${i}`, 'token:b');
    register('zz-a', 'token:a');
    const page = await small.listClients({}, { viewer: A });
    expect(ids(page.clients)).toEqual(['a1', 'a2', 'zz-a']);
    expect(page.nextCursor).toBeUndefined();
  });
});

describe('calls', () => {
  it("reach only seen clients; another principal's is not_found as an unknown id", async () => {
    const b = register('b1', 'token:b');
    const hidden = await host.callPath({ clientId: 'b1', method: 'GET', path: '/ping' }, { viewer: A });
    const unknown = await host.callPath({ clientId: 'nobody', method: 'GET', path: '/ping' }, { viewer: A });
    expect(hidden).toEqual({ ok: false, source: 'server', error: { code: 'not_found', message: 'No client "b1" is connected' } });
    expect(unknown).toEqual({ ok: false, source: 'server', error: { code: 'not_found', message: 'No client "nobody" is connected' } });
    expect(b.transport.calls).toHaveLength(0);
    const called = host.callPath({ clientId: 'b1', method: 'GET', path: '/ping' }, { viewer: B });
    const call = b.transport.lastCall;
    b.session.handle({ type: 'callClientResult', requestId: call.requestId, ok: true, data: 'pong' });
    expect(await called).toEqual({ ok: true, data: 'pong' });
  });

  it('callPaths without ids reaches only seen clients; none seen is not_found', async () => {
    const a = register('a1', 'token:a');
    const b = register('b1', 'token:b');
    const many = host.callPaths({ method: 'GET', path: '/ping' }, { viewer: A });
    await Promise.resolve();
    const call = a.transport.lastCall;
    a.session.handle({ type: 'callClientResult', requestId: call.requestId, ok: true, data: 1 });
    expect(await many).toEqual({ results: [{ clientId: 'a1', ok: true, data: 1 }] });
    expect(b.transport.calls).toHaveLength(0);
    await expect(host.callPaths({ method: 'GET', path: '/ping' }, { viewer: { principal: 'token:c' } })).rejects.toMatchObject({ code: 'not_found' });
    const named = await host.callPaths({ clientIds: ['b1'], method: 'GET', path: '/ping' }, { viewer: A });
    expect(named.results).toEqual([{ clientId: 'b1', ok: false, source: 'server', error: { code: 'not_found', message: 'No client "b1" is connected' } }]);
  });
});

describe('onChange', () => {
  it('tells a caller of changes to the clients it sees, not of the others', () => {
    const heard: string[] = [];
    register('a0', 'token:a');
    const b0 = register('b0', 'token:b');
    const off = host.onChange(() => heard.push('A'), A);
    host.onChange(() => heard.push('all'));
    const b = register('b1', 'token:b');
    expect(heard).toEqual(['all']);
    b.session.end();
    b0.session.end();
    expect(heard).toEqual(['all', 'all', 'all']);
    const a = register('a1', 'token:a');
    a.session.handle({ type: 'updateClientCatalog', clientId: 'a1', paths: [endpoint('/other')] });
    a.session.end();
    expect(heard).toEqual(['all', 'all', 'all', 'A', 'all', 'A', 'all', 'A', 'all']);
    off();
  });
});
