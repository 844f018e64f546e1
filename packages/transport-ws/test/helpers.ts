/**
 * Test harness: a bare node:http server on 127.0.0.1:0 whose 'upgrade' hands every request to the
 * transport, a Router that reports when sessions open and end (so tests wait on events, never
 * sleep), `ws` clients, and a raw TCP client that performs the upgrade by hand.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect as tcpConnect, type AddressInfo, type Socket } from 'node:net';
import { afterEach } from 'vitest';
import { WebSocket } from 'ws';
import { Router, createLogger, type Logger, type RouterOptions, type Session, type SessionTransport } from '@mdp/core';
import type { AuthContext, ClientDescriptor } from '@mdp/protocol';
import { createWebSocketTransport, type WebSocketTransport, type WebSocketTransportOptions } from '../src/index.js';

/** A Router that keeps the sessions it opens and lets a test wait until one has ended. */
export class SpyRouter extends Router {
  readonly opened: Session[] = [];
  private readonly endWaiters = new Map<Session, Array<() => void>>();

  override openSession(transport: SessionTransport, transportAuth?: AuthContext, principal?: string, peer?: string): Session {
    const session = super.openSession(transport, transportAuth, principal, peer);
    this.opened.push(session);
    return session;
  }

  override endSession(session: Session, reason: string): void {
    super.endSession(session, reason);
    const waiters = this.endWaiters.get(session) ?? [];
    this.endWaiters.delete(session);
    for (const resolve of waiters) resolve();
  }

  /** The only session opened so far (throws when there are more or none). */
  get onlySession(): Session {
    if (this.opened.length !== 1) throw new Error(`expected one session, have ${this.opened.length}`);
    return this.opened[0] as Session;
  }

  /** Resolves once `session` has ended (at once when it already has). */
  ended(session: Session): Promise<void> {
    if (session.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.endWaiters.get(session) ?? [];
      waiters.push(resolve);
      this.endWaiters.set(session, waiters);
    });
  }
}

export type LogRecord = Record<string, unknown> & { event: string };

/** A debug logger that keeps its records. */
export function recordingLogger(): { logger: Logger; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => records.push(JSON.parse(line) as LogRecord) });
  return { logger, records };
}

export interface Harness {
  readonly router: SpyRouter;
  readonly transport: WebSocketTransport;
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  /** Close the transport, the router and the HTTP server. Safe to call twice. */
  stop(): Promise<void>;
}

/** Small router time-outs: nothing here should wait on the defaults. */
export const ROUTER_OPTIONS: RouterOptions = { invocationTimeoutMs: 2_000, heartbeatIntervalMs: 60_000, heartbeatTimeoutMs: 120_000 };

export async function startHarness(
  options: { router?: SpyRouter; transport?: WebSocketTransportOptions } = {},
): Promise<Harness> {
  const router = options.router ?? new SpyRouter(ROUTER_OPTIONS);
  const transport = createWebSocketTransport(router, options.transport);
  const server = createServer((_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  server.on('upgrade', (request, socket, head) => transport.handleUpgrade(request, socket, head));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    router,
    transport,
    server,
    port,
    url: `ws://127.0.0.1:${port}/`,
    async stop() {
      await transport.close();
      await router.close();
      server.closeAllConnections();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

export interface TestSocket {
  readonly ws: WebSocket;
  /** Text frames received, parsed. */
  readonly messages: Array<Record<string, unknown>>;
  /** Resolves with the close code and reason the client saw. */
  readonly closed: Promise<Closed>;
  /** Resolves with the next text message matching `match`. */
  next(match?: (message: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  send(message: unknown): void;
}

function wrap(ws: WebSocket): TestSocket {
  const messages: Array<Record<string, unknown>> = [];
  const waiters: Array<{ match: (m: Record<string, unknown>) => boolean; resolve: (m: Record<string, unknown>) => void }> = [];
  ws.on('message', (data, isBinary) => {
    if (isBinary) return;
    const message = JSON.parse(data.toString()) as Record<string, unknown>;
    messages.push(message);
    for (const waiter of [...waiters]) {
      if (!waiter.match(message)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(message);
    }
  });
  // A refused or dropped connection reports an 'error' before 'close'; the close code tells the story.
  ws.on('error', () => {});
  const closed = new Promise<Closed>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return {
    ws,
    messages,
    closed,
    next: (match = () => true) => new Promise((resolve) => waiters.push({ match, resolve })),
    send: (message) => ws.send(JSON.stringify(message)),
  };
}

/** Connect a `ws` client; resolves once open (rejects if the connection closes first). */
export async function openClient(url: string, headers: IncomingHttpHeaders | Record<string, string> = {}): Promise<TestSocket> {
  const socket = wrap(new WebSocket(url, { headers: headers as Record<string, string> }));
  await new Promise<void>((resolve, reject) => {
    socket.ws.once('open', () => resolve());
    void socket.closed.then(({ code }) => reject(new Error(`closed with ${code} before opening`)));
  });
  return socket;
}

/** Start a `ws` client without waiting for it to open (for refused upgrades). */
export function startClient(url: string): TestSocket & { opened: () => boolean } {
  const ws = new WebSocket(url);
  let opened = false;
  ws.once('open', () => (opened = true));
  return { ...wrap(ws), opened: () => opened };
}

export function descriptor(id: string): ClientDescriptor {
  return { id, name: `Client ${id}`, paths: [{ type: 'skill', path: '/docs/skill.md' }] };
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
 * `start` starts the harness, `client` opens a client on it.
 */
export function harnessPerTest(): {
  start(options?: Parameters<typeof startHarness>[0]): Promise<Harness>;
  client(h: Harness, headers?: Record<string, string>): Promise<TestSocket>;
} {
  let harness: Harness | undefined;
  const sockets: TestSocket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.ws.terminate();
    await harness?.stop();
    harness = undefined;
  });
  return {
    async start(options) {
      harness = await startHarness(options);
      return harness;
    },
    async client(h, headers = {}) {
      const socket = await openClient(h.url, headers);
      sockets.push(socket);
      return socket;
    },
  };
}
