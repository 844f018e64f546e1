/** Invocations: callClient wire shape, results, time-outs, ending sessions, ping/pong (SPEC §3, §4). */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseServerMessage } from '@mdp/protocol';
import { ROUTER_DEFAULTS, Router } from '../src/index.js';
import { UUID, connect, connectClient, endpoint, flush, prompt, skill, track, manualClock, type ManualClock } from './helpers.js';

let router: Router;
let clock: ManualClock;

beforeEach(() => {
  clock = manualClock();
  router = new Router({ clock });
});

afterEach(async () => {
  await router.close();
});

describe('callClient message', () => {
  it('carries the path form and the named form with the same values', () => {
    const { transport } = connectClient(router, 'alpha', [endpoint('/orders/:id/items/:item', 'POST')]);
    const auth = { scheme: 'Bearer', token: 'secret', headers: { 'x-mdp-auth-tenant': 'demo' }, metadata: { role: 'op' } };

    void router.invoke('alpha', 'POST', '/orders/42/items/7', {
      query: { verbose: '1' },
      body: { quantity: 3 },
      headers: { 'x-trace': 'abc' },
      auth,
    });

    const message = transport.lastCall;
    expect(message.requestId).toMatch(UUID);
    expect(message).toEqual({
      type: 'callClient',
      requestId: message.requestId,
      clientId: 'alpha',
      // path form
      method: 'POST',
      path: '/orders/42/items/7',
      params: { id: '42', item: '7' },
      query: { verbose: '1' },
      body: { quantity: 3 },
      headers: { 'x-trace': 'abc' },
      auth,
      // named form
      kind: 'tool',
      name: '/orders/42/items/7',
      args: { params: { id: '42', item: '7' }, query: { verbose: '1' }, body: { quantity: 3 }, headers: { 'x-trace': 'abc' } },
    });
    // What goes on the wire is a valid server-to-client message for every client SDK.
    const wire: unknown = JSON.parse(JSON.stringify(message));
    expect(parseServerMessage(wire)).toMatchObject({ ok: true });
  });

  it.each([
    ['skill', skill('/docs/:topic/skill.md'), '/docs/review/skill.md', { topic: 'review' }],
    ['prompt', prompt('/prompts/:name/prompt.md'), '/prompts/summarize/prompt.md', { name: 'summarize' }],
    ['prompt', prompt('/prompts/summarize.prompt.md'), '/prompts/summarize.prompt.md', {}],
    ['tool', endpoint('/status'), '/status', {}],
  ] as const)('uses kind %s, method GET and name = concrete path', (kind, descriptor, path, params) => {
    const { transport } = connectClient(router, 'alpha', [descriptor]);
    void router.invoke('alpha', 'GET', path);
    expect(transport.lastCall).toMatchObject({ method: 'GET', path, params, kind, name: path, args: { params } });
    expect(parseServerMessage(JSON.parse(JSON.stringify(transport.lastCall)))).toMatchObject({ ok: true });
  });

  it('gives every call a fresh requestId', () => {
    const { transport } = connectClient(router, 'alpha');
    void router.invoke('alpha', 'GET', '/ping');
    void router.invoke('alpha', 'GET', '/ping');
    const [a, b] = transport.calls;
    expect(a?.requestId).not.toBe(b?.requestId);
    expect(router.pendingCount).toBe(2);
  });
});

describe('results', () => {
  it('resolves with the data of ok:true', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    const outcome = router.invoke('alpha', 'GET', '/ping');
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: { pong: 1 } });
    await expect(outcome).resolves.toEqual({ ok: true, data: { pong: 1 } });
    expect(router.pendingCount).toBe(0);
  });

  it('ignores a result from another session; the right session still resolves', async () => {
    const target = connectClient(router, 'alpha');
    const intruder = connectClient(router, 'mallory');
    const stranger = connect(router);
    const call = track(router.invoke('alpha', 'GET', '/ping'));
    const requestId = target.transport.lastCall.requestId;

    intruder.session.handle({ type: 'callClientResult', requestId, ok: true, data: 'forged' });
    stranger.session.handle({ type: 'callClientResult', requestId, ok: false, error: { code: 'handler_error', message: 'x' } });
    await flush();
    expect(call.settled).toBe(false);
    expect(router.pendingCount).toBe(1);

    target.session.handle({ type: 'callClientResult', requestId, ok: true, data: 'genuine' });
    await flush();
    expect(call.outcome).toEqual({ ok: true, data: 'genuine' });
  });

  it('ignores results for unknown request ids and duplicate results', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    expect(() => session.handle({ type: 'callClientResult', requestId: 'nope', ok: true })).not.toThrow();
    const call = track(router.invoke('alpha', 'GET', '/ping'));
    const requestId = transport.lastCall.requestId;
    session.handle({ type: 'callClientResult', requestId, ok: true, data: 1 });
    session.handle({ type: 'callClientResult', requestId, ok: true, data: 2 });
    await flush();
    expect(call.outcome).toEqual({ ok: true, data: 1 });
  });

  it('passes an ok:false error with an unknown code through with source client', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    const outcome = router.invoke('alpha', 'GET', '/ping');
    const error = { code: 'quota_exceeded', message: 'Too many calls', details: { retryAfter: 3 } };
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: false, error });
    await expect(outcome).resolves.toEqual({ ok: false, source: 'client', error });
  });

  it('turns ok:false without an error into a client handler_error', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    const outcome = router.invoke('alpha', 'GET', '/ping');
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: false });
    await expect(outcome).resolves.toMatchObject({ ok: false, source: 'client', error: { code: 'handler_error' } });
  });
});

describe('time-outs', () => {
  it(`fail with code timeout after the default ${ROUTER_DEFAULTS.invocationTimeoutMs} ms`, async () => {
    expect(ROUTER_DEFAULTS.invocationTimeoutMs).toBe(15_000);
    expect(router.options.invocationTimeoutMs).toBe(15_000);
    connectClient(router, 'alpha');
    const call = track(router.invoke('alpha', 'GET', '/ping'));

    await clock.advanceSettled(14_999);
    expect(call.settled).toBe(false);
    await clock.advanceSettled(1);
    expect(call.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'timeout' } });
    expect(router.pendingCount).toBe(0);
  });

  it('honour a per-call override', async () => {
    connectClient(router, 'alpha');
    const short = track(router.invoke('alpha', 'GET', '/ping', { timeoutMs: 250 }));
    const normal = track(router.invoke('alpha', 'GET', '/ping'));

    await clock.advanceSettled(250);
    expect(short.outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(normal.settled).toBe(false);
    await clock.advanceSettled(14_750);
    expect(normal.outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
  });

  it('honour the router option', async () => {
    await router.close();
    router = new Router({ clock, invocationTimeoutMs: 1_000 });
    connectClient(router, 'alpha');
    const call = track(router.invoke('alpha', 'GET', '/ping'));
    await clock.advanceSettled(1_000);
    expect(call.outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
  });

  it('ignore a result that arrives after the time-out', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    const call = track(router.invoke('alpha', 'GET', '/ping', { timeoutMs: 10 }));
    await clock.advanceSettled(10);
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: 'late' });
    await flush();
    expect(call.outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
  });

  it('of answered calls go away: by their time at the latest, at once when the last session ends', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    const call = track(router.invoke('alpha', 'GET', '/ping'));
    expect(clock.pending()).toBe(2);
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: 'pong' });
    // The time-out timer is kept for the next call until it would have fired; it expires nothing.
    await clock.advanceSettled(router.options.invocationTimeoutMs);
    expect(call.outcome).toEqual({ ok: true, data: 'pong' });
    expect(clock.pending()).toBe(1); // only the liveness sweep
    void router.invoke('alpha', 'GET', '/ping');
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true });
    expect(clock.pending()).toBe(2);
    session.end();
    expect(clock.pending()).toBe(0);
  });
});

describe('ending a session', () => {
  it('fails its pending calls at once with transport_error, and only its own', async () => {
    const a = connectClient(router, 'alpha');
    connectClient(router, 'beta');
    const a1 = track(router.invoke('alpha', 'GET', '/ping'));
    const a2 = track(router.invoke('alpha', 'GET', '/ping'));
    const b1 = track(router.invoke('beta', 'GET', '/ping'));

    a.session.end();
    await flush();

    for (const call of [a1, a2]) {
      expect(call.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    }
    expect(b1.settled).toBe(false);
    expect(router.pendingCount).toBe(1);
    expect(router.getClient('alpha')).toBeUndefined();
  });
});

describe('draining', () => {
  it('refuses new calls with not_ready, lets the ones in flight finish, and resolves when none is left', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    const first = track(router.invoke('alpha', 'GET', '/ping'));
    const firstId = transport.lastCall.requestId;
    const second = track(router.invoke('alpha', 'GET', '/ping'));
    const secondId = transport.lastCall.requestId;
    let drained = false;
    void router.drain().then(() => (drained = true));
    await expect(router.invoke('alpha', 'GET', '/ping')).resolves.toEqual({
      ok: false,
      source: 'server',
      error: { code: 'not_ready', message: 'Server is shutting down' },
    });
    expect(transport.calls).toHaveLength(2);
    session.handle({ type: 'callClientResult', requestId: firstId, ok: true, data: 1 });
    await flush();
    expect(first.outcome).toEqual({ ok: true, data: 1 });
    expect(drained).toBe(false);
    session.handle({ type: 'callClientResult', requestId: secondId, ok: true, data: 2 });
    await flush();
    expect(second.outcome).toEqual({ ok: true, data: 2 });
    expect(drained).toBe(true);
  });

  it('resolves at once with nothing in flight, and when close() ends what is left', async () => {
    await router.drain();
    connectClient(router, 'alpha');
    await router.close();
    router = new Router({ clock });
    connectClient(router, 'alpha');
    const call = track(router.invoke('alpha', 'GET', '/ping'));
    const drained = router.drain();
    await router.close();
    await drained;
    expect(call.outcome).toMatchObject({ ok: false, error: { code: 'transport_error' } });
  });
});

describe('unresolvable calls', () => {
  it('an unknown client ends as not_found without sending anything', async () => {
    await expect(router.invoke('ghost', 'GET', '/ping')).resolves.toMatchObject({
      ok: false,
      source: 'server',
      error: { code: 'not_found' },
    });
  });

  it('an unknown path or method ends as not_found', async () => {
    const { transport } = connectClient(router, 'alpha', [endpoint('/ping')]);
    await expect(router.invoke('alpha', 'GET', '/pong')).resolves.toMatchObject({ error: { code: 'not_found' } });
    await expect(router.invoke('alpha', 'POST', '/ping')).resolves.toMatchObject({ error: { code: 'not_found' } });
    expect(transport.calls).toEqual([]);
  });

  it('invokeTarget for a client that went away ends as not_found', async () => {
    const { session } = connectClient(router, 'alpha');
    const target = router.findTarget('alpha', 'GET', '/ping');
    expect(target).toBeDefined();
    session.end();
    await expect(router.invokeTarget('alpha', target!)).resolves.toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(router.pendingCount).toBe(0);
  });
});

describe('Session.pendingCount', () => {
  it('counts calls until they are answered, time out or fail with their session', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    const answered = router.invoke('alpha', 'GET', '/ping');
    void router.invoke('alpha', 'GET', '/ping', { timeoutMs: 10 });
    void router.invoke('alpha', 'GET', '/ping');
    expect(session.pendingCount).toBe(3);
    session.handle({ type: 'callClientResult', requestId: transport.calls[0]!.requestId, ok: true });
    await answered;
    expect(session.pendingCount).toBe(2);
    await clock.advanceSettled(10);
    expect(session.pendingCount).toBe(1);
    session.end();
    expect(session.pendingCount).toBe(0);
  });
});

describe('dispatch (callback form)', () => {
  it('calls back once with the result, and at once for a client that is not connected', () => {
    const { session, transport } = connectClient(router, 'alpha');
    const target = router.findTarget('alpha', 'GET', '/ping')!;
    const outcomes: unknown[] = [];
    router.dispatch('alpha', target, {}, (outcome) => outcomes.push(outcome));
    expect(outcomes).toEqual([]);
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: 1 });
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: 2 });
    expect(outcomes).toEqual([{ ok: true, data: 1 }]);
    router.dispatch('nobody', target, {}, (outcome) => outcomes.push(outcome));
    expect(outcomes[1]).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });
  });

  it('a callback that throws neither breaks the session nor leaves the call pending', () => {
    const { session, transport } = connectClient(router, 'alpha');
    const target = router.findTarget('alpha', 'GET', '/ping')!;
    router.dispatch('alpha', target, {}, () => {
      throw new Error('caller bug');
    });
    expect(() => session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true })).not.toThrow();
    expect(router.pendingCount).toBe(0);
    expect(session.closed).toBe(false);
  });
});

describe('heartbeat messages from the client', () => {
  it('ping gets a pong with the same timestamp', () => {
    const { session, transport } = connect(router);
    session.handle({ type: 'ping', timestamp: 1234567 });
    expect(transport.sent).toEqual([{ type: 'pong', timestamp: 1234567 }]);
  });

  it('a ping without timestamp gets the current time', () => {
    clock.advance(1234);
    const { session, transport } = connect(router);
    session.handle({ type: 'ping' });
    expect(transport.sent).toEqual([{ type: 'pong', timestamp: 1_700_000_001_234 }]);
  });

  it('a pong is absorbed and refreshes last-seen', () => {
    const { session, transport } = connect(router);
    const before = session.lastSeen;
    clock.advance(5_000);
    session.handle({ type: 'pong', timestamp: 1 });
    expect(transport.sent).toEqual([]);
    expect(session.lastSeen).toBe(before + 5_000);
  });
});
