/**
 * HTTP loop sessions behind a load balancer (relay.ts, SPEC §16.7): two transports, each on its own
 * router and socket, linked by an in-process relay as a server's bus links them. A session made on
 * node A is used through node B with the seed's statuses and bodies; the relay's own cases (nobody
 * holds it, the bus is down, the client goes away mid-poll, an answer that cannot be written) keep
 * every message.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Server } from 'node:http';
import { Router, createTokenPolicy, createAuthGate } from '@mdp/core';
import { Changes, descriptor, endpoint, until } from '@mdp/test-kit';
import { createHttpLoopTransport, type HttpLoopTransport, type LoopRelay, type RelayOutcome } from '../src/index.js';
import { RelayedPolls } from '../src/relay.js';
import { MOUNT, serveHandleNode, stopServing } from './helpers.js';

interface Node {
  readonly router: Router;
  readonly transport: HttpLoopTransport;
  readonly server: Server;
  readonly url: string;
  /** Sessions this node holds for the others. */
  readonly held: Set<string>;
}

const nodes: Node[] = [];

afterEach(async () => {
  for (const node of nodes.splice(0)) await stopServing(node.transport, node.router, node.server);
});

/** A relay among `nodes`: a session is reached on whichever node holds it. `down`: the bus is lost. */
interface FleetState {
  down: boolean;
  readonly forwarded: string[];
  /** Fires after each request is forwarded, and each answer the holder gave (even one dropped). */
  readonly changes?: Changes;
  /** The holders' answers, by target, as they came. */
  readonly answered?: string[];
  /** Polls time out on the relaying node although their holder answers them (a slow bus or holder). */
  late?: boolean;
}

function fleetRelay(self: () => Node, state: FleetState): LoopRelay {
  return {
    async hold(sessionId) {
      self().held.add(sessionId);
    },
    release(sessionId) {
      self().held.delete(sessionId);
    },
    async forward(sessionId, request, { signal }): Promise<RelayOutcome> {
      state.forwarded.push(`${request.method} ${request.target}`);
      state.changes?.emit();
      if (state.down) return { ok: false, reason: 'not_ready', message: 'The fleet bus (NATS) is lost', retryAfterMs: 2000 };
      const holder = nodes.find((node) => node !== self() && node.held.has(sessionId));
      if (!holder) return { ok: false, reason: 'unknown', message: 'No node holds it' };
      // As over the bus: the caller giving up does not reach the holder (only /abandon does), and
      // an answer that comes after it gave up is dropped.
      const cut = new Promise<RelayOutcome>((resolve) =>
        signal?.addEventListener('abort', () => resolve({ ok: false, reason: 'failed', message: 'cut short' })),
      );
      const answered = holder.transport.answerRelayed(request, new AbortController().signal).then((answer): RelayOutcome => {
        state.answered?.push(`${request.target} ${answer.status}`);
        state.changes?.emit();
        if (state.late && request.target.startsWith('/poll')) return { ok: false, reason: 'timeout', message: 'No answer within 5000 ms' };
        return { ok: true, answer };
      });
      return Promise.race([answered, cut]);
    },
  };
}

async function node(state: FleetState, options: Parameters<typeof createHttpLoopTransport>[1] = {}): Promise<Node> {
  const router = new Router();
  let self: Node | undefined;
  const transport = createHttpLoopTransport(router, { relay: fleetRelay(() => self as Node, state), ...options });
  const { server, port } = await serveHandleNode(transport);
  self = { router, transport, server, url: `http://127.0.0.1:${port}${MOUNT}`, held: new Set() };
  nodes.push(self);
  return self;
}

const json = { 'content-type': 'application/json' };

async function connect(at: Node, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(`${at.url}/connect`, { method: 'POST', headers: { ...json, ...headers }, body: '{}' });
  expect(response.status).toBe(200);
  return ((await response.json()) as { sessionId: string }).sessionId;
}

function send(at: Node, sessionId: string, message: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${at.url}/send`, { method: 'POST', headers: { ...json, 'x-mdp-session-id': sessionId, ...headers }, body: JSON.stringify({ message }) });
}

function poll(at: Node, sessionId: string, waitMs: number, init: RequestInit = {}): Promise<Response> {
  return fetch(`${at.url}/poll?waitMs=${waitMs}&sessionId=${sessionId}`, init);
}

describe('a session held by another node', () => {
  it('is used through any node: send, poll and disconnect with the seed statuses and bodies', async () => {
    const state = { down: false, forwarded: [] as string[] };
    const a = await node(state);
    const b = await node(state);
    const sessionId = await connect(a);
    expect(a.held.has(sessionId)).toBe(true);

    const registered = await send(b, sessionId, { type: 'registerClient', client: descriptor('app', [endpoint('/x')]) });
    expect(registered.status).toBe(202);
    expect(await registered.json()).toEqual({ ok: true });
    expect(a.router.hasClient('app')).toBe(true);
    expect(b.router.hasClient('app')).toBe(false);

    const outcome = a.router.invoke('app', 'GET', '/x');
    const polled = await poll(b, sessionId, 1000);
    expect(polled.status).toBe(200);
    const { message } = (await polled.json()) as { message: { type: string; requestId: string } };
    expect(message.type).toBe('callClient');
    expect((await send(b, sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 'hi' })).status).toBe(202);
    expect(await outcome).toEqual({ ok: true, data: 'hi' });

    const empty = await poll(b, sessionId, 0);
    expect(empty.status).toBe(204);
    const bad = await send(b, sessionId, { type: 'nonsense' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: expect.stringContaining('message') });

    const gone = await fetch(`${b.url}/disconnect`, { method: 'POST', headers: { 'x-mdp-session-id': sessionId } });
    expect(gone.status).toBe(204);
    expect(a.router.hasClient('app')).toBe(false);
    expect(a.held.has(sessionId)).toBe(false);
    expect(state.forwarded).toEqual(['POST /send', 'GET /poll?waitMs=1000', 'POST /send', 'GET /poll?waitMs=0', 'POST /send', 'POST /disconnect']);
  });

  it('is 404 with an empty body when no node holds it (disconnect: 204)', async () => {
    const state = { down: false, forwarded: [] as string[] };
    const b = await node(state);
    await node(state);
    const sent = await send(b, 'no-such-session', { type: 'ping' });
    expect(sent.status).toBe(404);
    expect(await sent.text()).toBe('');
    const polled = await poll(b, 'no-such-session', 0);
    expect(polled.status).toBe(404);
    expect(await polled.text()).toBe('');
    expect((await fetch(`${b.url}/disconnect?sessionId=no-such-session`, { method: 'POST' })).status).toBe(204);
    // A request that names no session is answered here, as ever.
    expect((await fetch(`${b.url}/poll`)).status).toBe(404);
    expect(state.forwarded).toHaveLength(3);
  });

  it('is 503 with Retry-After while the bus is down', async () => {
    const state = { down: false, forwarded: [] as string[] };
    const a = await node(state);
    const b = await node(state);
    const sessionId = await connect(a);
    state.down = true;
    const sent = await send(b, sessionId, { type: 'ping' });
    expect(sent.status).toBe(503);
    expect(sent.headers.get('retry-after')).toBe('2');
    expect(await sent.json()).toEqual({ error: 'The fleet bus (NATS) is lost' });
    // Its own node still serves it.
    expect((await send(a, sessionId, { type: 'ping' })).status).toBe(202);
  });

  it('keeps the message of a poll whose client went away while it waited there', async () => {
    const changes = new Changes();
    const state: FleetState = { down: false, forwarded: [], changes, answered: [] };
    const a = await node(state);
    const b = await node(state);
    const sessionId = await connect(a);
    await send(a, sessionId, { type: 'registerClient', client: descriptor('app', [endpoint('/x')]) });
    const controller = new AbortController();
    const abandoned = poll(b, sessionId, 30_000, { signal: controller.signal }).catch(() => 'aborted');
    const forwarded = (what: string) => until(changes.subscribe, () => state.forwarded.includes(what), { timeoutMs: 5000, what });
    await forwarded('GET /poll?waitMs=30000');
    controller.abort();
    expect(await abandoned).toBe('aborted');
    // The holder hears of it: its poll there ends, taking nothing, before the call is queued.
    await forwarded('POST /abandon');
    await until(changes.subscribe, () => state.answered?.includes('/poll?waitMs=30000 204'), { timeoutMs: 5000, what: 'the abandoned poll answered' });
    const outcome = a.router.invoke('app', 'GET', '/x');
    const next = await poll(a, sessionId, 1000);
    expect(next.status).toBe(200);
    const { message } = (await next.json()) as { message: { type: string; requestId: string } };
    expect(message.type).toBe('callClient');
    await send(a, sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 1 });
    expect(await outcome).toEqual({ ok: true, data: 1 });
  });

  it('keeps the message of a poll its holder answered after the relaying node gave up on it', async () => {
    const changes = new Changes();
    const state: FleetState = { down: false, forwarded: [], changes, answered: [], late: true };
    const a = await node(state);
    const b = await node(state);
    const sessionId = await connect(a);
    await send(a, sessionId, { type: 'registerClient', client: descriptor('app', [endpoint('/x')]) });
    const outcome = a.router.invoke('app', 'GET', '/x');
    // The holder hands the call to the poll, but its answer comes too late for node B: 504.
    const late = await poll(b, sessionId, 1000);
    expect(late.status).toBe(504);
    expect(state.answered).toContain('/poll?waitMs=1000 200');
    await until(changes.subscribe, () => state.forwarded.includes('POST /abandon'), { timeoutMs: 2000, what: 'the holder told' });
    const next = await poll(a, sessionId, 1000);
    expect(next.status).toBe(200);
    const { message } = (await next.json()) as { message: { type: string; requestId: string } };
    expect(message.type).toBe('callClient');
    await send(a, sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 2 });
    expect(await outcome).toEqual({ ok: true, data: 2 });
  });

  it('never relays a relayed request again', async () => {
    const state = { down: false, forwarded: [] as string[] };
    const a = await node(state);
    const answer = await a.transport.answerRelayed(
      {
        method: 'POST',
        target: '/send',
        headers: { 'x-mdp-session-id': 'elsewhere', 'content-type': 'application/json' },
        body: '{"message":{"type":"ping"}}',
      },
      new AbortController().signal,
    );
    expect(answer).toEqual({ status: 404, headers: {}, body: '' });
    expect(state.forwarded).toEqual([]);
  });

  it('asks for an accepted credential on the node it lands on, and the principal on its holder', async () => {
    const policy = createTokenPolicy(['one', 'two']);
    const gate = createAuthGate(policy);
    const options = { authorize: gate.allows, principalOf: gate.principalOf, extractAuth: gate.extract };
    const state = { down: false, forwarded: [] as string[] };
    const a = await node(state, options);
    const b = await node(state, options);
    const sessionId = await connect(a, { authorization: 'Bearer one' });
    expect((await send(b, sessionId, { type: 'ping' })).status).toBe(401);
    expect(state.forwarded).toEqual([]);
    expect((await send(b, sessionId, { type: 'ping' }, { authorization: 'Bearer two' })).status).toBe(401);
    expect((await send(b, sessionId, { type: 'ping' }, { authorization: 'Bearer one' })).status).toBe(202);
  });
});

describe('RelayedPolls (the holder side)', () => {
  it('ends a relayed poll when its relaying node says its client is gone', () => {
    const polls = new RelayedPolls();
    const connection = polls.connection('p1', new AbortController().signal);
    let gone = 0;
    connection.onGone(() => gone++);
    expect(connection.isLive()).toBe(true);
    polls.abandon('p1');
    polls.abandon('p1');
    expect(connection.isLive()).toBe(false);
    expect(gone).toBe(1);
    polls.ended('p1', undefined);
    expect(polls.size).toBe(0);
  });

  it('puts back the message of a poll its relaying node abandoned after it was answered', () => {
    // The holder answered 200, but the relaying node's client went away before that answer came:
    // the relaying node drops it and says /abandon, not /requeue. The message must not be lost.
    const polls = new RelayedPolls();
    let putBack = 0;
    polls.connection('p1', new AbortController().signal);
    polls.ended('p1', () => putBack++);
    polls.abandon('p1');
    expect(putBack).toBe(1);
    // Once: a later requeue or abandon of the same poll puts nothing back again.
    polls.requeue('p1');
    polls.abandon('p1');
    expect(putBack).toBe(1);
    expect(polls.size).toBe(0);
  });

  it('puts a delivered message back once when asked within 30 s, and forgets it after', () => {
    let now = 0;
    const polls = new RelayedPolls(() => now);
    let putBack = 0;
    polls.connection('p1', new AbortController().signal);
    polls.ended('p1', () => putBack++);
    polls.requeue('p1');
    polls.requeue('p1');
    expect(putBack).toBe(1);
    polls.ended('p2', () => putBack++);
    now = 30_000;
    polls.requeue('p2');
    expect(putBack).toBe(1);
    polls.ended('p3', () => putBack++);
    now = 60_001;
    polls.ended('p4', () => putBack++);
    expect(polls.size).toBe(1);
  });
});
