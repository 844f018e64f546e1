import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Router } from '@mdp/core';
import { UNSENDABLE_DATA_ERROR, buildMetaDocument, metaEndpoints, standaloneClusterView } from '@mdp/protocol';
import { mirroredId } from '@mdp/protocol';
import { closeServer, listen, recordingLogger, until as untilChange } from '@mdp/test-kit';
import { createClusterNode, type ProxyStatus } from '../src/index.js';
import { upstreamAccepts } from '../src/version.js';
import { FAST, agreedLeader, attachClient, live, skillClient, startCluster, startNode, until, type TestNode } from './harness.js';

const running: TestNode[] = [];
const servers: Server[] = [];

afterEach(async () => {
  const nodes = running.splice(0);
  await Promise.all(nodes.map((n) => n.stop()));
  for (const n of nodes) expect(n.node.activeTimers).toBe(0);
  await Promise.all(servers.splice(0).map(closeServer));
});

async function track<T extends TestNode | TestNode[]>(value: Promise<T>): Promise<T> {
  const v = await value;
  running.push(...(Array.isArray(v) ? v : [v]));
  return v;
}

function statusIs(node: TestNode, state: ProxyStatus['state']): () => boolean {
  return () => node.node.proxyStatus().state === state;
}

const SKILL = '/docs/review/skill.md';

/** Data nested deeper than JSON.stringify can go. */
function tooDeep(): unknown {
  let deep: unknown = 'bottom';
  for (let i = 0; i < 100_000; i++) deep = [deep];
  return deep;
}
const CONVERGE_MS = FAST.leaseDurationMs + FAST.electionTimeoutMaxMs + 4000;

describe('version check', () => {
  it('accepts an upstream whose ranges admit our version, and nothing else', () => {
    expect(upstreamAccepts(['^2.0.0'])).toBe(true);
    expect(upstreamAccepts(['^3.0.0', '>=2.0.0 <2.1.0'])).toBe(true);
    expect(upstreamAccepts(['2.0.0'])).toBe(true);
    expect(upstreamAccepts(['^3.0.0'])).toBe(false);
    expect(upstreamAccepts(['not a range', ''])).toBe(false);
    expect(upstreamAccepts([])).toBe(false);
  });

  it('refuses to mirror into an upstream whose ranges are ^3.0.0, and says so in the log', async () => {
    let upgrades = 0;
    const hub = createServer((_req, res) => {
      const { port } = hub.address() as AddressInfo;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ...buildMetaDocument(
            `127.0.0.1:${port}`,
            metaEndpoints(`127.0.0.1:${port}`),
            standaloneClusterView('x', `127.0.0.1:${port}`, `ws://127.0.0.1:${port}`, 4000),
            {
              upstreamProxy: true,
              clusterControl: false,
            },
          ),
          protocolVersion: '3.1.0',
          supportedProtocolRanges: ['^3.0.0'],
        }),
      );
    });
    hub.on('upgrade', (_req, socket) => {
      upgrades += 1;
      socket.destroy();
    });
    servers.push(hub);
    const port = await listen(hub);

    const { logger, records: logs } = recordingLogger();
    const router = new Router();
    const node = createClusterNode({ router, serverId: 'me:1', clusterId: 'x', mode: 'standalone', upstreamUrl: `127.0.0.1:${port}`, logger });
    const statuses: ProxyStatus[] = [];
    node.onProxyStatus((s) => statuses.push(s));
    attachClient(router, skillClient('c1'));
    node.start({ wsUrl: 'ws://127.0.0.1:1', clusterUrl: 'ws://127.0.0.1:1/mdp/cluster', metaUrl: 'http://127.0.0.1:1/mdp/meta' });
    expect(node.features()).toEqual({ upstreamProxy: true, clusterControl: false });
    await untilChange(
      (change) => node.onProxyStatus(change),
      () => node.proxyStatus().state === 'refused',
    );
    const status = node.proxyStatus();
    expect(status).toMatchObject({ state: 'refused', upstream: `127.0.0.1:${port}` });
    expect(status.state === 'refused' && status.reason).toMatch(/\^3\.0\.0.*2\.0\.0/);
    expect(logs.some((l) => l.event === 'proxy.upstream_refused' && l.level === 'error')).toBe(true);
    expect(upgrades).toBe(0);
    expect(statuses.map((s) => s.state)).toEqual(['checking', 'refused']);
    await node.close();
    await router.close();
    expect(node.activeTimers).toBe(0);
  });
});

describe('mirroring into an explicit upstream', () => {
  it('registers <serverId>.<clientId> with metadata.mdpProxy, forwards calls, follows catalog updates and removal', async () => {
    const hub = await track(startNode({ mode: 'standalone' }));
    const edge = await track(startNode({ mode: 'standalone', upstreamUrl: hub.baseUrl }));
    const client = attachClient(edge.router, skillClient('c1'), (path) => `# ${path}`);
    const upstreamId = mirroredId(edge.id, 'c1');
    expect(upstreamId).toBe(`${edge.id}.c1`);
    await until(() => hub.router.getClient(upstreamId) !== undefined, 3000, 'the mirror to register');
    const mirrored = hub.router.getClient(upstreamId);
    expect(mirrored?.descriptor).toMatchObject({ name: 'client c1', metadata: { mdpProxy: { serverId: edge.id, clientId: 'c1' } } });
    expect(edge.node.proxyStatus()).toMatchObject({ state: 'mirroring', upstreamServerId: hub.id });

    const outcome = await hub.router.invoke(upstreamId, 'GET', SKILL, { query: { depth: '2' } });
    expect(outcome).toEqual({ ok: true, data: `# ${SKILL}` });
    expect(client.calls).toMatchObject([{ method: 'GET', path: SKILL, query: { depth: '2' } }]);

    client.session.handle({
      type: 'updateClientCatalog',
      clientId: 'c1',
      paths: [
        { type: 'skill', path: SKILL },
        { type: 'endpoint', method: 'POST', path: '/run' },
      ],
    });
    await until(() => hub.router.getClient(upstreamId)?.paths.length === 2, 3000, 'the catalog update');

    client.session.handle({ type: 'unregisterClient', clientId: 'c1' });
    await until(() => hub.router.getClient(upstreamId) === undefined, 3000, 'the removal');
  });

  it('answers a call whose result cannot be serialised (nested too deeply) with an error, and keeps mirroring', async () => {
    const hub = await track(startNode({ mode: 'standalone' }));
    const edge = await track(startNode({ mode: 'standalone', upstreamUrl: hub.baseUrl }));
    let answer: unknown = 'fine';
    attachClient(edge.router, skillClient('deep'), () => answer);
    const id = mirroredId(edge.id, 'deep');
    await until(() => hub.router.getClient(id) !== undefined, 3000, 'the mirror');
    answer = tooDeep();
    // The client's own error at once, not the time-out's.
    expect(await hub.router.invoke(id, 'GET', SKILL, { timeoutMs: 10_000 })).toEqual({ ok: false, source: 'client', error: UNSENDABLE_DATA_ERROR });
    answer = 'fine again';
    expect(await hub.router.invoke(id, 'GET', SKILL)).toEqual({ ok: true, data: 'fine again' });
  });

  it('re-establishes a dropped upstream link with back-off and registers again', async () => {
    const hub = await track(startNode({ mode: 'standalone' }));
    const edge = await track(startNode({ mode: 'standalone', upstreamUrl: hub.baseUrl }));
    attachClient(edge.router, skillClient('a'));
    attachClient(edge.router, skillClient('b'));
    const ids = [mirroredId(edge.id, 'a'), mirroredId(edge.id, 'b')];
    await until(() => ids.every((id) => hub.router.getClient(id)), 3000, 'both mirrors');
    const before = ids.map((id) => hub.router.getClient(id)?.sessionId);
    hub.dropMdpSockets();
    await until(() => ids.every((id) => hub.router.getClient(id) && !before.includes(hub.router.getClient(id)?.sessionId)), 5000, 'both mirrors again');
    expect(edge.logs.some((l) => l.event === 'proxy.mirror_dropped')).toBe(true);
    expect((await hub.router.invoke(ids[0] as string, 'GET', SKILL)).ok).toBe(true);
  });

  it('a client that goes away on the edge goes away upstream, also when its session just ends', async () => {
    const hub = await track(startNode({ mode: 'standalone' }));
    const edge = await track(startNode({ mode: 'standalone', upstreamUrl: hub.baseUrl }));
    const client = attachClient(edge.router, skillClient('gone'));
    const id = mirroredId(edge.id, 'gone');
    await until(() => hub.router.getClient(id) !== undefined, 3000, 'the mirror');
    client.disconnect();
    await until(() => hub.router.getClient(id) === undefined, 3000, 'the mirror to go');
  });
});

describe('mirroring in a cluster', () => {
  it("mirrors followers' clients into the leader, answers host requests through it, and switches when the leader changes", async () => {
    const nodes = await track(startCluster(3));
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'a leader');
    const leader = agreedLeader(nodes) as TestNode;
    const followers = nodes.filter((n) => n !== leader);
    const [f1, f2] = followers as [TestNode, TestNode];
    attachClient(f1.router, skillClient('one'), () => 'from one');
    attachClient(leader.router, skillClient('local'), () => 'from the leader');
    const mirrored = mirroredId(f1.id, 'one');
    await until(() => leader.router.getClient(mirrored) !== undefined, 3000, 'the mirror on the leader');
    // The leader's own client is not mirrored anywhere; the leader mirrors nothing.
    expect(leader.node.proxyStatus().state).toBe('idle');
    expect(f2.router.getClient(mirroredId(leader.id, 'local'))).toBeUndefined();

    // Host requests on a follower are answered by the leader.
    const { clients } = await f2.node.hostApi.listClients();
    expect(clients.map((c) => c.id).sort()).toEqual([mirrored, 'local'].sort());
    const { paths } = await f2.node.hostApi.listPaths({ depth: 2 });
    expect(paths).toContainEqual(expect.objectContaining({ clientId: mirrored, clientName: 'client one', type: 'skill', path: SKILL }));
    expect(await f2.node.hostApi.callPath({ clientId: mirrored, method: 'GET', path: SKILL })).toEqual({ ok: true, data: 'from one' });
    expect(await f2.node.hostApi.callPath({ clientId: 'nobody', method: 'GET', path: SKILL })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    // An answer the leader cannot serialise comes back as an error at once, and the link stays up.
    attachClient(leader.router, skillClient('deep'), () => tooDeep());
    expect(await f2.node.hostApi.callPath({ clientId: 'deep', method: 'GET', path: SKILL })).toMatchObject({ ok: false, error: UNSENDABLE_DATA_ERROR });
    expect(await f2.node.hostApi.callPath({ clientId: mirrored, method: 'GET', path: SKILL })).toEqual({ ok: true, data: 'from one' });

    // The leader stops: the survivors elect, and f1 mirrors into whoever leads now (unless it leads).
    await leader.stop();
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'a new leader');
    const next = agreedLeader(nodes) as TestNode;
    if (next === f1) {
      await until(() => f1.node.proxyStatus().state === 'idle', 3000, 'f1 to stop mirroring');
      expect(await f2.node.hostApi.callPath({ clientId: 'one', method: 'GET', path: SKILL })).toEqual({ ok: true, data: 'from one' });
    } else {
      await until(() => next.router.getClient(mirrored) !== undefined, 5000, 'the mirror on the new leader');
      expect((await next.router.invoke(mirrored, 'GET', SKILL)).ok).toBe(true);
    }
    expect(live(nodes)).toHaveLength(2);
  });

  it('a proxy-required node never leads and mirrors into the leader', async () => {
    const nodes = await track(startCluster(3, (i) => (i === 0 ? { mode: 'proxy-required' } : {})));
    const edge = nodes[0] as TestNode;
    await until(() => agreedLeader(nodes) !== undefined, CONVERGE_MS, 'a leader');
    const leader = agreedLeader(nodes) as TestNode;
    expect(leader).not.toBe(edge);
    attachClient(edge.router, skillClient('p'));
    await until(() => leader.router.getClient(mirroredId(edge.id, 'p')) !== undefined, 3000, 'the mirror');
    await until(statusIs(edge, 'mirroring'), 3000, 'mirroring status');
  });

  it('logs an upstream URL without the credentials it carries', async () => {
    const { logger, records: logs } = recordingLogger();
    const router = new Router();
    const secretUrl = 'ws://user:hunter2@127.0.0.1:9/hub?token=abc';
    const node = createClusterNode({ router, serverId: 'me:1', clusterId: 'x', mode: 'standalone', upstreamUrl: secretUrl, logger });
    const unreachable = new Promise<void>((resolve) => node.onProxyStatus((s) => s.state === 'unreachable' && resolve()));
    node.start({ wsUrl: 'ws://127.0.0.1:1', clusterUrl: 'ws://127.0.0.1:1/mdp/cluster', metaUrl: 'http://127.0.0.1:1/mdp/meta' });
    await unreachable;
    await node.close();
    await router.close();
    const text = JSON.stringify(logs);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('token=abc');
    expect(logs.find((l) => l.event === 'proxy.upstream_selected')).toMatchObject({ upstream: 'ws://***:***@127.0.0.1:9/hub?***' });
    expect(logs.find((l) => l.event === 'proxy.upstream_unreachable')).toMatchObject({ upstream: 'ws://***:***@127.0.0.1:9/hub?***' });
  });
});
