/** Small clients for the hardening tests: HTTP reads that may give up, websocket clients that register. */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocket } from 'ws';
import { TestClient, descriptor, skill } from '../harness.js';

export interface ReadResult {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface ReadOptions {
  readonly headers?: Record<string, string>;
  /** Give up (abort the request) after this many ms: `'aborted'` then. */
  readonly abortAfterMs?: number;
  readonly agent?: Agent;
  readonly method?: string;
}

/** One HTTP request to `base` + `path`; resolves with the answer, or `'aborted'` when it gave up first. */
export function read(base: string, path: string, options: ReadOptions = {}): Promise<ReadResult | 'aborted'> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: options.agent,
        signal: options.abortAfterMs === undefined ? undefined : AbortSignal.timeout(options.abortAfterMs),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', () => resolve('aborted'));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => (error.name === 'AbortError' || error.code === 'ABORT_ERR' ? resolve('aborted') : reject(error)));
    req.end();
  });
}

/** Connect a websocket client and register `id` with one skill `/s/skill.md`; resolves once registered (a ping round trip). */
export async function wsClientWithSkill(url: string, id: string, answer: unknown = `skill of ${id}`, headers?: Record<string, string>): Promise<TestClient> {
  const client = await TestClient.connect(url, { headers });
  client.handler = () => answer;
  client.send({ type: 'registerClient', client: descriptor(id, [skill('/s/skill.md')]) });
  const pong = client.next((m) => m.type === 'pong');
  client.send({ type: 'ping', timestamp: 1 });
  await pong;
  return client;
}

/** The client side TCP socket of a websocket test client: pausing it stops reading, as a stalled peer does. */
export const tcpOf = (client: TestClient): Socket => (client.socket as unknown as { _socket: Socket })._socket;

/** The answer to a websocket upgrade the server refused before the handshake. */
export function refusedUpgrade(url: string): Promise<ReadResult> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.on('error', () => {});
    socket.once('open', () => reject(new Error('the upgrade was accepted')));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
  });
}
