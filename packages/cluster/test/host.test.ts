/**
 * The host contract on real nodes (SPEC §10, §12): a follower's host answers through the leader
 * over cluster RPC, with the wire shapes of the reference server's bridge, across a leader change.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { MdpError, systemClock } from '@mdp/core';
import type { ClientDescriptor } from '@mdp/protocol';
import { mirroredId } from '@mdp/protocol';
import { agreedLeader, attachClient, live, scriptedClient, skillClient, startCluster, until, type NodeOverrides, type TestNode } from './harness.js';

const running: TestNode[] = [];

afterEach(async () => {
  const nodes = running.splice(0);
  await Promise.all(nodes.map((n) => n.stop()));
  for (const n of nodes) expect(n.node.activeTimers, `timers left on ${n.id}`).toBe(0);
});

/**
 * Steadier than FAST: these tests need one leader throughout, also on a loaded machine (a killed
 * leader is still replaced at once, through its closed links).
 */
const STEADY = { heartbeatIntervalMs: 100, leaseDurationMs: 1500, electionTimeoutMinMs: 2000, electionTimeoutMaxMs: 3000 } as const;
const CONVERGE_MS = STEADY.leaseDurationMs + STEADY.electionTimeoutMaxMs + 4000;
const SKILL = '/docs/review/skill.md';

/** Three nodes with an agreed leader: [leader, follower 1, follower 2]. */
async function trio(overrides: NodeOverrides = {}): Promise<[TestNode, TestNode, TestNode]> {
  const nodes = await startCluster(3, () => ({ ...STEADY, ...overrides }));
  running.push(...nodes);
  await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'a leader');
  const leader = agreedLeader(nodes) as TestNode;
  const [f1, f2] = nodes.filter((n) => n !== leader) as [TestNode, TestNode];
  return [leader, f1, f2];
}

/** Resolves once `id` is registered on `node` (mirrors take a moment). */
function registered(node: TestNode, id: string): Promise<void> {
  return until(() => node.router.getClient(id) !== undefined, 3000, `${id} on ${node.id}`);
}

const withEndpoint = (id: string): ClientDescriptor => ({
  ...skillClient(id),
  paths: [...skillClient(id).paths, { type: 'endpoint', method: 'POST', path: '/run', description: 'run it' }],
});

describe("a follower's host", () => {
  it('lists and calls a client attached to another follower, through the leader', async () => {
    const [leader, f1, f2] = await trio();
    attachClient(f1.router, withEndpoint('one'), (path) => `one answers ${path}`);
    attachClient(leader.router, withEndpoint('lead'), (path) => `lead answers ${path}`);
    const mirrored = mirroredId(f1.id, 'one');
    await registered(leader, mirrored);

    const { clients } = await f2.node.hostApi.listClients();
    expect(clients.map((c) => c.id).sort()).toEqual(['lead', mirrored].sort());
    expect(clients.find((c) => c.id === mirrored)).toMatchObject({ status: 'online', aliases: ['one'], connection: { mode: 'ws' } });
    // Search and progressive depth, as the leader answers them.
    expect((await f2.node.hostApi.listClients({ search: 'CLIENT ONE' })).clients.map((c) => c.id)).toEqual([mirrored]);
    expect((await f2.node.hostApi.listPaths()).paths.map((p) => `${p.clientId} ${p.path}`).sort()).toEqual([`lead /run`, `${mirrored} /run`].sort());
    expect((await f2.node.hostApi.listPaths({ clientId: 'one', depth: 2 })).paths.map((p) => p.path)).toEqual([SKILL, '/run']);
    expect((await f2.node.hostApi.listPaths({ search: 'review' })).paths).toHaveLength(2);

    // The id the follower listed, and the bare id (it reaches the one mirror).
    expect(await f2.node.hostApi.callPath({ clientId: mirrored, method: 'GET', path: SKILL })).toEqual({ ok: true, data: `one answers ${SKILL}` });
    expect(await f2.node.hostApi.callPath({ clientId: 'one', method: 'POST', path: '/run', body: { n: 1 } })).toEqual({ ok: true, data: 'one answers /run' });
    expect(await f2.node.hostApi.callPaths({ method: 'POST', path: '/run' })).toEqual({
      results: expect.arrayContaining([
        { clientId: 'lead', ok: true, data: 'lead answers /run' },
        { clientId: mirrored, ok: true, data: 'one answers /run' },
      ]),
    });
    expect(await f2.node.hostApi.callPaths({ clientIds: ['one'], method: 'GET', path: SKILL })).toEqual({
      results: [{ clientId: 'one', ok: true, data: `one answers ${SKILL}` }],
    });
  });

  it('aliases client ids only under server ids of the cluster: a client posing as a mirror gets nothing', async () => {
    const [leader, f1, f2] = await trio();
    expect([leader.id, f1.id, f2.id].map((id) => f2.node.isServerId(id))).toEqual([true, true, true]);
    expect(f2.node.isServerId('evil.example')).toBe(false);
    // A client on the leader claims to be the mirror of "deploy" from a server that is no member.
    const posing = attachClient(leader.router, {
      ...withEndpoint('evil.example.deploy'),
      metadata: { mdpProxy: { serverId: 'evil.example', clientId: 'deploy' } },
    });
    // And one whose dotted id merely ends with "app".
    const app = attachClient(leader.router, withEndpoint('app'));
    expect(await f2.node.hostApi.callPath({ clientId: 'deploy', method: 'POST', path: '/run' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await f2.node.hostApi.callPath({ clientId: 'com.acme.app', method: 'POST', path: '/run' })).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    expect([posing.calls.length, app.calls.length]).toEqual([0, 0]);
    expect((await f2.node.hostApi.listClients()).clients.every((c) => c.aliases.length === 0)).toBe(true);
    // A member's prefix still reaches the bare client.
    expect(await f2.node.hostApi.callPath({ clientId: `${f1.id}.app`, method: 'POST', path: '/run' })).toMatchObject({ ok: true });
  });

  it('maps failures as the local host does: unknown client, client error, time-out, and the leader lost mid-call', async () => {
    const [leader, f1, f2] = await trio();
    scriptedClient(f1.router, skillClient('broken'), () => ({ ok: false, error: { code: 'handler_error', message: 'it broke' } }));
    const mute = scriptedClient(leader.router, skillClient('mute'), () => undefined);
    await registered(leader, mirroredId(f1.id, 'broken'));

    expect(await f2.node.hostApi.callPath({ clientId: 'nobody', method: 'GET', path: SKILL })).toMatchObject({
      ok: false,
      source: 'server',
      error: { code: 'not_found' },
    });
    const unknown = await f2.node.hostApi.listPaths({ clientId: 'nobody' }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(MdpError);
    expect(unknown).toMatchObject({ code: 'not_found' });
    await expect(f2.node.hostApi.callPaths({ method: 'DELETE', path: '/nowhere' })).rejects.toMatchObject({ code: 'not_found' });
    expect(await f2.node.hostApi.callPath({ clientId: 'broken', method: 'GET', path: SKILL })).toEqual({
      ok: false,
      source: 'client',
      error: { code: 'handler_error', message: 'it broke' },
    });
    expect(await f2.node.hostApi.callPath({ clientId: 'mute', method: 'GET', path: SKILL }, { timeoutMs: 50 })).toMatchObject({
      ok: false,
      source: 'server',
      error: { code: 'timeout', message: expect.stringContaining('50 ms') },
    });

    // The call is with the leader's client when the leader dies: it may have run, so it fails.
    const pending = f2.node.hostApi.callPath({ clientId: 'mute', method: 'GET', path: SKILL }, { timeoutMs: 30_000 });
    await until(() => mute.calls.length === 2, 3000, 'the call to reach the client', [mute.changes.subscribe]);
    await leader.kill();
    expect(await pending).toEqual({
      ok: false,
      source: 'server',
      error: { code: 'transport_error', message: 'The link to the leader closed before it answered' },
    });
  });

  it("a call whose caller goes away ends on the leader too: the client's pending slot is freed at once", async () => {
    const [leader, f1] = await trio();
    scriptedClient(leader.router, withEndpoint('slow'), () => undefined);
    const caller = new AbortController();
    // An MCP task's call: a time-out of minutes, ended by tasks/cancel.
    const call = f1.node.hostApi.callPath({ clientId: 'slow', method: 'POST', path: '/run' }, { signal: caller.signal, timeoutMs: 600_000 });
    await until(() => leader.router.pendingCount === 1, 3000, 'the call pending on the leader');
    caller.abort();
    expect(await call).toMatchObject({ ok: false, source: 'server' });
    await until(() => leader.router.pendingCount === 0, 3000, 'the call ended on the leader');
  });

  it('a request made while the leader is gone completes once a new leader exists, with the ids listed before', async () => {
    // Generous probes: the settle time after a change covers the mirrors of a loaded machine.
    const [leader, f1, f2] = await trio({ discovery: { probeTimeoutMs: 1000 } });
    attachClient(f1.router, skillClient('one'), () => 'still here');
    const listed = mirroredId(f1.id, 'one');
    await registered(leader, listed);
    expect((await f2.node.hostApi.listClients()).clients.map((c) => c.id)).toContain(listed);

    await leader.kill();
    const call = f2.node.hostApi.callPath({ clientId: listed, method: 'GET', path: SKILL });
    const listing = f2.node.hostApi.listClients();
    expect(await call).toEqual({ ok: true, data: 'still here' });
    await expect(listing).resolves.toEqual({ clients: expect.any(Array) });
    const survivors = live([leader, f1, f2]);
    await until(() => agreedLeader(survivors) !== undefined, CONVERGE_MS, 'the new leader agreed');
    const next = agreedLeader(survivors);
    // The new leader holds the client as itself (f1 leads) or as f1's mirror (f2 leads).
    const after = (await f2.node.hostApi.listClients()).clients.map((c) => c.id);
    expect(after).toEqual([next === f1 ? 'one' : listed]);
  });

  it('hears about a client registering on another node', async () => {
    const [, f1, f2] = await trio();
    let fired = 0;
    const off = f2.node.hostApi.onChange(() => (fired += 1));
    // The first listing after subscribing fires once; nothing changed yet, so nothing more.
    await until(() => fired === 1, 3000, 'the first listing');
    attachClient(f1.router, skillClient('late'));
    await until(() => fired === 2, 3000, 'the change to be heard');
    expect((await f2.node.hostApi.listClients()).clients.map((c) => c.id)).toEqual([mirroredId(f1.id, 'late')]);
    off();
  });
});

describe('cluster RPC on the wire', () => {
  /** A raw control link to `node` as an observer: a hello, then `requests`; resolves with the answers by request id. */
  function rpcOver(node: TestNode, requests: { requestId: string; method: string; params?: unknown }[]): Promise<Map<string, unknown>> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${node.port}/mdp/cluster`);
      const answers = new Map<string, unknown>();
      const h = { clusterId: 'test', serverId: '127.0.0.1:1', term: 0, timestamp: systemClock.wallNow() };
      ws.on('open', () => {
        ws.send(
          JSON.stringify({
            type: 'clusterHello',
            ...h,
            membershipMode: 'dynamic',
            membershipFingerprint: 'dynamic',
            role: 'follower',
            wsUrl: 'ws://127.0.0.1:1',
            clusterUrl: 'ws://127.0.0.1:1/mdp/cluster',
          }),
        );
        for (const r of requests) ws.send(JSON.stringify({ type: 'clusterRpcRequest', ...h, ...r }));
      });
      ws.on('message', (data) => {
        const message = JSON.parse(String(data)) as { type: string; requestId?: string };
        if (message.type !== 'clusterRpcResponse') return;
        answers.set(message.requestId as string, message);
        if (answers.size === requests.length) ws.close(1000);
      });
      ws.on('close', () => resolve(answers));
      ws.on('error', reject);
    });
  }

  it("walks the leader's listing page by page, each page within one frame, where the whole would not fit", async () => {
    const [leader, f1] = await trio();
    // Descriptions at the 16 KiB cap, 2.4 MB in all: more than twice what one frame carries.
    const description = 'd'.repeat(15_000);
    for (let i = 0; i < 160; i++) attachClient(leader.router, { ...skillClient(`c${String(i).padStart(3, '0')}`), description });
    const ids: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await f1.node.hostApi.listClients({ limit: 1000, cursor });
      expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThan(1024 * 1024);
      ids.push(...page.clients.map((c) => c.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(ids).toEqual(Array.from({ length: 160 }, (_, i) => `c${String(i).padStart(3, '0')}`));
    expect(pages).toBeGreaterThan(1);
    // Asked whole (an earlier follower), the 2.4 MB listing is refused as too large for the link.
    const answers = await rpcOver(leader, [{ requestId: 'w', method: 'listClients' }]);
    expect(answers.get('w')).toMatchObject({ ok: false, error: { code: 'transport_error', message: expect.stringContaining('ask for it in pages') } });
  });

  it("answers the reference bridge's requests with its shapes; a follower says not_ready", async () => {
    const [leader, f1] = await trio();
    attachClient(leader.router, withEndpoint('lead'), () => 'done');
    const answers = await rpcOver(leader, [
      { requestId: 'a', method: 'listClients', params: { search: 'lead' } },
      { requestId: 'b', method: 'listPaths', params: { search: 'review', depth: 2 } },
      { requestId: 'c', method: 'callPath', params: { clientId: 'lead', method: 'POST', path: '/run', body: { x: 1 } } },
      { requestId: 'd', method: 'callPaths', params: { method: 'POST', path: '/run' } },
      { requestId: 'e', method: 'callPath', params: { clientId: 'lead', method: 'POST' } },
    ]);
    expect(answers.get('a')).toMatchObject({ ok: true, result: { clients: [{ id: 'lead', name: 'client lead', status: 'online' }] } });
    expect(answers.get('b')).toMatchObject({ ok: true, result: { paths: [{ clientId: 'lead', clientName: 'client lead', type: 'skill', path: SKILL }] } });
    expect(answers.get('c')).toMatchObject({ ok: true, result: { ok: true, data: 'done' } });
    expect(answers.get('d')).toMatchObject({ ok: true, result: { results: [{ clientId: 'lead', ok: true, data: 'done' }] } });
    expect(answers.get('e')).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringMatching(/^path: /) } });
    const refused = await rpcOver(f1, [{ requestId: 'f', method: 'listClients' }]);
    expect(refused.get('f')).toMatchObject({ ok: false, error: { code: 'not_ready' } });
  });
});
