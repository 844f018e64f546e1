/**
 * The default port stays served, in process: when the member holding the first port of the
 * discovery range goes away, the new leader serves that port too (keeping its own), clients that
 * know only that port reach it, and /mdp/meta there tells the truth. Another user's hub's port is
 * never taken. When its owner starts on it again, the holder gives it back (proven with the
 * cluster secret); a server of another cluster or user does not get it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Logger } from '@mdp/core';
import { PORT_RELEASE_PATH, portReleaseRequest } from '@mdp/cluster';
import { parseMetaDocument, type MetaDocument } from '@mdp/protocol';
import { TestClient, descriptor, freePorts, recordingLogger, skill, stopAll, until } from '@mdp/test-kit';
import { createMdpServer, type MdpServer } from '../src/index.js';
import type { MdpClusterOptions } from '../src/cluster.js';
import { TEST_CLUSTER_TIMING, clientChange } from './harness.js';

const servers: MdpServer[] = [];

afterEach(async () => {
  await stopAll();
  for (const s of servers.splice(0)) await s.close();
});

const FAST: MdpClusterOptions = { mode: 'auto', ...TEST_CLUSTER_TIMING };

async function start(port: number, range: number[], extra: Partial<MdpClusterOptions> = {}, logger?: Logger): Promise<MdpServer> {
  const server = createMdpServer({
    host: '127.0.0.1',
    port,
    clusterId: 'dp',
    ...(logger ? { logger } : { logLevel: 'silent' as const }),
    cluster: { ...FAST, discovery: { startPort: range[0], attempts: range.length, intervalMs: 100, probeTimeoutMs: 200 }, ...extra },
  });
  servers.push(server);
  await server.listen();
  return server;
}

async function metaAt(port: number): Promise<MetaDocument> {
  const res = await fetch(`http://127.0.0.1:${port}/mdp/meta`);
  const parsed = parseMetaDocument(await res.json());
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

/** Resolves once `server` leads. */
function leads(server: MdpServer): Promise<void> {
  const node = server.cluster!;
  if (node.meta().role === 'leader') return Promise.resolve();
  return new Promise((resolve) => {
    const off = node.onLeaderChange((c) => {
      if (c.role === 'leader') {
        off();
        resolve();
      }
    });
  });
}

describe('the default port', () => {
  it('is served by the new leader once its holder is gone; clients and /mdp/meta there reach the leader', async () => {
    const range = await freePorts(3);
    const [home, own] = range as [number, number];
    const holder = await start(home, range);
    const watch = recordingLogger();
    const survivor = await start(own, range, {}, watch.logger);
    await Promise.race([leads(holder), leads(survivor)]);

    await holder.close();
    await watch.seen('server.default_port_held');
    // The survivor may take the port before it has let the holder go (its departure, or its lease):
    // wait for that on the survivor's own log lines, then check.
    await until(
      (change) => watch.lines.subscribe(change),
      () => survivor.cluster!.meta().knownMemberCount === 1 || undefined,
      {
        what: () => `the survivor to know only itself (knows ${survivor.cluster!.meta().knownMemberCount})`,
      },
    );
    expect(survivor.cluster!.meta()).toMatchObject({ role: 'leader', knownMemberCount: 1 });

    // /mdp/meta on either port: the leader, with its own endpoints.
    const there = await metaAt(home);
    const here = await metaAt(own);
    expect(there.serverId).toBe(`127.0.0.1:${own}`);
    expect(there.endpoints).toEqual(here.endpoints);
    expect(there.endpoints.ws).toBe(`ws://127.0.0.1:${own}`);
    expect(there.cluster).toMatchObject({ role: 'leader', leaderId: `127.0.0.1:${own}` });

    // A client that knows only the default port registers there and is readable on both ports.
    const client = await TestClient.connect(`ws://127.0.0.1:${home}`);
    client.handler = () => '# hello from the default port';
    const listed = clientChange(survivor, 'app', true);
    client.send({ type: 'registerClient', client: descriptor('app', [skill('/docs/skill.md')]) });
    await listed;
    for (const port of [home, own]) {
      const res = await fetch(`http://127.0.0.1:${port}/skills/app/docs`);
      expect(await res.text()).toBe('# hello from the default port');
    }

    // Closing lets the port go, and ends the connections it accepted.
    await survivor.close();
    await client.closed;
    await expect(fetch(`http://127.0.0.1:${home}/mdp/meta`)).rejects.toThrow();
  });

  it("is not taken from another user's hub: a server that cannot prove its secret leaves that port alone", async () => {
    const range = await freePorts(3);
    const [home, mine, later] = range as [number, number, number];
    const theirs = await start(home, range, { secret: 'theirs' });
    const watch = recordingLogger({ level: 'info' });
    const me = await start(mine, range, { secret: 'mine' }, watch.logger);
    await Promise.all([leads(theirs), leads(me)]);
    await theirs.close();
    // Another server of theirs starts after: having never seen a foreign holder, it takes the port.
    const theirWatch = recordingLogger({ level: 'info' });
    const theirNext = await start(later, range, { secret: 'theirs' }, theirWatch.logger);
    await theirWatch.seen('server.default_port_held');
    expect((await metaAt(home)).serverId).toBe(`127.0.0.1:${later}`);
    expect(theirNext.cluster!.meta().knownMemberCount).toBe(1);
    // Mine led all along, retrying at every heartbeat while the port was free: it never took it.
    expect(me.cluster!.meta()).toMatchObject({ role: 'leader', knownMemberCount: 1 });
    expect(watch.events()).not.toContain('server.default_port_held');
  });

  it('is not served with serveDefaultPort false, nor by a standalone server', async () => {
    const range = await freePorts(2);
    const [home, own] = range as [number, number];
    const watch = recordingLogger({ level: 'info' });
    const server = await start(own, range, { serveDefaultPort: false }, watch.logger);
    await leads(server);
    const standalone = createMdpServer({
      host: '127.0.0.1',
      port: 0,
      logLevel: 'silent',
      cluster: { mode: 'standalone', discovery: { startPort: home, attempts: 2 } },
    });
    servers.push(standalone);
    await standalone.listen();
    expect(server.cluster!.servesDefaultPort()).toBe(true);
    await expect(fetch(`http://127.0.0.1:${home}/mdp/meta`)).rejects.toThrow();
    expect(watch.events()).not.toContain('server.default_port_held');
  });
});

describe('the default port, given back', () => {
  const ours = { secret: 'ours' };

  /** Owner on `home`, survivor on `own`; the owner closes and the survivor holds `home`. */
  async function held(range: number[]): Promise<{ survivor: MdpServer; watch: ReturnType<typeof recordingLogger> }> {
    const [home, own] = range as [number, number];
    const owner = await start(home, range, ours);
    const watch = recordingLogger({ level: 'info' });
    const survivor = await start(own, range, ours, watch.logger);
    await Promise.race([leads(owner), leads(survivor)]);
    await owner.close();
    await watch.seen('server.default_port_held');
    return { survivor, watch };
  }

  it('goes back to its owner when it starts on it again; the connections there are cut', async () => {
    const range = await freePorts(3);
    const [home, own] = range as [number, number];
    const { watch } = await held(range);
    const client = await TestClient.connect(`ws://127.0.0.1:${home}`);

    const ownerWatch = recordingLogger({ level: 'info' });
    const again = await start(home, range, ours, ownerWatch.logger);
    expect(again.info?.port).toBe(home);
    await ownerWatch.seen('server.port_claim_asked', { port: home, holder: `127.0.0.1:${own}` });
    await watch.seen('server.default_port_yielded', { port: home, to: `127.0.0.1:${home}` });
    await client.closed;
    expect((await metaAt(home)).serverId).toBe(`127.0.0.1:${home}`);
    expect((await metaAt(own)).serverId).toBe(`127.0.0.1:${own}`);
  });

  it("is not given to another user's server, nor to a server of another cluster: their bind fails as before", async () => {
    const range = await freePorts(3);
    const [home, own] = range as [number, number];
    const { watch } = await held(range);
    const discovery = { startPort: home, attempts: range.length, intervalMs: 100, probeTimeoutMs: 200 };
    const theirs = createMdpServer({ host: '127.0.0.1', port: home, clusterId: 'dp', logLevel: 'silent', cluster: { ...FAST, discovery, secret: 'theirs' } });
    const otherCluster = createMdpServer({
      host: '127.0.0.1',
      port: home,
      clusterId: 'other',
      logLevel: 'silent',
      cluster: { ...FAST, discovery, secret: 'ours' },
    });
    servers.push(theirs, otherCluster);
    await expect(theirs.listen()).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await watch.seen('server.port_release_refused', { port: home, reason: 'cluster secret not proven' });
    await expect(otherCluster.listen()).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect((await metaAt(home)).serverId).toBe(`127.0.0.1:${own}`);
    expect(watch.events()).not.toContain('server.default_port_yielded');
  });

  it('is asked for only by a proven request, once: bad ones get a clear refusal', async () => {
    const range = await freePorts(3);
    const [home, own] = range as [number, number];
    const server = await start(own, range, ours);
    await leads(server);
    const url = `http://127.0.0.1:${own}${PORT_RELEASE_PATH}`;
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    const request = (over: { to?: string; port?: number; secret?: string } = {}) =>
      portReleaseRequest(over.secret ?? 'ours', 'dp', {
        serverId: `127.0.0.1:${home}`,
        to: over.to ?? `127.0.0.1:${own}`,
        port: over.port ?? home,
        timestamp: systemClock.wallNow(),
      });
    const refused = async (res: Response, status: number, error: RegExp) => {
      expect(res.status).toBe(status);
      expect((await res.json()) as unknown).toEqual({ error: expect.stringMatching(error) });
    };

    const get = await fetch(url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    await refused(await post(request(), { origin: 'http://evil.example' }), 403, /web pages/);
    await refused(await post('nope'), 400, /not JSON/);
    await refused(await post({ hello: 1 }), 400, /^not a port release request: /);
    await refused(await post('x'.repeat(5000)), 413, /exceeds/);
    await refused(await post(request({ secret: 'theirs' })), 403, /cluster secret not proven/);
    await refused(await post(request({ to: '127.0.0.1:1' })), 403, /another server/);
    await refused(await post(request({ port: own })), 409, /not served here as a second port/);

    const body = request();
    const ok = await post(body);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ released: true, port: home });
    // Asked again: released again, but a copy of a request already acted on changes nothing.
    expect((await post(request())).status).toBe(200);
    await refused(await post(body), 403, /used before/);
  });

  it('is not asked of a server whose own port it is', async () => {
    const range = await freePorts(2);
    const [home, own] = range as [number, number];
    const server = await start(home, range, ours);
    await leads(server);
    const body = portReleaseRequest('ours', 'dp', { serverId: `127.0.0.1:${own}`, to: `127.0.0.1:${home}`, port: home, timestamp: systemClock.wallNow() });
    const res = await fetch(`http://127.0.0.1:${home}${PORT_RELEASE_PATH}`, { method: 'POST', body: JSON.stringify(body) });
    expect(res.status).toBe(409);
    expect((await metaAt(home)).serverId).toBe(`127.0.0.1:${home}`);
  });
});
