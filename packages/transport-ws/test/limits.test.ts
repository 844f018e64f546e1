/**
 * What the websocket endpoint refuses: calls to peers that are behind (not_ready), peers that do
 * not read (1013, then reset), connections that never
 * register (4408), connections over the caps (503 before the handshake), another principal's
 * client id (4403), catalog changes over the rate (1013), catalogs over the byte caps (1009) or
 * the server's total (1013), and clients over the per-address cap (4429).
 */
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Router, type InvokeOutcome, type Session } from '@mdp/core';
import { TestClient, descriptor, manualClock, recordingLogger, refusedUpgrade, skill } from '@mdp/test-kit';
import { HOLD_FROM, WS_CLOSE, WS_LIMIT_DEFAULTS, createWebSocketTransport } from '../src/index.js';
import { ROUTER_OPTIONS, harnessPerTest, type Harness } from './helpers.js';

const { start, client } = harnessPerTest();

const BODY = 'x'.repeat(16 * 1024);

/**
 * Calls to `id` until one is refused at once (the session's pending count does not grow) or
 * `session` closes; returns their outcomes.
 */
function flood(h: Harness, id: string, session: Session, count: number, body: string): Array<Promise<InvokeOutcome>> {
  const outcomes: Array<Promise<InvokeOutcome>> = [];
  for (let i = 0; i < count && !session.closed; i++) {
    const before = session.pendingCount;
    outcomes.push(h.router.invoke(id, 'GET', '/docs/skill.md', { body }));
    if (session.pendingCount === before) break;
  }
  return outcomes;
}

/** A registered peer `id`, on a transport with a cap (default 1 MiB) and a manual clock. */
async function peerUnderCap(id: string, maxBufferedBytes = 1024 * 1024, router = new Router({ ...ROUTER_OPTIONS, maxPendingCalls: 10_000 })) {
  const clock = manualClock();
  const h = await start({ router, transport: { maxBufferedBytes, clock } });
  const peer = await client(h);
  await peer.register(descriptor(id));
  return { clock, h, peer, session: h.sessions.only };
}

/** A registered peer `slow` that stopped reading, on a transport with a 1 MiB cap and a manual clock. */
async function pausedPeer() {
  const { clock, h, peer: slow, session } = await peerUnderCap('slow');
  slow.tcp.pause();
  return { clock, h, slow, session };
}

const BEHIND = /^Client "slow" is behind: \d+ bytes would wait for it, limit 1048576; try again later$/;

describe('a peer that does not read', () => {
  it('is refused new calls past maxBufferedBytes while it read lately, closed 1013 once it has not for stallTimeoutMs, and reset a second later', async () => {
    const { clock, h, slow, session } = await pausedPeer();

    // Far more than the kernel buffers of a loopback connection take: the rest must be held, up to the cap.
    const outcomes = flood(h, 'slow', session, 4000, BODY);
    expect(session.closed).toBe(false);
    expect(await outcomes.at(-1)).toEqual({
      ok: false,
      source: 'server',
      error: { code: 'not_ready', message: expect.stringMatching(BEHIND), details: { retryAfterMs: 1000 } },
    });
    // A refused call was never the peer's: it does not count as one it let die.
    expect(session.unansweredCalls).toBe(0);
    expect(session.pendingCount).toBe(outcomes.length - 1);

    // No progress for the stall time: the next call closes it, and its pending calls fail at once.
    clock.advance(4_999);
    const more = flood(h, 'slow', session, 4000, BODY);
    expect(await more.at(-1)).toMatchObject({ error: { code: 'not_ready' } });
    const accepted = [...outcomes.slice(0, -1), ...more.slice(0, -1)];
    clock.advance(1);
    void h.router.invoke('slow', 'GET', '/docs/skill.md', { body: BODY });
    expect(session.closed).toBe(true);
    expect(h.router.hasClient('slow')).toBe(false);
    const failed = await Promise.all(accepted);
    expect(failed.every((o) => !o.ok && o.error.code === 'transport_error')).toBe(true);
    expect(failed[0]).toMatchObject({
      error: { message: expect.stringMatching(/^client session ended: Client is not reading: \d+ bytes unread, limit 1048576$/) },
    });

    // It did not read up to the close frame within a second: the socket is reset, and the calls
    // still in the kernel's buffers never reach it.
    clock.advance(1000);
    slow.tcp.resume();
    const closed = await slow.closed;
    expect(closed.code).toBe(1006);
    const received = slow.received.filter((m) => m.type === 'callClient').length;
    // At most what node's own read buffer took before the pause held (one or two 64 KB reads).
    expect(received).toBeLessThan(16);
  });

  it('is closed once its stall time is up though nothing more is sent to it', async () => {
    const { clock, h, session } = await pausedPeer();
    const outcomes = flood(h, 'slow', session, 4000, BODY);
    // Over the cap now (the last call was refused), and no call after it.
    expect(session.closed).toBe(false);
    clock.advance(WS_LIMIT_DEFAULTS.stallTimeoutMs - 1);
    expect(session.closed).toBe(false);
    clock.advance(1);
    expect(session.closed).toBe(true);
    expect(await outcomes.at(-1)).toMatchObject({ error: { code: 'not_ready' } });
    await Promise.all(outcomes);
  });

  it('keeps its stall clock while its callers come and go', async () => {
    const { clock, h, session } = await pausedPeer();
    const callers: AbortController[] = [];
    /** One call whose caller may leave; true when it was refused at once. */
    const call = (): boolean => {
      const caller = new AbortController();
      callers.push(caller);
      const before = session.pendingCount;
      void h.router.invoke('slow', 'GET', '/docs/skill.md', { body: BODY, signal: caller.signal });
      return session.pendingCount === before;
    };
    let refused = false;
    for (let i = 0; i < 4000 && !refused; i++) refused = call();
    expect(refused).toBe(true);
    // Every second all its callers leave (nothing is pending), and a new one comes.
    for (let second = 0; second < 5 && !session.closed; second++) {
      for (const caller of callers.splice(0)) caller.abort();
      expect(session.pendingCount).toBe(0);
      clock.advance(1000);
      call();
    }
    expect(session.closed).toBe(true);
  });

  it('answering a call puts off the close by another stallTimeoutMs', async () => {
    const { clock, h, slow, session } = await pausedPeer();
    const outcomes = flood(h, 'slow', session, 4000, BODY);
    clock.advance(4_000);
    // The peer still sends while it does not read: it answers its oldest call.
    let oldest = session.lastCall;
    while (oldest?.sessionPrev) oldest = oldest.sessionPrev;
    slow.send({ type: 'callClientResult', requestId: oldest!.requestId, ok: true, data: 1 });
    expect(await outcomes[0]).toEqual({ ok: true, data: 1 });
    clock.advance(4_000);
    const more = flood(h, 'slow', session, 4000, BODY);
    expect(await more.at(-1)).toMatchObject({ error: { code: 'not_ready' } });
    expect(session.closed).toBe(false);
    clock.advance(1_000);
    void h.router.invoke('slow', 'GET', '/docs/skill.md', { body: BODY });
    expect(session.closed).toBe(true);
    await Promise.all([...outcomes, ...more]);
  });

  it('never sends a held call whose caller went away, and sends the held ones still wanted', async () => {
    const h = await start({
      router: new Router({ ...ROUTER_OPTIONS, maxPendingCalls: 10_000 }),
      transport: { maxBufferedBytes: 256 * 1024 * 1024 },
    });
    const slow = await client(h);
    await slow.register(descriptor('slow'));
    slow.tcp.pause();
    const controllers: AbortController[] = [];
    const outcomes: Array<Promise<InvokeOutcome>> = [];
    for (let i = 0; i < 2000; i++) {
      const controller = new AbortController();
      controllers.push(controller);
      outcomes.push(h.router.invoke('slow', 'GET', '/docs/skill.md', { body: BODY, signal: controller.signal }));
    }
    // Every caller but the last leaves while the peer is stalled.
    for (const controller of controllers.slice(0, -1)) controller.abort();
    const last = h.sessions.opened[0]!.lastCall?.requestId;
    slow.tcp.resume();
    const wanted = await slow.next((m) => m.type === 'callClient' && m.requestId === last);
    expect(wanted.requestId).toBe(last);
    const received = slow.received.filter((m) => m.type === 'callClient').length;
    // Only what reached the socket before the stall was noticed arrives; the held calls are gone.
    expect(received).toBeLessThan(1000);
    slow.send({ type: 'callClientResult', requestId: last, ok: true, data: 'fine' });
    expect(await outcomes.at(-1)).toEqual({ ok: true, data: 'fine' });
    expect(HOLD_FROM).toBe(64 * 1024);
  });
});

describe('a peer that reads, under a burst larger than the cap', () => {
  it('is refused the calls past the cap, answers the rest, and stays open', async () => {
    const clock = manualClock();
    const h = await start({
      router: new Router({ ...ROUTER_OPTIONS, maxPendingCalls: 10_000 }),
      transport: { maxBufferedBytes: 1024 * 1024, clock },
    });
    const busy = await client(h);
    busy.handler = () => 'ok';
    await busy.register(descriptor('busy'));
    const outcomes = await Promise.all(Array.from({ length: 2000 }, () => h.router.invoke('busy', 'GET', '/docs/skill.md', { body: BODY })));
    const refused = outcomes.filter((o) => !o.ok && o.error.code === 'not_ready');
    expect(refused.length).toBeGreaterThan(0);
    expect(outcomes.filter((o) => o.ok).length + refused.length).toBe(outcomes.length);
    expect(busy.socket.readyState).toBe(WebSocket.OPEN);
    // Once it caught up, it is served as before.
    expect(await h.router.invoke('busy', 'GET', '/docs/skill.md', {})).toEqual({ ok: true, data: 'ok' });
  });
});

describe('a peer that was idle, under a burst larger than the cap', () => {
  it('is refused the calls past the cap, not closed: its stall clock starts with the first call', async () => {
    const { clock, h, peer: idle, session } = await peerUnderCap('idle');
    clock.advance(60_000);
    // The burst lands before the peer can read any of it.
    const outcomes = flood(h, 'idle', session, 4000, BODY);
    expect(session.closed).toBe(false);
    expect(await outcomes.at(-1)).toMatchObject({ error: { code: 'not_ready' } });
    idle.socket.terminate();
    await Promise.all(outcomes);
  });
});

describe('a peer that lets its calls die', () => {
  it('is closed 1013 once more than maxBufferedBytes of calls went to it since its last answer, though its socket never backed up', async () => {
    const { clock, h, peer: stalled, session } = await peerUnderCap('stalled', 100_000);
    let refused: InvokeOutcome | undefined;
    // Each caller gives up at once; the kernel takes these few kilobytes without a murmur.
    for (let i = 0; i < 100 && refused === undefined; i++) {
      const controller = new AbortController();
      const before = session.pendingCount;
      const outcome = h.router.invoke('stalled', 'GET', '/docs/skill.md', { body: 'x'.repeat(2000), signal: controller.signal });
      if (session.pendingCount === before) refused = await outcome;
      controller.abort();
    }
    // It read lately (it registered): refused first, closed once it has not read for the stall time.
    expect(refused).toMatchObject({ error: { code: 'not_ready' } });
    expect(session.closed).toBe(false);
    clock.advance(WS_LIMIT_DEFAULTS.stallTimeoutMs);
    void h.router.invoke('stalled', 'GET', '/docs/skill.md', { body: 'x'.repeat(2000) });
    expect(session.closed).toBe(true);
    const closed = await stalled.closed;
    expect(closed.code).toBe(WS_CLOSE.tryAgainLater);
    expect(closed.reason).toMatch(/^Client is not reading: \d+ bytes unread, limit 100000$/);
  });

  it('does not put off its close by sending pongs or answers to ids it was never sent', async () => {
    const log = recordingLogger();
    const { clock, h, peer: stalled, session } = await peerUnderCap('stalled', 100_000, new Router({ ...ROUTER_OPTIONS, logger: log.logger }));
    const dying = (): InvokeOutcome | undefined => {
      const controller = new AbortController();
      const before = session.pendingCount;
      void h.router.invoke('stalled', 'GET', '/docs/skill.md', { body: 'x'.repeat(2000), signal: controller.signal });
      const refused = session.pendingCount === before;
      controller.abort();
      return refused ? ({} as InvokeOutcome) : undefined;
    };
    let refused: InvokeOutcome | undefined;
    for (let i = 0; i < 100 && refused === undefined; i++) refused = dying();
    expect(refused).toBeDefined();
    clock.advance(4_000);
    // It reads nothing, but it can still send: a pong nobody asked for, an answer it made up.
    stalled.send({ type: 'pong', timestamp: 1 });
    stalled.send({ type: 'callClientResult', requestId: 'made-up', ok: true, data: 1 });
    await log.seen('result.ignored', { requestId: 'made-up' });
    clock.advance(1_000);
    dying();
    expect(session.closed).toBe(true);
    expect((await stalled.closed).code).toBe(WS_CLOSE.tryAgainLater);
  });

  it('is not taken for a stalled one when it answers its calls late, after their callers left', async () => {
    const { clock, h, peer: late, session } = await peerUnderCap('late', 100_000);
    // Each caller gives up before the answer; the peer reads every call and answers it anyway.
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 20; i++) {
        const controller = new AbortController();
        const arrived = late.next((m) => m.type === 'callClient');
        void h.router.invoke('late', 'GET', '/docs/skill.md', { body: 'x'.repeat(2000), signal: controller.signal });
        controller.abort();
        const call = await arrived;
        if (call.type === 'callClient') late.send({ type: 'callClientResult', requestId: call.requestId, ok: true, data: 'too late' });
      }
      clock.advance(WS_LIMIT_DEFAULTS.stallTimeoutMs);
    }
    // 400 KB sent in all, four times the cap, and every call died unanswered in time: still open.
    await late.roundTrip();
    expect(session.closed).toBe(false);
  });

  it('is not closed while it works on large calls it will answer', async () => {
    const h = await start({ transport: { maxBufferedBytes: 150_000 } });
    const busy = await client(h);
    await busy.register(descriptor('busy'));
    // 250 KB of calls before any answer, each written once the one before arrived (nothing waits in the socket).
    const outcomes: Array<Promise<InvokeOutcome>> = [];
    for (let i = 0; i < 5; i++) {
      const arrived = busy.next((m) => m.type === 'callClient');
      outcomes.push(h.router.invoke('busy', 'GET', '/docs/skill.md', { body: 'x'.repeat(50_000) }));
      await arrived;
    }
    for (const call of busy.received.filter((m) => m.type === 'callClient')) {
      busy.send({ type: 'callClientResult', requestId: call.requestId, ok: true, data: 1 });
    }
    expect((await Promise.all(outcomes)).every((o) => o.ok)).toBe(true);
    expect(busy.socket.readyState).toBe(WebSocket.OPEN);
  });
});

describe('limit options', () => {
  it.each([
    ['maxBufferedBytes', 0],
    ['stallTimeoutMs', 0],
    ['stallTimeoutMs', 1.5],
    ['registerTimeoutMs', -1],
  ] as const)('refuse %s %s', (name, value) => {
    expect(() => createWebSocketTransport(new Router(ROUTER_OPTIONS), { [name]: value })).toThrow(new RangeError(`${name} must be a positive whole number`));
  });
});

describe('registration deadline', () => {
  it('closes a connection that sends no registerClient in time (4408), not one that did', async () => {
    const h = await start({ transport: { registerTimeoutMs: 150 } });
    const registered = await client(h);
    const silent = await client(h);
    await registered.register(descriptor('fine'));
    expect(await silent.closed).toEqual({ code: WS_CLOSE.registerTimeout, reason: 'No registerClient within 150 ms of connecting' });
    // The registered one's deadline passed too: it is still served.
    registered.send({ type: 'ping', timestamp: 2 });
    expect(await registered.next((m) => m.type === 'pong')).toEqual({ type: 'pong', timestamp: 2 });
    expect(registered.socket.readyState).toBe(WebSocket.OPEN);
  });

  it('defaults to 10 s', () => {
    expect(WS_LIMIT_DEFAULTS).toEqual({
      maxBufferedBytes: 8 * 1024 * 1024,
      stallTimeoutMs: 5_000,
      registerTimeoutMs: 10_000,
      maxConnections: 10_000,
      maxConnectionsPerAddress: 8_000,
    });
  });
});

describe('connection caps', () => {
  it('answers 503 before the handshake over the per-address cap, and admits again once one leaves', async () => {
    const h = await start({ transport: { maxConnections: 10, maxConnectionsPerAddress: 2 } });
    const first = await client(h);
    const second = await client(h);
    await second.register(descriptor('kept'));
    expect(await refusedUpgrade(h.url)).toMatchObject({
      status: 503,
      body: JSON.stringify({ error: 'Too many websocket connections from this address (limit 2); try again later' }),
      headers: { 'retry-after': '1' },
    });
    // The others are still served meanwhile.
    second.send({ type: 'ping', timestamp: 3 });
    expect(await second.next((m) => m.type === 'pong')).toEqual({ type: 'pong', timestamp: 3 });
    first.socket.close();
    await h.sessions.ended(h.sessions.opened[0]!);
    await client(h);
    expect(h.transport.connectionCount).toBe(2);
  });

  it('answers 503 over the total cap', async () => {
    const h = await start({ transport: { maxConnections: 1, maxConnectionsPerAddress: 5 } });
    await client(h);
    expect(await refusedUpgrade(h.url)).toMatchObject({
      status: 503,
      body: JSON.stringify({ error: 'Too many websocket connections (limit 1); try again later' }),
    });
  });
});

describe('principals', () => {
  const tokens = new Map([
    ['Bearer one', 'p1'],
    ['Bearer two', 'p2'],
  ]);
  const auth = {
    authorize: (a: { token?: string; scheme?: string } | undefined) => a !== undefined && tokens.has(`${a.scheme} ${a.token}`),
    principalOf: (a: { token?: string; scheme?: string } | undefined) => tokens.get(`${a?.scheme} ${a?.token}`),
  };

  it("refuses another principal's registerClient for a held id with 4403 and leaves the holder untouched", async () => {
    const h = await start({ transport: auth });
    const owner = await client(h, { authorization: 'Bearer one' });
    await owner.register(descriptor('owned'));
    const intruder = await client(h, { authorization: 'Bearer two' });
    intruder.send({ type: 'registerClient', client: descriptor('owned') });
    expect(await intruder.closed).toEqual({ code: WS_CLOSE.clientIdTaken, reason: 'Client id held by another principal' });
    expect(h.router.getClient('owned')?.sessionId).toBe(h.sessions.opened[0]?.id);
    const call = owner.next((m) => m.type === 'callClient');
    void h.router.invoke('owned', 'GET', '/docs/skill.md', { auth: { token: 'reader' } });
    expect(await call).toMatchObject({ clientId: 'owned', auth: { token: 'reader' } });
  });

  it('opens a proven mirror link as its member, under the principal of the client it mirrors', async () => {
    const peerOf = (headers: Record<string, string | readonly string[] | undefined>) =>
      headers['x-proof'] === 'good' ? { serverId: 'member-1', principal: 'owner' } : undefined;
    const h = await start({ transport: { ...auth, peerOf } });
    await client(h, { authorization: 'Bearer one', 'x-proof': 'good' });
    await client(h, { authorization: 'Bearer one', 'x-proof': 'bad' });
    expect(h.sessions.opened.map((s) => [s.peer, s.principal])).toEqual([
      ['member-1', 'owner'],
      [undefined, 'p1'],
    ]);
    // Without a policy a proven link is its member's too, under its client's principal; any other
    // connection is its page's origin (or the machine's, without one).
    const open = await start({ transport: { peerOf } });
    await client(open, { 'x-proof': 'good' });
    await client(open, { 'x-proof': 'bad', origin: 'http://evil.example' });
    expect(open.sessions.opened.map((s) => [s.peer, s.principal])).toEqual([
      ['member-1', 'owner'],
      [undefined, 'origin:http://evil.example'],
    ]);
  });

  it('takes a proven mirror link without a credential under a policy, and nothing else', async () => {
    const peerOf = (headers: Record<string, string | readonly string[] | undefined>) =>
      headers['x-proof'] === 'good' ? { serverId: 'member-1', principal: 'owner' } : undefined;
    const h = await start({ transport: { ...auth, peerOf } });
    // A cluster signed in by access tokens alone: its links carry the secret's proof, no token.
    const link = await client(h, { 'x-proof': 'good' });
    await link.register(descriptor('member-1.app'));
    expect(h.sessions.opened.map((s) => [s.peer, s.principal])).toEqual([['member-1', 'owner']]);
    const forged = await TestClient.connect(h.url, { headers: { 'x-proof': 'bad' } });
    expect(await forged.closed).toEqual({ code: WS_CLOSE.unauthorized, reason: 'Unauthorized' });
    const bare = await TestClient.connect(h.url);
    expect(await bare.closed).toEqual({ code: WS_CLOSE.unauthorized, reason: 'Unauthorized' });
    expect(h.sessions.opened).toHaveLength(1);
  });

  it("lets the same principal's new connection replace the old one (4000)", async () => {
    const h = await start({ transport: auth });
    const first = await client(h, { authorization: 'Bearer one' });
    await first.register(descriptor('owned'));
    const second = await client(h, { authorization: 'Bearer one' });
    await second.register(descriptor('owned'));
    expect(await first.closed).toEqual({ code: 4000, reason: 'Replaced by newer client session' });
    expect(h.router.getClient('owned')?.sessionId).toBe(h.sessions.opened[1]?.id);
  });
});

describe('catalog rate', () => {
  it('closes a connection changing its catalog faster than the limit with 1013', async () => {
    const h = await start({ router: new Router({ ...ROUTER_OPTIONS, maxCatalogUpdatesPerMinute: 2 }) });
    const socket = await client(h);
    await socket.register(descriptor('c'));
    socket.send({ type: 'updateClientCatalog', clientId: 'c', paths: [] });
    socket.send({ type: 'updateClientCatalog', clientId: 'c', paths: [] });
    const closed = await socket.closed;
    expect(closed.code).toBe(WS_CLOSE.tryAgainLater);
    expect(closed.reason).toMatch(/^Catalog changes over the limit of 2 per minute; retry in \d+ ms$/);
  });
});

describe('catalog byte caps', () => {
  it('close 1009 naming the cap for a description, a schema or a catalog over it, registering nothing', async () => {
    const h = await start({ router: new Router({ ...ROUTER_OPTIONS, maxDescriptionLength: 20, maxSchemaLength: 40, maxCatalogBytes: 300 }) });
    const cases: Array<[unknown, string]> = [
      [
        descriptor('d', [skill('/s/skill.md', { description: 'd'.repeat(21) })]),
        'paths[0].description is 21 characters long; at most 20 are allowed (maxDescriptionLength)',
      ],
      [
        descriptor('s', [{ type: 'endpoint', method: 'POST', path: '/a', outputSchema: { d: 'x'.repeat(40) } }]),
        'paths[0].outputSchema is over 40 characters as JSON (maxSchemaLength)',
      ],
      [
        descriptor(
          'c',
          Array.from({ length: 20 }, (_, i) => skill(`/s${i}/skill.md`)),
        ),
        'Catalog is over 300 bytes as JSON (maxCatalogBytes)',
      ],
    ];
    for (const [client_, reason] of cases) {
      const socket = await client(h);
      socket.send({ type: 'registerClient', client: client_ });
      expect(await socket.closed).toEqual({ code: WS_CLOSE.messageTooBig, reason });
    }
    expect(h.router.clientCount).toBe(0);
  });

  it('close 1009 on an update over a cap; the client leaves with its session, the total is freed', async () => {
    const h = await start({ router: new Router({ ...ROUTER_OPTIONS, maxDescriptionLength: 20 }) });
    const socket = await client(h);
    await socket.register(descriptor('u'));
    expect(h.router.catalogBytes).toBe(Buffer.byteLength(JSON.stringify(descriptor('u'))));
    socket.send({ type: 'updateClientCatalog', clientId: 'u', paths: [skill('/s/skill.md', { description: 'd'.repeat(21) })] });
    expect(await socket.closed).toEqual({
      code: WS_CLOSE.messageTooBig,
      reason: 'paths[0].description is 21 characters long; at most 20 are allowed (maxDescriptionLength)',
    });
    expect(h.router.hasClient('u')).toBe(false);
    expect(h.router.catalogBytes).toBe(0);
  });

  it('close 1013 for a catalog past the total of all catalogs; the others stay', async () => {
    const bytes = Buffer.byteLength(JSON.stringify(descriptor('t1')));
    const h = await start({ router: new Router({ ...ROUTER_OPTIONS, maxTotalCatalogBytes: bytes }) });
    const first = await client(h);
    await first.register(descriptor('t1'));
    const second = await client(h);
    second.send({ type: 'registerClient', client: descriptor('t2') });
    expect(await second.closed).toEqual({
      code: WS_CLOSE.tryAgainLater,
      reason: `Catalogs here hold ${bytes} bytes; ${bytes} more would pass maxTotalCatalogBytes (${bytes}); try again later`,
    });
    expect(h.router.hasClient('t1')).toBe(true);
  });
});

describe('clients per address', () => {
  it('close 4429 past maxClientsPerAddress, and take a client again once one leaves', async () => {
    const h = await start({ router: new Router({ ...ROUTER_OPTIONS, maxClientsPerAddress: 2 }) });
    const first = await client(h);
    await first.register(descriptor('a1'));
    await (await client(h)).register(descriptor('a2'));
    // A connection without a client is not refused; its registration is.
    const third = await client(h);
    third.send({ type: 'registerClient', client: descriptor('a3') });
    expect(await third.closed).toEqual({ code: WS_CLOSE.tooManyClients, reason: 'Too many clients from this address (maxClientsPerAddress 2)' });
    expect(h.router.hasClient('a3')).toBe(false);
    await first.close();
    await h.sessions.ended(h.sessions.opened[0]!);
    await (await client(h)).register(descriptor('a3'));
    expect(h.router.hasClient('a3')).toBe(true);
  });
});
