/** The call-end observer (`onCallEnd`): one record per call, whatever ends it, and session counts. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Router, createLocalHost, type CallRecord } from '../src/index.js';
import { connect, connectClient, endpoint, flush, skill, manualClock, type ManualClock } from './helpers.js';

let router: Router;
let clock: ManualClock;
let records: CallRecord[];

beforeEach(() => {
  clock = manualClock();
  records = [];
  router = new Router({ clock, invocationTimeoutMs: 1000, onCallEnd: (record) => records.push(record) });
});

afterEach(async () => {
  await router.close();
});

describe('onCallEnd', () => {
  it('sees an answered call once, with its route, target, caller and duration', async () => {
    const { session, transport } = connectClient(router, 'alpha', [endpoint('/items/:id', 'POST')]);
    const auth = { scheme: 'Bearer', token: 't1' };
    const pending = router.invoke('alpha', 'POST', '/items/7', { body: { n: 1 }, auth, route: 'skill' });
    clock.advance(25);
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: 'done' });
    await pending;
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record).toMatchObject({ route: 'skill', clientId: 'alpha', method: 'POST', path: '/items/7', caller: auth, outcome: { ok: true, data: 'done' } });
    expect(record!.durationMs).toBeGreaterThanOrEqual(25);
  });

  it('defaults the route to host and the caller to the forwarded auth; an explicit caller wins', async () => {
    const { session, transport } = connectClient(router, 'alpha', [endpoint('/a')]);
    const forwarded = { token: 'for-the-client' };
    const caller = { scheme: 'Bearer', token: 'the-caller' };
    const first = router.invoke('alpha', 'GET', '/a', { auth: forwarded });
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true });
    const second = router.invoke('alpha', 'GET', '/a', { auth: forwarded, caller, route: 'mcp' });
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true });
    await Promise.all([first, second]);
    expect(records.map((r) => [r.route, r.caller])).toEqual([
      ['host', forwarded],
      ['mcp', caller],
    ]);
  });

  it('sees every way a call fails: client error, time-out, session end, no such path, caller gone, client gone', async () => {
    const { session, transport } = connectClient(router, 'alpha', [endpoint('/a'), skill('/s/skill.md')]);
    const failed = router.invoke('alpha', 'GET', '/a');
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: false, error: { code: 'handler_error', message: 'no' } });
    await failed;

    const timedOut = router.invoke('alpha', 'GET', '/a');
    clock.advance(1000);
    await timedOut;

    await router.invoke('alpha', 'GET', '/missing');
    const aborted = new AbortController();
    aborted.abort();
    await router.invoke('alpha', 'GET', '/a', { signal: aborted.signal });

    const ended = router.invoke('alpha', 'GET', '/s/skill.md');
    session.end();
    await ended;

    const target = { method: 'GET' as const, path: '/a', params: {}, kind: 'tool' as const, descriptor: endpoint('/a') };
    router.dispatch('alpha', target, {}, () => undefined);

    expect(records.map((r) => [r.path, r.outcome.ok ? 'ok' : r.outcome.error.code])).toEqual([
      ['/a', 'handler_error'],
      ['/a', 'timeout'],
      ['/missing', 'not_found'],
      ['/a', 'transport_error'],
      ['/s/skill.md', 'transport_error'],
      ['/a', 'not_found'],
    ]);
    expect(records.find((r) => r.path === '/missing')!.durationMs).toBe(0);
  });

  it('host calls carry their route and caller to the observer', async () => {
    const { session, transport } = connectClient(router, 'alpha', [endpoint('/a')]);
    const host = createLocalHost(router);
    const caller = { scheme: 'Bearer', token: 'agent' };
    const call = host.callPath({ clientId: 'alpha', method: 'GET', path: '/a' }, { route: 'mcp', caller });
    await flush();
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: 1 });
    expect(await call).toEqual({ ok: true, data: 1 });
    expect(records).toMatchObject([{ route: 'mcp', caller, clientId: 'alpha', path: '/a' }]);
  });

  it('an observer that throws is logged and the caller still gets its answer', async () => {
    const lines: string[] = [];
    const { createLogger } = await import('../src/index.js');
    const throwing = new Router({
      clock,
      logger: createLogger({ level: 'error', write: (line) => lines.push(line) }),
      onCallEnd: () => {
        throw new Error('observer broke');
      },
    });
    try {
      const { session, transport } = connectClient(throwing, 'alpha', [endpoint('/a')]);
      const call = throwing.invoke('alpha', 'GET', '/a');
      session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: 2 });
      expect(await call).toEqual({ ok: true, data: 2 });
      expect(lines.map((line) => JSON.parse(line).event)).toEqual(['call.observer_failed']);
    } finally {
      await throwing.close();
    }
  });
});

describe('sessionCounts', () => {
  it('counts open sessions by transport kind', () => {
    const a = connect(router, { kind: 'ws' });
    connect(router, { kind: 'ws' });
    connect(router, { kind: 'http-loop' });
    expect(Object.fromEntries(router.sessionCounts())).toEqual({ ws: 2, 'http-loop': 1 });
    a.session.end();
    expect(Object.fromEntries(router.sessionCounts())).toEqual({ ws: 1, 'http-loop': 1 });
  });
});
