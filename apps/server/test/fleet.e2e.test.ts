/**
 * The fleet as it runs (SPEC §16): a real `nats-server` and three `mdp-server --bus` processes, A, B
 * and C. A websocket client on A and an HTTP loop client on B are read and called through C by skill
 * route, host API and the MCP SDK's client; the loop client's requests go round-robin to A, B and C
 * (a load balancer without stickiness). Then A is killed (SIGKILL): its client leaves every node
 * within the TTL and, reconnecting to B, works at once; NATS is stopped and started again and the
 * fleet recovers without a restart; hostile ids reach their own client only.
 *
 * Waits poll the nodes over HTTP with a deadline (the processes are separate: there is no event to
 * wait on); none is a fixed sleep.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientDescriptor } from '@mdp/protocol';
import { NatsServer, TestClient, descriptor, endpoint, freePorts, natsServerAvailable, skill, stopAll, warnIfNoNatsServer } from '@mdp/test-kit';
import { kill, killAll, printed, spawnPlain, type Proc } from './processes.js';

warnIfNoNatsServer('fleet.e2e.test.ts');

/** A node not heard from this long is gone (the smallest the bus takes), ms. */
const TTL_MS = 1000;

let nats: NatsServer;
let stateDir: string;
const nodes: Record<'a' | 'b' | 'c', Proc> = {} as Record<'a' | 'b' | 'c', Proc>;
const url = (node: Proc): string => `http://127.0.0.1:${node.port}`;

/** Check `check` every 50 ms until it holds (returns a value), at most `timeoutMs`. */
async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function listedIds(node: Proc): Promise<string[]> {
  const response = await fetch(`${url(node)}/mdp/clients?limit=1000`);
  const body = (await response.json()) as { clients: Array<{ id: string }> };
  return body.clients.map((c) => c.id).sort();
}

async function callVia(node: Proc, clientId: string, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url(node)}/mdp/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, method: 'GET', path }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * An HTTP loop client as the SDKs are: it connects, registers, and keeps one long poll open,
 * answering each call; a poll or send answered 502–504 is tried again after `Retry-After` (the
 * client's own back-off, not a test's sleep). Every request goes to the next node of `ring`.
 */
class RoundRobinLoopClient {
  readonly landed: string[] = [];
  private next = 0;
  private stopped = false;
  private sessionId = '';
  private polling: Promise<void> = Promise.resolve();
  private readonly abort = new AbortController();

  constructor(
    private readonly ring: readonly Proc[],
    private readonly answer: (path: string) => string,
  ) {}

  /** The next node of the ring takes the request; one that refuses connections (dead) is skipped, as a load balancer does. */
  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    for (let tries = 0; ; tries++) {
      const node = this.ring[this.next++ % this.ring.length] as Proc;
      try {
        const response = await fetch(`${url(node)}/mdp/http-loop${path}`, { ...init, signal: this.abort.signal });
        this.landed.push(`${node.port} ${path.replace(/\?.*/, '')}`);
        return response;
      } catch (error) {
        if (this.abort.signal.aborted || tries >= this.ring.length) throw error;
      }
    }
  }

  async register(client: ClientDescriptor): Promise<void> {
    const connected = await this.request('/connect', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(connected.status).toBe(200);
    this.sessionId = ((await connected.json()) as { sessionId: string }).sessionId;
    const sent = await this.send({ type: 'registerClient', client });
    expect(sent.status).toBe(202);
    this.polling = this.poll();
  }

  private send(message: unknown): Promise<Response> {
    return this.request('/send', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': this.sessionId },
      body: JSON.stringify({ message }),
    });
  }

  private async poll(): Promise<void> {
    while (!this.stopped) {
      let response: Response;
      try {
        response = await this.request(`/poll?waitMs=1000&sessionId=${this.sessionId}`);
      } catch {
        return;
      }
      if (response.status === 204) continue;
      if (response.status >= 502 && response.status <= 504) {
        await response.body?.cancel();
        const wait = Number(response.headers.get('retry-after') ?? '1') * 1000;
        await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 1000)));
        continue;
      }
      if (response.status !== 200) return;
      const { message } = (await response.json()) as { message: { type: string; requestId?: string; path?: string; timestamp?: number } };
      if (message.type === 'callClient') {
        void this.send({ type: 'callClientResult', requestId: message.requestId, ok: true, data: this.answer(message.path ?? '') }).catch(() => undefined);
      } else if (message.type === 'ping') {
        void this.send({ type: 'pong', timestamp: message.timestamp }).catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.polling;
  }
}

function spawnNode(name: 'a' | 'b' | 'c', port: number): Proc {
  return spawnPlain(port, stateDir, ['--server-id', `node-${name}`, '--bus', nats.url, '--bus-prefix', 'fleet-e2e', '--bus-ttl-ms', String(TTL_MS)]);
}

const DOCS: ClientDescriptor = descriptor('ws-app', [skill('/docs/skill.md'), endpoint('/status')]);
const LOOP: ClientDescriptor = descriptor('loop-app', [skill('/guide/skill.md'), endpoint('/status')]);

describe.skipIf(!natsServerAvailable())('a fleet of three processes on NATS', () => {
  // A scenario in four steps on one fleet: each test goes on from where the one before left it.
  let loop: RoundRobinLoopClient | undefined;

  beforeAll(async () => {
    nats = await NatsServer.start();
    stateDir = await mkdtemp(join(tmpdir(), 'mdp-fleet-'));
    const [pa, pb, pc] = (await freePorts(3)) as [number, number, number];
    nodes.a = spawnNode('a', pa);
    nodes.b = spawnNode('b', pb);
    nodes.c = spawnNode('c', pc);
    await Promise.all(Object.values(nodes).map((node) => printed(node, /bus mode, node node-\w joined the fleet/, 20_000)));
  }, 60_000);

  afterAll(async () => {
    await loop?.close();
    await stopAll();
    killAll();
    await nats?.dispose();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  it('reads and calls a websocket client on A and a loop client on B through C, by every way in', async () => {
    const ws = await TestClient.register(`ws://127.0.0.1:${nodes.a.port}`, DOCS);
    ws.handler = (call) => (call.path === '/docs/skill.md' ? '# ws docs' : 'ws status');
    // The loop client connects on B; its requests then go to C, A, B, C, …
    loop = new RoundRobinLoopClient([nodes.b, nodes.c, nodes.a], (path) => (path === '/guide/skill.md' ? '# loop guide' : 'loop status'));
    await loop.register(LOOP);

    await eventually(async () => (await listedIds(nodes.c)).join() === 'loop-app,ws-app', 10_000, 'C to list both clients');

    for (const [id, skillPath, text] of [
      ['ws-app', 'docs', '# ws docs'],
      ['loop-app', 'guide', '# loop guide'],
    ] as const) {
      const read = await fetch(`${url(nodes.c)}/skills/${id}/${skillPath}`);
      expect(read.status).toBe(200);
      expect(await read.text()).toBe(text);
      const called = await callVia(nodes.c, id, '/status');
      expect(called).toEqual({ status: 200, body: { ok: true, data: id === 'ws-app' ? 'ws status' : 'loop status' } });
    }

    const agent = new Client({ name: 'fleet-agent', version: '1.0.0' });
    await agent.connect(new StreamableHTTPClientTransport(new URL(`${url(nodes.c)}/mcp`)));
    try {
      const listed = await agent.callTool({ name: 'listClients', arguments: {} });
      const text = JSON.stringify(listed.content);
      expect(text).toContain('ws-app');
      expect(text).toContain('loop-app');
      for (const id of ['ws-app', 'loop-app']) {
        const result = await agent.callTool({ name: 'callPath', arguments: { clientId: id, method: 'GET', path: '/status' } });
        expect(result.isError).not.toBe(true);
        expect(JSON.stringify(result.content)).toContain(id === 'ws-app' ? 'ws status' : 'loop status');
      }
    } finally {
      await agent.close();
    }

    // The loop client's requests landed on every node, and it works from every node.
    expect(new Set(loop.landed.map((line) => Number(line.split(' ')[0])))).toEqual(new Set([nodes.a.port, nodes.b.port, nodes.c.port]));
    for (const node of [nodes.a, nodes.b, nodes.c]) expect((await callVia(node, 'loop-app', '/status')).body).toEqual({ ok: true, data: 'loop status' });
  });

  it('carries hostile ids to their own client only', async () => {
    const ids = ['evil.*', 'evil.>', 'ws-app.>', '* >', 'a b.c'];
    const clients: TestClient[] = [];
    for (const [i, id] of ids.entries()) {
      const client = await TestClient.register(`ws://127.0.0.1:${(i % 2 === 0 ? nodes.b : nodes.c).port}`, descriptor(id, [endpoint('/who')]));
      client.handler = () => id;
      clients.push(client);
    }
    await eventually(async () => (await listedIds(nodes.a)).length === ids.length + 2, 10_000, 'A to list them');
    for (const id of ids) {
      for (const node of [nodes.a, nodes.b, nodes.c]) expect((await callVia(node, id, '/who')).body).toEqual({ ok: true, data: id });
    }
    // None of them took the calls of another.
    expect((await callVia(nodes.c, 'ws-app', '/status')).body).toEqual({ ok: true, data: 'ws status' });
    for (const client of clients) await client.close();
    await eventually(async () => (await listedIds(nodes.a)).join() === 'loop-app,ws-app', 10_000, 'the hostile clients to leave');
  });

  it('drops a killed node’s client from every node within the TTL; reconnected to B it works at once', async () => {
    await kill(nodes.a);
    // Gone from every view within one TTL (the deadline leaves room for a loaded machine).
    await eventually(
      async () => (await Promise.all([listedIds(nodes.b), listedIds(nodes.c)])).every((ids) => !ids.includes('ws-app')),
      TTL_MS * 5,
      'ws-app to leave B and C',
    );
    expect((await callVia(nodes.c, 'ws-app', '/status')).status).toBe(404);

    const again = await TestClient.register(`ws://127.0.0.1:${nodes.b.port}`, DOCS);
    again.handler = () => 'ws status again';
    await eventually(async () => (await callVia(nodes.c, 'ws-app', '/status')).body.ok === true, 3000, 'C to reach ws-app on B');
    expect((await callVia(nodes.c, 'ws-app', '/status')).body).toEqual({ ok: true, data: 'ws status again' });
  });

  it('recovers when NATS is stopped and started again, without restarting a node', async () => {
    const ready = async (node: Proc): Promise<number> => (await fetch(`${url(node)}/readyz`)).status;
    await nats.stop();
    await eventually(async () => (await ready(nodes.c)) === 503 && (await ready(nodes.b)) === 503, 20_000, 'B and C to report the bus down');
    const refused = await callVia(nodes.c, 'ws-app', '/status');
    expect(refused.status).toBe(503);
    // B's own client is still served on B.
    expect((await callVia(nodes.b, 'ws-app', '/status')).body).toEqual({ ok: true, data: 'ws status again' });

    await nats.start();
    await eventually(async () => (await ready(nodes.c)) === 200 && (await ready(nodes.b)) === 200, 20_000, 'B and C to rejoin');
    await eventually(async () => (await callVia(nodes.c, 'ws-app', '/status')).body.ok === true, 10_000, 'C to reach ws-app again');
    await eventually(async () => (await callVia(nodes.c, 'loop-app', '/status')).body.ok === true, 10_000, 'C to reach loop-app again');
    expect((await listedIds(nodes.c)).join()).toBe('loop-app,ws-app');
  });
});
