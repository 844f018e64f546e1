/**
 * A hub that stops reading what a mirror sends it (backlog.ts): the mirror refuses the answers it
 * cannot send, drops its socket once the hub has read nothing for the stall time, and dials again.
 * The hub is a fake: an HTTP server with a /mdp/meta and a `ws` server that asks for large answers.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { Router } from '@mdp/core';
import { buildMetaDocument, metaEndpoints, standaloneClusterView } from '@mdp/protocol';
import { closeServer, listen, recordingLogger } from '@mdp/test-kit';
import { createClusterNode, type ClusterNode } from '../src/index.js';
import { attachClient, skillClient } from './harness.js';

const SKILL = '/docs/review/skill.md';
const closers: Array<() => Promise<unknown>> = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await Promise.all(servers.splice(0).map(closeServer));
});

/** A hub that takes mirrors; each socket it accepts is handed to `onMirror` once the mirror registered. */
async function fakeHub(onMirror: (ws: WebSocket, clientId: string) => void): Promise<{ port: number; sockets: WebSocket[] }> {
  const sockets: WebSocket[] = [];
  const wss = new WebSocketServer({ noServer: true });
  const hub = createServer((_req, res) => {
    const { port } = hub.address() as AddressInfo;
    const base = `127.0.0.1:${port}`;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        buildMetaDocument(base, metaEndpoints(base), standaloneClusterView('x', base, `ws://${base}`, 4000), { upstreamProxy: true, clusterControl: false }),
      ),
    );
  });
  hub.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.push(ws);
      ws.once('message', (data) => {
        const message = JSON.parse(String(data)) as { type: string; client?: { id: string } };
        if (message.type === 'registerClient' && message.client) onMirror(ws, message.client.id);
      });
    }),
  );
  servers.push(hub);
  closers.push(async () => {
    for (const ws of wss.clients) ws.terminate();
  });
  return { port: await listen(hub), sockets };
}

describe('a hub that stops reading its mirrors', () => {
  it('is refused answers past the cap, then the mirror drops its socket and dials again', async () => {
    const { logger, records, lines, next } = recordingLogger();
    let calls = 0;
    const asking = new Set<WebSocket>();
    const hub = await fakeHub((ws, clientId) => {
      if (hub.sockets.length > 1) return; // the second socket: the mirror dialled again
      // Stop reading, and keep asking for answers of 64 KB while the socket is open.
      (ws as unknown as { _socket: Socket })._socket.pause();
      asking.add(ws);
      const ask = (): void => {
        if (!asking.has(ws)) return;
        for (let i = 0; i < 8; i++) ws.send(JSON.stringify({ type: 'callClient', requestId: `c${calls++}`, clientId, method: 'GET', path: SKILL }));
        setImmediate(ask);
      };
      ask();
    });
    const router = new Router();
    attachClient(router, skillClient('c1'), () => 'x'.repeat(64 * 1024));
    const node: ClusterNode = createClusterNode({
      router,
      serverId: 'me:1',
      clusterId: 'x',
      mode: 'standalone',
      upstreamUrl: `127.0.0.1:${hub.port}`,
      maxBufferedBytes: 256 * 1024,
      stallTimeoutMs: 300,
      proxyReconnectMinMs: 10,
      logger,
    });
    closers.push(async () => {
      await node.close();
      await router.close();
    });
    node.start({ wsUrl: 'ws://127.0.0.1:1', clusterUrl: 'ws://127.0.0.1:1/mdp/cluster', metaUrl: 'http://127.0.0.1:1/mdp/meta' });

    const dropped = await next('proxy.mirror_not_reading');
    for (const ws of asking) asking.delete(ws);
    expect(dropped).toMatchObject({ level: 'warn', clientId: 'c1', reason: expect.stringMatching(/^Peer is not reading: \d+ bytes unread, limit 262144$/) });
    // Before the drop, answers that did not fit went as short refusals, not as 64 KB each.
    expect(records.some((r) => r.event === 'proxy.mirror_behind' && r.clientId === 'c1')).toBe(true);
    expect(calls).toBeGreaterThan(16);
    // The mirror dials again and registers the client once more.
    await lines.count(2, (r) => r.event === 'proxy.mirror_registered');
    expect(hub.sockets.length).toBe(2);
  });
});
