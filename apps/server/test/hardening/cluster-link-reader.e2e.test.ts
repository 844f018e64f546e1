/**
 * Issue 18, back-pressure on cluster links: a peer that opens a control link, asks the leader for
 * large answers (listPaths of a big catalog) and never reads them used to make the leader buffer
 * every answer for as long as it kept sending (its frames kept the link alive). Now answers past the
 * link's byte cap are refused, and once the peer has not read for the stall time its link is dropped;
 * the leader stays small and serves everyone else. Figures are the child server's own.
 */
import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { systemClock } from '@mdp/core';
import { TestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import { MB, startChild, stopChildren, type ChildServer } from './child.js';
import { read, type ReadResult } from './clients.js';

afterEach(async () => {
  await stopAll();
  await stopChildren();
});

/** A port nothing listens on, for a discovery range that finds nobody. */
async function unusedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function meta(server: ChildServer): Promise<{ serverId: string; cluster: { role: string } }> {
  return (await (await fetch(`${server.http}/mdp/meta`)).json()) as { serverId: string; cluster: { role: string } };
}

async function role(server: ChildServer): Promise<string> {
  return (await meta(server)).cluster.role;
}

/** Resolves once `server` leads its cluster of one (after each election it logs, it is asked). */
async function leading(server: ChildServer): Promise<void> {
  for (let changes = 1; (await role(server)) !== 'leader'; changes++) await server.logged('cluster.leader_changed', changes);
}

const SECRET = 'e2e secret';
const HEADER = { clusterId: 'e2e', serverId: '127.0.0.1:2', term: 0 };

/** A control link to `server` as a member that knows the cluster secret; resolves once the server answered its hello. */
async function controlLink(server: ChildServer): Promise<WebSocket> {
  const to = (await meta(server)).serverId;
  const timestamp = systemClock.wallNow();
  const auth = createHmac('sha256', SECRET).update(`e2e\n${HEADER.serverId}\n${timestamp}\n${to}`).digest('base64url');
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${server.ws}mdp/cluster`);
    ws.once('open', () =>
      ws.send(
        JSON.stringify({
          type: 'clusterHello',
          ...HEADER,
          timestamp,
          auth,
          membershipMode: 'dynamic',
          membershipFingerprint: 'dynamic',
          role: 'follower',
          wsUrl: 'ws://127.0.0.1:2',
          clusterUrl: 'ws://127.0.0.1:2/mdp/cluster',
        }),
      ),
    );
    ws.once('message', () => resolve(ws));
    ws.once('close', (code, reason) => reject(new Error(`control link closed ${code} (${String(reason)}) before the hello`)));
    ws.once('error', reject);
  });
}

/** A leader of a cluster of one whose peers may leave `capBytes` unread and stall for `stallMs`; with a client whose listing is about half a megabyte. */
async function leaderWithBigCatalog(capBytes: number, stallMs: number): Promise<{ server: ChildServer; big: TestClient }> {
  const server = await startChild([
    '--cluster-mode',
    'auto',
    '--cluster-id',
    'e2e',
    '--cluster-secret',
    SECRET,
    // No term or vote kept on disk: the test leaves nothing behind.
    '--cluster-state-dir',
    'none',
    '--discover-start-port',
    String(await unusedPort()),
    '--discover-attempts',
    '1',
    '--serve-default-port',
    'false',
    '--cluster-heartbeat-interval-ms',
    '100',
    '--lease-duration-ms',
    '400',
    '--election-timeout-min-ms',
    '450',
    '--election-timeout-max-ms',
    '600',
    '--max-ws-buffered-bytes',
    String(capBytes),
    '--ws-stall-timeout-ms',
    String(stallMs),
  ]);
  await leading(server);
  const paths = Array.from({ length: 2000 }, (_, i) => skill(`/area${i}/skill.md`, { description: 'd'.repeat(200) }));
  const big = await TestClient.register(server.ws, descriptor('big', paths));
  big.handler = () => 'still here';
  return { server, big };
}

const listPaths = (requestId: string): string =>
  JSON.stringify({ type: 'clusterRpcRequest', ...HEADER, timestamp: systemClock.wallNow(), requestId, method: 'listPaths', params: {} });

describe('a cluster peer that stops reading', () => {
  it('is refused its answers, then loses its link; the leader stays small and serves others', { timeout: 30_000 }, async () => {
    const { server } = await leaderWithBigCatalog(MB, 1000);
    const before = await server.memory(true);

    const link = await controlLink(server);
    // Counted from the start: once the leader drops the link, the peer's next request may meet the
    // reset and close its socket while it still reads nothing.
    let answers = 0;
    link.on('message', () => answers++);
    const closed = new Promise((resolve) => link.once('close', resolve));
    const tcp = (link as unknown as { _socket: Socket })._socket;
    tcp.pause();
    // Listings of about half a megabyte each, asked for in batches and never read, until the leader
    // drops the link. (Each memory look is a round trip through the server's event loop: the pace.)
    let dropped = false;
    void server.logged('cluster.link_not_reading').then(() => (dropped = true));
    let asked = 0;
    while (!dropped) {
      for (let i = 0; i < 100; i++) {
        link.send(listPaths(`r${asked++}`));
      }
      await server.memory();
    }

    // The leader never held the flood (hundreds of listings, over 100 MB): it held about the cap.
    expect(asked).toBeGreaterThanOrEqual(200);

    const after = await server.memory(true);
    expect(after.maxRss - before.rss).toBeLessThan(100 * MB);
    expect(after.heapUsed + after.external - (before.heapUsed + before.external)).toBeLessThan(16 * MB);
    expect((await read(server.http, '/skills/big/area7')) as ReadResult).toMatchObject({ status: 200, body: 'still here' });
    expect(await role(server)).toBe('leader');

    // The peer reads again: its link was dropped, and what reached it is a fraction of what it asked.
    tcp.resume();
    await closed;
    expect(answers).toBeLessThan(asked);
  });

  it('keeps its link while it reads, however slowly: bytes the kernel takes count, not only whole writes', { timeout: 60_000 }, async () => {
    // The default cap and stall time: the slow reader below was dropped with them.
    const { server } = await leaderWithBigCatalog(8 * MB, 5000);
    const link = await controlLink(server);
    const answered = new Set<string>();
    let refused = 0;
    link.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString()) as { type: string; requestId?: string; ok?: boolean };
      if (message.type !== 'clusterRpcResponse' || !message.requestId?.startsWith('p')) return;
      answered.add(message.requestId);
      if (message.ok === false) refused++;
    });
    const closed = new Promise<number>((resolve) => link.once('close', resolve));
    let open = true;
    void closed.then(() => (open = false));
    const tcp = (link as unknown as { _socket: Socket })._socket;
    tcp.pause();
    // One burst of forty half-megabyte listings, past the cap: some are refused.
    for (let i = 0; i < 40; i++) link.send(listPaths(`p${i}`));
    // Then it reads a steady megabyte a second (50 KB every 50 ms), and asks something small every
    // 200 ms as a follower would (a link silent for three leases is dropped). Node hands the kernel
    // the leader's backlog as one write of several megabytes, which takes longer than the stall time
    // to leave though bytes leave all along: the link was dropped after 6 s, with 6 MB read.
    let ticks = 0;
    const reader = setInterval(() => {
      tcp.read(50 * 1024) ?? tcp.read();
      if (++ticks % 4 === 0 && open)
        link.send(
          JSON.stringify({ type: 'clusterRpcRequest', ...HEADER, timestamp: systemClock.wallNow(), requestId: `k${ticks}`, method: 'listClients', params: {} }),
        );
    }, 50);
    try {
      await Promise.race([closed, new Promise<void>((resolve) => link.on('message', () => answered.size === 40 && resolve()))]);
    } finally {
      clearInterval(reader);
    }
    expect(open).toBe(true);
    expect(answered.size).toBe(40);
    expect(refused).toBeGreaterThan(0);
    link.close();
    await closed;
  });
});
