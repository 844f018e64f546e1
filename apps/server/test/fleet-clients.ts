/**
 * Clients of a fleet for process tests (`fleet-faults.process.e2e.test.ts`): plain HTTP without a
 * connection pool, a seeded random, and MDP clients of both transports that reconnect as the SDKs
 * do and answer each call with who they are: `<id>@<port of the node that holds the session>#<n>`.
 */
import { request, type IncomingHttpHeaders } from 'node:http';
import type { ClientDescriptor } from '@mdp/protocol';
import { descriptor, endpoint, skill } from '@mdp/test-kit';
import { ReconnectingClient } from './processes.js';

/** A seeded random in [0, 1) (mulberry32): a fault test's whole schedule comes from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pickWith =
  (random: () => number) =>
  <T>(list: readonly T[]): T =>
    list[Math.floor(random() * list.length)] as T;

// ------------------------------------------------------------------------------------------------
// HTTP without a connection pool: a connection to a killed process never carries the next request.

export interface Answer {
  /** The HTTP status; 0 when the connection failed, -1 when nothing came within the bound. */
  readonly status: number;
  readonly body: string;
  readonly headers: IncomingHttpHeaders;
}

export function http(
  port: number,
  method: string,
  path: string,
  options: { body?: string; headers?: Record<string, string>; timeoutMs: number },
): Promise<Answer> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (answer: Answer): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const req = request({ host: '127.0.0.1', port, method, path, agent: false, headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => finish({ status: res.statusCode ?? 0, body, headers: res.headers }));
      res.on('error', (error) => finish({ status: 0, body: error.message, headers: {} }));
    });
    const timer = setTimeout(() => {
      finish({ status: -1, body: '', headers: {} });
      req.destroy();
    }, options.timeoutMs);
    req.on('error', (error) => finish({ status: 0, body: error.message, headers: {} }));
    req.end(options.body);
  });
}

export const json = { 'content-type': 'application/json' };

// ------------------------------------------------------------------------------------------------
// MDP clients

/** A client of the test, either transport: who it is now and where its session is. */
export interface TestedClient {
  readonly id: string;
  readonly transport: 'ws' | 'loop';
  /** `<id>@<port of its node>#<connection>`, or undefined while it has no session. */
  identity(): string | undefined;
  /** The port of the node that holds its session. */
  holder(): number | undefined;
  close(): Promise<void>;
}

const PATHS = [skill('/docs/skill.md'), endpoint('/who'), endpoint('/slow')];

/**
 * What a client answers: who it is (so a read shows which session answered), on `/slow` after a
 * while of its own choosing, so that calls are in flight when a fault strikes.
 */
function answerOf(identity: string, path: string, random: () => number): string | Promise<string> {
  if (path === '/docs/skill.md') return `# ${identity}`;
  if (path === '/slow') return new Promise((resolve) => setTimeout(() => resolve(identity), 100 + Math.floor(random() * 500)));
  return identity;
}

/** How long a loop client's poll waits on the server, and how long it waits for the poll's answer, ms. */
const LOOP_WAIT_MS = 1000;
const LOOP_POLL_TIMEOUT_MS = LOOP_WAIT_MS + 2500;
/** A websocket client gives its connection up after this long without a pong (to 2×), ms. */
export const WS_PING_EVERY_MS = 1500;

/**
 * An HTTP loop client as the SDKs are, behind a load balancer without stickiness: every request
 * goes to the next node of the ring (one that refuses the connection is passed over, as a balancer
 * does); it keeps one long poll open and answers each call. A 503 is tried again after
 * `Retry-After` (at most 1 s). When its session is gone (404), or a poll is not answered in time or
 * fails otherwise (the node that holds the session stopped answering), it connects and registers
 * anew, leaving the old session to the server: the newest registration wins (SPEC §4.3, §16.3).
 */
export class FleetLoopClient implements TestedClient {
  readonly transport = 'loop';
  private next: number;
  private stopped = false;
  private session: { readonly id: string; readonly port: number; readonly number: number } | undefined;
  private sessions = 0;
  private readonly running: Promise<void>;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    readonly id: string,
    private readonly ports: readonly number[],
    first: number,
    private readonly random: () => number,
  ) {
    this.next = first;
    this.running = this.run();
  }

  identity(): string | undefined {
    return this.session && `${this.id}@${this.session.port}#${this.session.number}`;
  }

  holder(): number | undefined {
    return this.session?.port;
  }

  private async request(
    method: string,
    path: string,
    init: { body?: string; headers?: Record<string, string> },
    timeoutMs: number,
  ): Promise<Answer & { port: number }> {
    let last: Answer = { status: 0, body: 'no node', headers: {} };
    for (let tries = 0; tries < this.ports.length && !this.stopped; tries++) {
      const port = this.ports[this.next++ % this.ports.length] as number;
      last = await http(port, method, `/mdp/http-loop${path}`, { ...init, timeoutMs });
      if (last.status !== 0) return { ...last, port };
    }
    return { ...last, port: 0 };
  }

  private send(sessionId: string, message: unknown): Promise<Answer> {
    return this.request('POST', '/send', { headers: { ...json, 'x-mdp-session-id': sessionId }, body: JSON.stringify({ message }) }, 5000);
  }

  /** The client's own pace between attempts: not a test's wait. */
  private backoff(ms = 200): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const connected = await this.request('POST', '/connect', { headers: json, body: '{}' }, 5000);
      if (connected.status !== 200) {
        await this.backoff();
        continue;
      }
      const sessionId = (JSON.parse(connected.body) as { sessionId: string }).sessionId;
      const number = ++this.sessions;
      const client: ClientDescriptor = descriptor(this.id, PATHS);
      const registered = await this.send(sessionId, { type: 'registerClient', client });
      if (registered.status !== 202) {
        await this.backoff();
        continue;
      }
      this.session = { id: sessionId, port: connected.port, number };
      await this.pollUntilGone(sessionId);
      this.session = undefined;
    }
  }

  private async pollUntilGone(sessionId: string): Promise<void> {
    while (!this.stopped) {
      const polled = await this.request('GET', `/poll?waitMs=${LOOP_WAIT_MS}&sessionId=${encodeURIComponent(sessionId)}`, {}, LOOP_POLL_TIMEOUT_MS);
      if (polled.status === 204) continue;
      if (polled.status === 503) {
        await this.backoff(Math.min(1000, Number(polled.headers['retry-after'] ?? '1') * 1000));
        continue;
      }
      if (polled.status !== 200) return;
      const { message } = JSON.parse(polled.body) as { message: { type: string; requestId?: string; path?: string; timestamp?: number } };
      const identity = this.identity() as string;
      if (message.type === 'callClient') {
        const answering = Promise.resolve(answerOf(identity, message.path ?? '', this.random)).then((data) =>
          this.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data }),
        );
        this.pending.add(answering);
        void answering.finally(() => this.pending.delete(answering));
      } else if (message.type === 'ping') {
        void this.send(sessionId, { type: 'pong', timestamp: message.timestamp });
      }
    }
  }

  async close(): Promise<void> {
    this.stopped = true;
    await this.running;
    await Promise.allSettled([...this.pending]);
  }
}

export function wsClient(id: string, ports: readonly number[], first: number, random: () => number): TestedClient {
  // Its first node, then the next one on each new attempt.
  const urls = ports.map((_, i) => `ws://127.0.0.1:${ports[(first + i) % ports.length]}`);
  const portOf = (url: string): number => Number(new URL(url).port);
  const client = new ReconnectingClient(
    urls,
    descriptor(id, PATHS),
    (path, connection) => answerOf(`${id}@${portOf(connection.url)}#${connection.number}`, path, random),
    { backoffMs: 300, maxBackoffMs: 2000, pingEveryMs: WS_PING_EVERY_MS },
  );
  return {
    id,
    transport: 'ws',
    identity: () => client.current && `${id}@${portOf(client.current.url)}#${client.current.number}`,
    holder: () => client.current && portOf(client.current.url),
    close: async () => client.close(),
  };
}
