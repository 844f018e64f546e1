/**
 * Cluster end to end, in process: real servers (createMdpServer) on loopback that find each other,
 * elect a leader and mirror their clients into it, so a follower's client is readable through the
 * leader's skill routes.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { parseMetaDocument, type AuthContext, type MetaDocument } from '@mdp/protocol';
import { systemClock, type HostApi } from '@mdp/core';
import { probeMeta } from '@mdp/cluster';
import { Changes, TestClient, descriptor, freePorts, recordingLogger, skill, stopAll, until } from '@mdp/test-kit';
import { createMdpServer, type MdpServer, type MdpServerOptions } from '../src/index.js';
import { tokenSecret, type MdpClusterOptions } from '../src/cluster.js';
import { TEST_CLUSTER_TIMING, clientChange, tlsFetch } from './harness.js';
import { createPki, type TestCa, type TestPki } from './pki.js';

const servers: MdpServer[] = [];

afterEach(async () => {
  await stopAll();
  for (const s of servers.splice(0)) await s.close();
});

const FAST: MdpClusterOptions = { mode: 'auto', ...TEST_CLUSTER_TIMING };

async function startClusterServers(
  count: number,
  extra: (i: number) => Partial<MdpClusterOptions> = () => ({}),
  serverOptions: Partial<MdpServerOptions> = {},
  /** Ports after the servers' that discovery probes too (for a fake peer to listen on). */
  spare = 0,
): Promise<MdpServer[]> {
  const range = await freePorts(count + spare);
  const ports = range.slice(0, count);
  const started: MdpServer[] = [];
  for (const [i, port] of ports.entries()) {
    const server = createMdpServer({
      ...serverOptions,
      host: '127.0.0.1',
      port,
      logLevel: 'silent',
      clusterId: 'e2e',
      cluster: { ...FAST, discovery: { startPort: range[0], attempts: count + spare, intervalMs: 150, probeTimeoutMs: 200 }, ...extra(i) },
    });
    servers.push(server);
    started.push(server);
  }
  await Promise.all(started.map((s) => s.listen()));
  return started;
}

/** Client `big` on `server`, whose listing is about 1.2 MB: more than a link's default frame (1 MiB), less than one catalog may hold. */
function registerBigCatalog(server: MdpServer): Promise<TestClient> {
  return TestClient.register(
    server.info?.urls.ws as string,
    descriptor(
      'big',
      Array.from({ length: 4000 }, (_, i) => skill(`/area${i}/skill.md`, { description: 'd'.repeat(200) })),
    ),
  );
}

/** Every path of `clientId` through `host`, page by page (1000 a page at most), each listed once. */
async function walkPaths(host: HostApi, clientId: string): Promise<Set<string>> {
  const seen = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await host.listPaths({ clientId, limit: 1000, cursor });
    for (const path of page.paths) {
      expect(seen.has(path.path)).toBe(false);
      seen.add(path.path);
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return seen;
}

function meta(server: MdpServer): MetaDocument['cluster'] {
  return (server.cluster as NonNullable<MdpServer['cluster']>).meta();
}

/** Resolves with the leader once every server agrees on one: role, leader and term change only with a leader change. */
function agreedLeader(group: MdpServer[], timeoutMs = 6000): Promise<MdpServer> {
  const changes = group.map((s) => (listener: () => void) => (s.cluster as NonNullable<MdpServer['cluster']>).onLeaderChange(listener));
  return until(
    changes,
    () => {
      const leaders = group.filter((s) => meta(s).role === 'leader');
      const leader = leaders[0];
      if (leaders.length !== 1 || !leader) return undefined;
      const { term } = meta(leader);
      return group.every((s) => meta(s).leaderId === leader.info?.serverId && meta(s).term === term) && leader;
    },
    { timeoutMs, what: 'an agreed leader' },
  );
}

const HELLO = { membershipMode: 'dynamic', membershipFingerprint: 'dynamic', role: 'follower' } as const;

/** The hello proof of a cluster secret for a hello from `serverId` to `to` (the HMAC `@mdp/cluster` checks). */
function proofOf(secret: string, serverId: string, timestamp: number, to: string): string {
  return createHmac('sha256', secret).update(`e2e\n${serverId}\n${timestamp}\n${to}`).digest('base64url');
}

/**
 * A raw control link to `server`: a hello (proving `secret` for the hello's addressee `to`, when
 * given; or `replay`, a hello sent as it is), then a listClients RPC. Resolves with the types of the
 * messages received and the close code, once the link closes or the RPC is answered.
 */
function rawControlLink(
  server: MdpServer,
  headers: Record<string, string>,
  proof?: { secret: string; to: string; ageMs?: number } | { replay: string },
): Promise<{ code: number; types: string[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${server.info?.urls.ws}/mdp/cluster`, { headers });
    const types: string[] = [];
    const replayed = proof && 'replay' in proof ? (JSON.parse(proof.replay) as { serverId: string; timestamp: number }) : undefined;
    const age = proof && 'ageMs' in proof ? (proof.ageMs ?? 0) : 0;
    const h = { clusterId: 'e2e', serverId: replayed?.serverId ?? '127.0.0.1:2', term: 0, timestamp: replayed?.timestamp ?? systemClock.wallNow() - age };
    ws.on('open', () => {
      if (proof && 'replay' in proof) ws.send(proof.replay);
      else {
        const auth = proof === undefined ? {} : { auth: proofOf(proof.secret, h.serverId, h.timestamp, proof.to) };
        ws.send(JSON.stringify({ type: 'clusterHello', ...h, ...HELLO, ...auth, wsUrl: 'ws://127.0.0.1:2', clusterUrl: 'ws://127.0.0.1:2/mdp/cluster' }));
      }
      ws.send(JSON.stringify({ type: 'clusterRpcRequest', ...h, requestId: 'r1', method: 'listClients' }));
    });
    ws.on('message', (data) => {
      const type = (JSON.parse(String(data)) as { type: string }).type;
      types.push(type);
      if (type === 'clusterRpcResponse') ws.close(1000);
    });
    ws.on('close', (code) => resolve({ code, types }));
    ws.on('error', reject);
  });
}

/**
 * A fake peer on `port` that the servers' discovery finds: it serves a copy of `template` as its
 * /mdp/meta, and on every control link they open it records the upgrade's Authorization header,
 * answers with a hello that proves nothing and asks for listClients.
 */
async function fakePeer(port: number, template: MetaDocument) {
  const seen = { dials: 0, authorizations: [] as (string | undefined)[], hellos: [] as string[], rpcAnswers: 0, closes: [] as number[] };
  const changes = new Changes();
  const base = `127.0.0.1:${port}`;
  const meta: MetaDocument = {
    ...template,
    serverId: base,
    endpoints: {
      ws: `ws://${base}`,
      httpLoop: `http://${base}/mdp/http-loop`,
      auth: `http://${base}/mdp/auth`,
      meta: `http://${base}/mdp/meta`,
      cluster: `ws://${base}/mdp/cluster`,
    },
    cluster: { ...template.cluster, role: 'follower', leaderId: '', leaderUrl: '' },
  };
  const wss = new WebSocketServer({ noServer: true });
  const http = createHttpServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(meta)));
  http.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      seen.dials += 1;
      seen.authorizations.push(req.headers.authorization);
      changes.emit();
      ws.on('close', (code) => {
        seen.closes.push(code);
        changes.emit();
      });
      const h = { clusterId: 'e2e', serverId: base, term: 0, timestamp: systemClock.wallNow() };
      ws.on('message', (data) => {
        const type = (JSON.parse(String(data)) as { type: string }).type;
        if (type === 'clusterRpcResponse') seen.rpcAnswers += 1;
        if (type !== 'clusterHello') return;
        seen.hellos.push(String(data));
        ws.send(JSON.stringify({ type: 'clusterHello', ...h, ...HELLO, wsUrl: `ws://${base}`, clusterUrl: `ws://${base}/mdp/cluster` }));
        ws.send(JSON.stringify({ type: 'clusterRpcRequest', ...h, requestId: 'f1', method: 'listClients' }));
      });
    }),
  );
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  return {
    seen,
    changes: changes.subscribe,
    close: async (): Promise<void> => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

describe('cluster of mdp servers', () => {
  it("elects one leader, reports it in /mdp/meta, and serves a follower's client through the leader's skill route", async () => {
    const group = await startClusterServers(3);
    const leader = await agreedLeader(group);
    const follower = group.find((s) => s !== leader) as MdpServer;

    for (const s of group) {
      const doc = parseMetaDocument(await (await fetch(`${s.info?.urls.http}/mdp/meta`)).json());
      expect(doc.ok).toBe(true);
      if (!doc.ok) continue;
      expect(doc.value.features).toEqual({ upstreamProxy: true, clusterControl: true });
      expect(doc.value.cluster).toMatchObject({
        id: 'e2e',
        role: s === leader ? 'leader' : 'follower',
        leaderId: leader.info?.serverId,
        leaderUrl: leader.info?.urls.ws,
        knownMemberCount: 3,
        quorumSize: 2,
        membershipMode: 'dynamic',
      });
    }

    const client = await TestClient.connect(follower.info?.urls.ws as string);
    client.handler = (call) => `# review guide (${call.path})`;
    const mirroredId = `${follower.info?.serverId}.docs`;
    const mirrored = clientChange(leader, mirroredId, true);
    client.send({ type: 'registerClient', client: descriptor('docs', [skill('/review/skill.md')]) });
    await mirrored;
    expect(leader.router.getClient(mirroredId)?.descriptor.metadata).toEqual({
      mdpProxy: { serverId: follower.info?.serverId, clientId: 'docs', registeredAt: expect.any(Number) },
    });

    const res = await fetch(`${leader.info?.urls.http}/skills/${encodeURIComponent(mirroredId)}/review?depth=2`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(await res.text()).toBe('# review guide (/review/skill.md)');
    expect(client.calls[0]).toMatchObject({ type: 'callClient', method: 'GET', path: '/review/skill.md', query: { depth: '2' } });

    const nested = await fetch(`${leader.info?.urls.http}/${encodeURIComponent(mirroredId)}/skills/review`);
    expect(nested.status).toBe(200);

    const gone = clientChange(leader, mirroredId, false);
    await client.close();
    await gone;
    expect((await fetch(`${leader.info?.urls.http}/skills/${encodeURIComponent(mirroredId)}/review`)).status).toBe(404);
  });

  const token = 'cluster-token';
  const bearer = { authorization: `Bearer ${token}` };
  it.each([
    { policy: 'authTokens', secret: tokenSecret(token), cluster: {}, server: { authTokens: [token] } },
    {
      policy: 'an authPolicy of its own with cluster.secret',
      secret: 'shared secret',
      cluster: { secret: 'shared secret', upstreamHeaders: bearer },
      server: { authPolicy: { verify: (auth: AuthContext | undefined) => auth?.token === token, cookieSecret: Buffer.alloc(32, 7) } },
    },
  ])(
    'with $policy: members link, elect and mirror; a peer that cannot prove the secret gets no RPC answered and no token, either way',
    async ({ secret, cluster, server }) => {
      const group = await startClusterServers(2, () => cluster, server, 1);
      const leader = await agreedLeader(group);
      const follower = group.find((s) => s !== leader) as MdpServer;

      const client = await TestClient.connect(follower.info?.urls.ws as string, { headers: bearer });
      client.handler = () => 'guarded text';
      const mirroredId = `${follower.info?.serverId}.guarded`;
      const mirrored = clientChange(leader, mirroredId, true);
      client.send({ type: 'registerClient', client: descriptor('guarded', [skill('/g/skill.md')]) });
      await mirrored;
      const url = `${leader.info?.urls.http}/skills/${encodeURIComponent(mirroredId)}/g`;
      expect((await fetch(url)).status).toBe(401);
      expect(await (await fetch(url, { headers: bearer })).text()).toBe('guarded text');

      // Links to the servers: without a proof (a bearer token is not one) the hello is refused, and the RPC after it never read.
      const self = leader.info?.serverId as string;
      for (const headers of [{}, bearer]) expect(await rawControlLink(leader, headers)).toEqual({ code: 1008, types: [] });
      expect((await rawControlLink(leader, {}, { secret: 'wrong secret', to: self })).code).toBe(1008);
      // A proof of the right secret addressed to another server is refused too, and so is one 10 minutes old.
      expect((await rawControlLink(leader, {}, { secret, to: self, ageMs: 10 * 60_000 })).code).toBe(1008);
      expect((await rawControlLink(leader, {}, { secret, to: follower.info?.serverId as string })).code).toBe(1008);
      // The same exchange with the proof is answered: the refusals above are the secret, not a bad hello.
      const allowed = await rawControlLink(leader, {}, { secret, to: self });
      expect(allowed.types[0]).toBe('clusterHello');
      expect(allowed.types).toContain('clusterRpcResponse');

      // Links from the servers: a fake peer in the discovery range is dialled, but sees no token and gets no answer.
      const template = parseMetaDocument(await (await fetch(`${leader.info?.urls.http}/mdp/meta`)).json());
      if (!template.ok) throw new Error(template.error);
      const fake = await fakePeer(Math.max(...group.map((s) => s.info?.port as number)) + 1, template.value);
      try {
        await until(fake.changes, () => fake.seen.dials >= 2, { timeoutMs: 4000, what: 'the servers to dial the fake peer' });
        // Each link ends unanswered: whatever a server would have answered comes before its close.
        await until(fake.changes, () => fake.seen.closes.length >= 2, { timeoutMs: 4000, what: 'the servers to drop the fake peer' });
        expect(fake.seen.authorizations.every((a) => a === undefined)).toBe(true);
        expect(fake.seen.rpcAnswers).toBe(0);
        // What the fake was sent cannot be replayed to a member: each hello was addressed to the fake.
        const fromFollower = fake.seen.hellos.find((text) => text.includes(`"serverId":"${follower.info?.serverId}"`));
        expect(fromFollower).toBeDefined();
        expect(await rawControlLink(leader, {}, { replay: fromFollower as string })).toEqual({ code: 1008, types: [] });
      } finally {
        await fake.close();
      }
      expect(client.calls).toHaveLength(1);
    },
  );

  it("a follower's host answers through the leader: a websocket client of the other follower is listed and called", async () => {
    const group = await startClusterServers(3);
    const leader = await agreedLeader(group);
    const [f1, f2] = group.filter((s) => s !== leader) as [MdpServer, MdpServer];
    const client = await TestClient.connect(f1.info?.urls.ws as string);
    client.handler = (call) => ({ echoed: call.body });
    const mirroredId = `${f1.info?.serverId}.tool`;
    const mirrored = clientChange(leader, mirroredId, true);
    client.send({ type: 'registerClient', client: descriptor('tool', [{ type: 'endpoint', method: 'POST', path: '/act' }]) });
    await mirrored;

    const host = (f2.cluster as NonNullable<MdpServer['cluster']>).hostApi;
    const { clients } = await host.listClients({ search: 'tool' });
    expect(clients.map((c) => c.id)).toEqual([mirroredId]);
    expect((await host.listPaths({ clientId: 'tool' })).paths).toEqual([expect.objectContaining({ clientId: mirroredId, path: '/act', method: 'POST' })]);
    expect(await host.callPath({ clientId: 'tool', method: 'POST', path: '/act', body: { n: 2 } })).toEqual({ ok: true, data: { echoed: { n: 2 } } });
    expect(await host.callPaths({ method: 'POST', path: '/act', body: 'x' })).toEqual({ results: [{ clientId: mirroredId, ok: true, data: { echoed: 'x' } }] });
  });

  it('a follower walks a listing larger than one cluster frame page by page through the leader, and the links stay up', async () => {
    const group = await startClusterServers(2);
    const leader = await agreedLeader(group);
    const follower = group.find((s) => s !== leader) as MdpServer;
    const client = await registerBigCatalog(leader);
    const host = (follower.cluster as NonNullable<MdpServer['cluster']>).hostApi;
    const paths = await walkPaths(host, 'big');
    expect(paths.size).toBe(4000);
    expect(meta(follower).leaderId).toBe(leader.info?.serverId);
    client.socket.terminate();
  });

  it("--max-message-bytes sets the frame of cluster links too: the leader's pages fit it", async () => {
    const maxMessageBytes = 300_000;
    const group = await startClusterServers(2, () => ({}), { maxMessageBytes });
    const leader = await agreedLeader(group);
    const follower = group.find((s) => s !== leader) as MdpServer;
    // 1100 paths of about 290 bytes each as listed: 1000 of them would pass one frame.
    const client = await TestClient.register(
      leader.info?.urls.ws as string,
      descriptor(
        'big',
        Array.from({ length: 1100 }, (_, i) => skill(`/area${i}/skill.md`, { description: 'd'.repeat(200) })),
      ),
    );
    const host = (follower.cluster as NonNullable<MdpServer['cluster']>).hostApi;
    const first = await host.listPaths({ clientId: 'big', limit: 1000 });
    expect(first.paths.length).toBeLessThan(1000);
    expect(Buffer.byteLength(JSON.stringify(first))).toBeLessThanOrEqual(maxMessageBytes);
    expect((await walkPaths(host, 'big')).size).toBe(1100);
    client.socket.terminate();
  });

  it('a leader that shuts down resigns and the others elect at once', async () => {
    const group = await startClusterServers(3, () => ({ electionTimeoutMinMs: 60_000, electionTimeoutMaxMs: 90_000 }));
    const leader = await agreedLeader(group);
    const term = meta(leader).term;
    await leader.close();
    const rest = group.filter((s) => s !== leader);
    const next = await agreedLeader(rest, 5000);
    expect(meta(next).term).toBeGreaterThan(term);
  });

  it('auto mode: a server whose port is held by an MDP hub takes the next free port of the range and follows it', async () => {
    const ports = await freePorts(3);
    const discovery = { startPort: ports[0], attempts: 3, intervalMs: 150, probeTimeoutMs: 200 };
    const hub = createMdpServer({ host: '127.0.0.1', port: ports[0], logLevel: 'silent', cluster: { ...FAST, discovery } });
    servers.push(hub);
    await hub.listen();
    const second = createMdpServer({ host: '127.0.0.1', port: ports[0], logLevel: 'silent', cluster: { ...FAST, discovery, portFallback: true } });
    servers.push(second);
    const info = await second.listen();
    expect(info.port).toBe(ports[1]);
    const leader = await agreedLeader([hub, second]);
    expect([hub, second]).toContain(leader);
    expect(meta(second).knownMemberCount).toBe(2);
  });

  it('without cluster options a server is standalone; a port held by a non-MDP process is still an error', async () => {
    const [port] = await freePorts(1);
    // Something that accepts connections but never answers HTTP.
    const blocker = createServer((socket) => socket.on('error', () => undefined));
    const sockets = new Set<import('node:net').Socket>();
    blocker.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', () => resolve()));
    try {
      const server = createMdpServer({
        host: '127.0.0.1',
        port,
        logLevel: 'silent',
        cluster: { ...FAST, portFallback: true, discovery: { startPort: port as number, attempts: 3 } },
      });
      servers.push(server);
      await expect(server.listen()).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => blocker.close(r));
    }
    const solo = createMdpServer({ host: '127.0.0.1', port: 0, logLevel: 'silent' });
    servers.push(solo);
    await solo.listen();
    expect(solo.cluster?.mode).toBe('standalone');
    expect(meta(solo)).toMatchObject({ role: 'leader', term: 0, knownMemberCount: 1 });
  });
});

describe('cluster on TLS (--tls-key, --tls-cert, --tls-ca)', () => {
  let pki: TestPki;
  let ca: TestCa;
  beforeAll(() => {
    pki = createPki();
    ca = pki.ca('cluster');
  });
  afterAll(() => pki.remove());

  it("elects over wss, mirrors a follower's client into the leader, and fails over to a new leader that serves it", async () => {
    const group = await startClusterServers(3, () => ({}), { tls: ca.tls(ca.issue('member')) });
    const leader = await agreedLeader(group);
    const get = tlsFetch(ca.ca);
    for (const s of group) {
      const doc = parseMetaDocument(await (await get(`${s.info?.urls.http}/mdp/meta`)).json());
      if (!doc.ok) throw new Error(doc.error);
      expect(doc.value.endpoints.cluster).toBe(`wss://127.0.0.1:${s.info?.port}/mdp/cluster`);
      expect(doc.value.cluster).toMatchObject({
        leaderId: leader.info?.serverId,
        leaderUrl: leader.info?.urls.ws,
        knownMemberCount: 3,
        reachableMemberCount: 3,
      });
    }
    expect(leader.info?.urls.ws).toMatch(/^wss:/);

    const [follower, other] = group.filter((s) => s !== leader) as [MdpServer, MdpServer];
    const client = await TestClient.connect(follower.info?.urls.ws as string, { ca: ca.ca });
    client.handler = (call) => `read ${call.path}`;
    const mirroredId = `${follower.info?.serverId}.docs`;
    const mirrored = clientChange(leader, mirroredId, true);
    client.send({ type: 'registerClient', client: descriptor('docs', [skill('/guide/skill.md')]) });
    await mirrored;
    expect(leader.router.getClient(mirroredId)).toMatchObject({ secure: true });
    expect(await (await get(`${leader.info?.urls.http}/skills/${encodeURIComponent(mirroredId)}/guide`)).text()).toBe('read /guide/skill.md');

    // The leader goes; the two left elect one of themselves, and the client is read through it.
    const term = meta(leader).term;
    await leader.close();
    const next = await agreedLeader([follower, other]);
    expect(meta(next).term).toBeGreaterThan(term);
    const id = next === follower ? 'docs' : mirroredId;
    await clientChange(next, id, true);
    expect(await (await get(`${next.info?.urls.http}/skills/${encodeURIComponent(id)}/guide`)).text()).toBe('read /guide/skill.md');
  });

  it('auto mode: a port held by an MDP hub on TLS is recognised over HTTPS, and the next free port of the range taken', async () => {
    const ports = await freePorts(2);
    const discovery = { startPort: ports[0], attempts: 2, intervalMs: 150, probeTimeoutMs: 200 };
    const tls = ca.tls(ca.issue('member'));
    const [hub, second] = [false, true].map((portFallback) =>
      createMdpServer({ host: '127.0.0.1', port: ports[0], logLevel: 'silent', clusterId: 'e2e', tls, cluster: { ...FAST, discovery, portFallback } }),
    ) as [MdpServer, MdpServer];
    servers.push(hub, second);
    await hub.listen();
    expect((await second.listen()).port).toBe(ports[1]);
    expect([hub, second]).toContain(await agreedLeader([hub, second]));
  });

  it("a node whose certificate comes from another CA is no member: each side refuses the other's certificate", async () => {
    const ports = await freePorts(3);
    const discovery = { startPort: ports[0], attempts: 3, intervalMs: 150, probeTimeoutMs: 200 };
    const stranger = pki.ca('outsider-ca');
    // The stranger listens first, so the members' first discovery round, which comes before any election, probes it.
    const rogue = createMdpServer({
      host: '127.0.0.1',
      port: ports[2],
      logLevel: 'silent',
      clusterId: 'e2e',
      tls: stranger.tls(stranger.issue('outsider')),
      cluster: { ...FAST, discovery },
    });
    servers.push(rogue);
    await rogue.listen();
    const member = ca.issue('member');
    const group = ports
      .slice(0, 2)
      .map((port) => createMdpServer({ host: '127.0.0.1', port, logLevel: 'silent', clusterId: 'e2e', tls: ca.tls(member), cluster: { ...FAST, discovery } }));
    servers.push(...group);
    await Promise.all(group.map((s) => s.listen()));
    const leader = await agreedLeader(group);
    for (const s of group) expect(meta(s)).toMatchObject({ leaderId: leader.info?.serverId, knownMemberCount: 2, reachableMemberCount: 2 });
    // The stranger, finding no peer it trusts, leads a cluster of one.
    await agreedLeader([rogue]);
    expect(meta(rogue)).toMatchObject({ knownMemberCount: 1, reachableMemberCount: 1 });
    // What each side's probe says of the other.
    const seen = await probeMeta(rogue.info?.urls.http as string, { tls: { ca: ca.ca } });
    expect(seen).toMatchObject({ ok: false, kind: 'not-mdp', reason: expect.stringMatching(/^TLS certificate not trusted: /) });
    expect(await probeMeta(leader.info?.urls.http as string, { tls: { ca: stranger.ca } })).toMatchObject({ ok: false, kind: 'not-mdp' });
  });

  it("with peer certificates, /mdp/cluster refuses a node of another CA even when it trusts the cluster's CA and dials in", async () => {
    const { logger, seen } = recordingLogger({ level: 'warn' });
    const refused = seen('cluster.peer_certificate_refused');
    const group = await startClusterServers(2, () => ({}), { tls: { ...ca.tls(ca.issue('member')), peerCertificates: true }, logger }, 1);
    const leader = await agreedLeader(group);
    // Its certificate is from its own CA; it trusts the cluster's, so it can probe the members and dial them.
    const stranger = pki.ca('stranger-ca');
    const rogue = createMdpServer({
      host: '127.0.0.1',
      port: Math.max(...group.map((s) => s.info?.port as number)) + 1,
      logLevel: 'silent',
      clusterId: 'e2e',
      tls: { ...stranger.tls(stranger.issue('rogue'), false), caFile: ca.caFile },
      cluster: { ...FAST, discovery: { startPort: group[0]!.info?.port, attempts: 3, intervalMs: 150, probeTimeoutMs: 200 } },
    });
    servers.push(rogue);
    await rogue.listen();

    // It dialled a member's /mdp/cluster with its certificate and was turned away.
    expect(await refused).toMatchObject({ level: 'warn', remote: '127.0.0.1', reason: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    // The two still form one cluster of two (with these short leases a loaded machine may move the
    // lead between them meanwhile: which one leads is not the point).
    const still = await agreedLeader(group);
    for (const s of group) expect(meta(s)).toMatchObject({ leaderId: still.info?.serverId, knownMemberCount: 2, reachableMemberCount: 2 });
    expect(meta(rogue)).toMatchObject({ reachableMemberCount: 1, leaderId: '' });
    expect(meta(rogue).role).not.toBe('leader');

    // The gate itself: /mdp/cluster answers 403 to a connection without a client certificate from the CA.
    const status = (options: { cert?: Buffer; key?: Buffer }): Promise<number> =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(`${leader.info?.urls.ws}/mdp/cluster`, { ca: ca.ca, ...options });
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          ws.terminate();
        });
        ws.on('open', () => {
          resolve(101);
          ws.terminate();
        });
        ws.on('error', reject);
      });
    expect(await status({})).toBe(403);
    const strangerCert = stranger.issue('dialer');
    expect(await status({ cert: readFileSync(strangerCert.certFile), key: readFileSync(strangerCert.keyFile) })).toBe(403);
    const member = ca.issue('dialer');
    expect(await status({ cert: member.cert, key: readFileSync(member.keyFile) })).toBe(101);
  });
});
