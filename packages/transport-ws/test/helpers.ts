/**
 * Test harness: a bare node:http server on 127.0.0.1:0 whose 'upgrade' hands every request to the
 * transport, a watch on the router's sessions (so tests wait on events, never sleep), the kit's
 * websocket test clients, and a raw TCP client that performs the upgrade by hand.
 */
import { createServer, type Server } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import { afterEach } from 'vitest';
import { Router, type RouterOptions } from '@mdp/core';
import { TestClient, closeServer, listen, stopAll, watchSessions, type Closed, type SessionWatch } from '@mdp/test-kit';
import { createWebSocketTransport, type WebSocketTransport, type WebSocketTransportOptions } from '../src/index.js';

export interface Harness {
  readonly router: Router;
  /** The sessions the router opened and ended. */
  readonly sessions: SessionWatch;
  readonly transport: WebSocketTransport;
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  /** Close the transport, the router and the HTTP server. Safe to call twice. */
  stop(): Promise<void>;
}

/** Small router time-outs: nothing here should wait on the defaults. */
export const ROUTER_OPTIONS: RouterOptions = { invocationTimeoutMs: 2_000, heartbeatIntervalMs: 60_000, heartbeatTimeoutMs: 120_000 };

export async function startHarness(options: { router?: Router; transport?: WebSocketTransportOptions } = {}): Promise<Harness> {
  const router = options.router ?? new Router(ROUTER_OPTIONS);
  const sessions = watchSessions(router);
  const transport = createWebSocketTransport(router, options.transport);
  const server = createServer((_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  server.on('upgrade', (request, socket, head) => transport.handleUpgrade(request, socket, head));
  const port = await listen(server);
  return {
    router,
    sessions,
    transport,
    server,
    port,
    url: `ws://127.0.0.1:${port}/`,
    async stop() {
      await transport.close();
      await router.close();
      sessions.stop();
      server.closeAllConnections();
      await closeServer(server);
    },
  };
}

/** A websocket test client that leaves every call to the test (it answers with `send`). */
export async function openClient(url: string, headers: Record<string, string> = {}): Promise<TestClient> {
  const client = await TestClient.connect(url, { headers });
  client.handler = undefined;
  return client;
}

/**
 * A TCP client that performs the websocket upgrade by hand and then writes only what a test sends
 * with {@link sendRawText}: it never answers a close frame, so only the server can end the connection.
 */
export interface RawClient {
  readonly socket: Socket;
  /** Bytes received after the 101 response. */
  frames(): Buffer;
  /** Resolves with the first close frame the server sent: code and reason. */
  readonly closeFrame: Promise<Closed>;
  /** Resolves when the TCP connection is gone. */
  readonly ended: Promise<void>;
}

/** Write one masked text frame on a raw client's socket, as a browser would. */
export function sendRawText(raw: RawClient, text: string): void {
  const payload = Buffer.from(text, 'utf8');
  if (payload.length > 0xffff) throw new Error('sendRawText: payload too long for this helper');
  const head = payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] as number)));
  raw.socket.write(Buffer.concat([head, mask, masked]));
}

export async function rawUpgrade(port: number): Promise<RawClient> {
  const socket = tcpConnect(port, '127.0.0.1');
  let buffer = Buffer.alloc(0);
  let upgraded = false;
  let onUpgrade: (head: string) => void = () => {};
  let onCloseFrame: (closed: Closed) => void = () => {};
  const response = new Promise<string>((resolve) => (onUpgrade = resolve));
  const closeFrame = new Promise<Closed>((resolve) => (onCloseFrame = resolve));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (!upgraded) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      upgraded = true;
      onUpgrade(buffer.subarray(0, end).toString('latin1'));
      buffer = buffer.subarray(end + 4);
    }
    // Unmasked server frames, in order: FIN|opcode, then a 7-bit length or 126 and a 16-bit one.
    for (let at = 0; at + 2 <= buffer.length; ) {
      const short = (buffer[at + 1] as number) & 0x7f;
      const headLength = short === 126 ? 4 : 2;
      if (at + headLength > buffer.length) break;
      const length = short === 126 ? buffer.readUInt16BE(at + 2) : short;
      const start = at + headLength;
      if (start + length > buffer.length) break;
      if (((buffer[at] as number) & 0x0f) === 0x8) {
        onCloseFrame({ code: buffer.readUInt16BE(start), reason: buffer.subarray(start + 2, start + length).toString('utf8') });
      }
      at = start + length;
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  socket.write(
    [
      'GET / HTTP/1.1',
      `Host: 127.0.0.1:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Version: 13',
      '',
      '',
    ].join('\r\n'),
  );
  const head = await response;
  if (!head.startsWith('HTTP/1.1 101')) throw new Error(`upgrade refused: ${head}`);
  return { socket, frames: () => buffer, closeFrame, ended };
}

/**
 * A harness and clients per test, all stopped after each one: call at the top of a test file.
 * `start` starts the harness, `client` opens a client on it (see {@link openClient}).
 */
export function harnessPerTest(): {
  start(options?: Parameters<typeof startHarness>[0]): Promise<Harness>;
  client(h: Harness, headers?: Record<string, string>): Promise<TestClient>;
} {
  let harness: Harness | undefined;
  afterEach(async () => {
    await stopAll();
    await harness?.stop();
    harness = undefined;
  });
  return {
    async start(options) {
      harness = await startHarness(options);
      return harness;
    },
    client: (h, headers = {}) => openClient(h.url, headers),
  };
}
