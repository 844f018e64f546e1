/**
 * End-to-end harness: a real server on an ephemeral loopback port and tiny MDP websocket clients
 * built on `ws`. Everything started here is stopped by `stopAll()`.
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { WebSocket } from 'ws';
import type { CallClientMessage, ClientDescriptor, PathDescriptor } from '@mdp/protocol';
import { createMdpServer, type MdpServer } from '../src/index.js';
import type { MdpServerOptions } from '../src/options.js';

const started: Array<{ close(): Promise<void> | void }> = [];

export async function stopAll(): Promise<void> {
  const items = started.splice(0).reverse();
  for (const item of items) await item.close();
}

export interface TestServer {
  server: MdpServer;
  http: string;
  ws: string;
  port: number;
  /** Under TLS with a CA file: the CA the test's clients trust. */
  ca?: Buffer;
  /** `fetch`, or under TLS one that trusts `ca`. */
  fetch: Fetch;
}

export type Fetch = (url: string, init?: RequestInit) => Promise<Response>;

export async function startServer(options: MdpServerOptions = {}): Promise<TestServer> {
  const server = createMdpServer({ host: '127.0.0.1', port: 0, logLevel: 'silent', ...options });
  const info = await server.listen();
  started.push(server);
  const caFile = options.tls?.caFile;
  const ca = caFile === undefined ? undefined : readFileSync(caFile);
  return { server, http: info.urls.http, ws: info.urls.ws, port: info.port, ...(ca ? { ca } : {}), fetch: ca ? tlsFetch(ca) : fetch };
}

/**
 * A small `fetch` over node's HTTPS client that trusts `ca` (the global fetch trusts only node's
 * CAs). One connection per request, so that nothing is left open.
 */
export function tlsFetch(ca: Buffer): Fetch {
  return (url, init = {}) =>
    new Promise((resolve, reject) => {
      const headers = Object.fromEntries(new Headers(init.headers).entries());
      const request = httpsRequest(url, { method: init.method ?? 'GET', headers, ca, agent: false, ...(init.signal ? { signal: init.signal } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const answer = new Headers();
          for (const [name, value] of Object.entries(res.headers)) for (const one of [value ?? []].flat()) answer.append(name, one);
          resolve(new Response([204, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: answer }));
        });
      });
      request.on('error', reject);
      request.end(typeof init.body === 'string' ? init.body : undefined);
    });
}

export type CallHandler = (call: CallClientMessage) => unknown | Promise<unknown>;

/** A minimal MDP websocket client for tests. */
export class TestClient {
  readonly calls: CallClientMessage[] = [];
  readonly received: unknown[] = [];
  handler: CallHandler = () => 'ok';
  /** Set when the server closes the socket. */
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly waiters: Array<{ match: (m: Record<string, unknown>) => boolean; resolve: (m: Record<string, unknown>) => void }> = [];

  constructor(readonly socket: WebSocket) {
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Record<string, unknown>;
      this.received.push(message);
      for (const waiter of [...this.waiters]) {
        if (waiter.match(message)) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(message);
        }
      }
      if (message.type === 'callClient') void this.answer(message as unknown as CallClientMessage);
    });
  }

  static async connect(url: string, options: { headers?: Record<string, string>; ca?: Buffer } = {}): Promise<TestClient> {
    const socket = new WebSocket(url, { headers: options.headers, ...(options.ca ? { ca: options.ca } : {}) });
    const client = new TestClient(socket);
    started.push({ close: () => client.close() });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return client;
  }

  private async answer(call: CallClientMessage): Promise<void> {
    this.calls.push(call);
    try {
      const result = await this.handler(call);
      if (result === NO_ANSWER) return;
      if (result instanceof ClientFailure) {
        this.send({ type: 'callClientResult', requestId: call.requestId, ok: false, error: result.error });
      } else {
        this.send({ type: 'callClientResult', requestId: call.requestId, ok: true, data: result });
      }
    } catch (error) {
      this.send({ type: 'callClientResult', requestId: call.requestId, ok: false, error: { code: 'handler_error', message: String(error) } });
    }
  }

  send(message: unknown): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  sendRaw(data: string | Buffer, binary = false): void {
    this.socket.send(data, { binary });
  }

  /** Resolves with the next message matching `match`. */
  next(match: (m: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    const done = new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    this.socket.terminate();
    await done;
  }
}

export const NO_ANSWER = Symbol('no answer');
export class ClientFailure {
  constructor(readonly error: { code: string; message: string; details?: Record<string, unknown> }) {}
}

export function skill(path: string, extra: Partial<PathDescriptor> = {}): PathDescriptor {
  return { type: 'skill', path, ...extra } as PathDescriptor;
}

export function descriptor(id: string, paths: PathDescriptor[], extra: Partial<ClientDescriptor> = {}): ClientDescriptor {
  return { id, name: `Client ${id}`, paths, ...extra };
}

/** Wait until the router lists (or no longer lists) `clientId`. Event-driven, no polling loop. */
export function clientChange(server: MdpServer, clientId: string, present: boolean): Promise<void> {
  if ((server.router.getClient(clientId) !== undefined) === present) return Promise.resolve();
  return new Promise((resolve) => {
    const off = server.router.onClientEvent(() => {
      if ((server.router.getClient(clientId) !== undefined) === present) {
        off();
        resolve();
      }
    });
  });
}

/** Connect a websocket client, register it and wait until the server lists it. */
export async function registeredClient(t: TestServer, desc: ClientDescriptor, headers?: Record<string, string>): Promise<TestClient> {
  const client = await TestClient.connect(t.ws, { headers, ...(t.ca ? { ca: t.ca } : {}) });
  const listed = clientChange(t.server, desc.id, true);
  client.send({ type: 'registerClient', client: desc });
  await listed;
  return client;
}

/** A GET with the path sent exactly as given (fetch would normalise dot segments). */
export function rawRequest(
  base: string,
  path: string,
  method = 'GET',
  /** Extra headers in the `rawHeaders` form, `[name, value, name, value, …]`, sent as given (repeats too). */
  extraHeaders?: string[],
): Promise<{ status: number; headers: import('node:http').IncomingHttpHeaders; body: string }> {
  const url = new URL(base);
  // node sends an array of headers as it is, without adding Host.
  const headers = extraHeaders && ['Host', url.host, ...extraHeaders];
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * A minimal HTTP loop client for tests: connects, registers, and keeps one long poll open,
 * answering each `callClient` with `handler` (the same contract as {@link TestClient}).
 */
export class LoopTestClient {
  readonly calls: CallClientMessage[] = [];
  handler: CallHandler = () => 'ok';
  private stopped = false;
  private readonly polling: Promise<void>;
  private readonly abort = new AbortController();

  private constructor(
    private readonly http: string,
    readonly sessionId: string,
    private readonly headers: Record<string, string>,
    private readonly fetch: Fetch,
  ) {
    this.polling = this.pollLoop();
  }

  /** Connect, register `desc` and wait until `server` lists it. */
  static async register(t: TestServer, desc: ClientDescriptor, headers: Record<string, string> = {}): Promise<LoopTestClient> {
    const res = await t.fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
    if (res.status !== 200) throw new Error(`connect answered ${res.status}`);
    const { sessionId } = (await res.json()) as { sessionId: string };
    const listed = clientChange(t.server, desc.id, true);
    const client = new LoopTestClient(t.http, sessionId, headers, t.fetch);
    started.push({ close: () => client.close() });
    await client.send({ type: 'registerClient', client: desc });
    await listed;
    return client;
  }

  async send(message: unknown): Promise<Response> {
    return this.fetch(`${this.http}/mdp/http-loop/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': this.sessionId, ...this.headers },
      body: JSON.stringify({ message }),
    });
  }

  private async pollLoop(): Promise<void> {
    while (!this.stopped) {
      let res: Response;
      try {
        res = await this.fetch(`${this.http}/mdp/http-loop/poll?waitMs=20000`, {
          headers: { 'x-mdp-session-id': this.sessionId, ...this.headers },
          signal: this.abort.signal,
        });
      } catch {
        return; // stopped, or the server went away
      }
      if (res.status === 404) return;
      if (res.status !== 200) continue;
      const { message } = (await res.json()) as { message: Record<string, unknown> };
      if (message.type === 'ping') void this.send({ type: 'pong', timestamp: message.timestamp });
      if (message.type === 'callClient') void this.answer(message as unknown as CallClientMessage);
    }
  }

  private async answer(call: CallClientMessage): Promise<void> {
    this.calls.push(call);
    let reply: Record<string, unknown>;
    try {
      const result = await this.handler(call);
      if (result === NO_ANSWER) return;
      reply = result instanceof ClientFailure ? { ok: false, error: result.error } : { ok: true, data: result };
    } catch (error) {
      reply = { ok: false, error: { code: 'handler_error', message: String(error) } };
    }
    await this.send({ type: 'callClientResult', requestId: call.requestId, ...reply }).catch(() => undefined);
  }

  /** Disconnect (the server drops the client) and stop polling. */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.fetch(`${this.http}/mdp/http-loop/disconnect`, { method: 'POST', headers: { 'x-mdp-session-id': this.sessionId } }).catch(() => undefined);
    this.abort.abort();
    await this.polling;
  }
}
