/**
 * A minimal MDP websocket client on `ws`: it records every message, answers each `callClient` with
 * its handler (or leaves it to the test), and lets a test wait on any message or on the close.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocket } from 'ws';
import type { CallClientMessage, ClientDescriptor } from '@mdp/protocol';
import { resultOf, type CallHandler } from './answers.js';
import { track } from './stop.js';
import { Inbox } from './waiters.js';

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

export type Message = Record<string, unknown>;

export interface ConnectOptions {
  readonly headers?: IncomingHttpHeaders | Record<string, string>;
  /** A CA to trust (a `wss://` URL of a test CA). */
  readonly ca?: Buffer;
}

export class TestClient {
  /** Text frames received, parsed (a frame that is not JSON is kept as `{ unparsed: text }`). */
  readonly inbox = new Inbox<Message>();
  /** Every callClient received, in order. */
  readonly calls: CallClientMessage[] = [];
  /** Answers each callClient; `undefined` leaves calls to the test (it answers with `send`). Default: answers `'ok'`. */
  handler: CallHandler | undefined = () => 'ok';
  /** Resolves with the close code and reason this client saw. */
  readonly closed: Promise<Closed>;
  private opened = false;
  private pings = 0;

  constructor(readonly socket: WebSocket) {
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    socket.once('open', () => (this.opened = true));
    // A refused or dropped connection reports an 'error' before 'close'; the close code tells the story.
    socket.on('error', () => undefined);
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      const text = data.toString();
      let message: Message;
      try {
        message = JSON.parse(text) as Message;
      } catch {
        message = { unparsed: text };
      }
      if (message.type === 'callClient') {
        const call = message as unknown as CallClientMessage;
        this.calls.push(call);
        const handler = this.handler;
        if (handler) void resultOf(call, handler).then((result) => result && this.send(result));
      }
      this.inbox.push(message);
    });
  }

  /** Connect to `url`; resolves once open, rejects when the connection fails or closes first. Stopped by `stopAll()`. */
  static async connect(url: string, options: ConnectOptions = {}): Promise<TestClient> {
    const client = TestClient.start(url, options);
    await new Promise<void>((resolve, reject) => {
      client.socket.once('open', () => resolve());
      client.socket.once('error', reject);
      void client.closed.then(({ code }) => reject(new Error(`closed with ${code} before opening`)));
    });
    return client;
  }

  /** Start connecting without waiting (for upgrades the server refuses). Stopped by `stopAll()`. */
  static start(url: string, options: ConnectOptions = {}): TestClient {
    const socket = new WebSocket(url, { headers: options.headers as Record<string, string> | undefined, ...(options.ca ? { ca: options.ca } : {}) });
    return track(new TestClient(socket));
  }

  /** Connect and register `client`; resolves once the server applied it (a ping round trip after it). */
  static async register(url: string, client: ClientDescriptor, options: ConnectOptions = {}): Promise<TestClient> {
    const connected = await TestClient.connect(url, options);
    await connected.register(client);
    return connected;
  }

  /** Messages received so far, in order. */
  get received(): Message[] {
    return this.inbox.items;
  }

  /** Whether the handshake completed. */
  get wasOpened(): boolean {
    return this.opened;
  }

  /** Resolves with the next message matching `match` that arrives after this call. */
  next(match: (message: Message) => boolean = () => true): Promise<Message> {
    return this.inbox.next(match);
  }

  /** Send one JSON message (dropped when the socket is not open). */
  send(message: unknown): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  sendRaw(data: string | Buffer, binary = false): void {
    this.socket.send(data, { binary });
  }

  /**
   * A ping, resolving with its pong: the server handles a session's messages in order, so the pong
   * proves that everything sent before was applied. Rejects when the connection closes first.
   */
  async roundTrip(): Promise<void> {
    const timestamp = ++this.pings;
    const pong = this.next((m) => m.type === 'pong' && m.timestamp === timestamp);
    this.send({ type: 'ping', timestamp });
    await Promise.race([pong, this.closed.then(({ code, reason }) => Promise.reject(new Error(`closed with ${code} ${reason}`)))]);
  }

  /** Send `registerClient` (with message `auth`, if given) and wait until it applied. */
  async register(client: ClientDescriptor, auth?: Record<string, unknown>): Promise<void> {
    this.send({ type: 'registerClient', client, ...(auth ? { auth } : {}) });
    await this.roundTrip();
  }

  /** The client side TCP socket: pausing it stops reading, as a stalled peer does. */
  get tcp(): Socket {
    return (this.socket as unknown as { _socket: Socket })._socket;
  }

  /** Drop the connection (no closing handshake); resolves once it is closed. Idempotent. */
  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    this.socket.terminate();
    await this.closed;
  }
}

export interface RefusedUpgrade {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** The HTTP answer to a websocket upgrade that the server refused before the handshake; rejects if it was accepted. */
export function refusedUpgrade(url: string, headers: Record<string, string> = {}): Promise<RefusedUpgrade> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.on('error', () => undefined);
    socket.once('open', () => {
      socket.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
  });
}
