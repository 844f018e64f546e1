/**
 * The behaviour both transports owe the router, as one suite: each transport package runs it with
 * its own way of connecting a client, so "the websocket and the HTTP loop behave the same" is
 * checked in one place. What differs by nature (close codes, HTTP statuses, framing) stays in each
 * package's own tests.
 *
 * A subpath of its own (`@mdp/test-kit/transport-suite`): it imports vitest, the rest of the kit
 * does not.
 */
import { describe, expect, it } from 'vitest';
import type { Router } from '@mdp/core';
import type { CallClientMessage, ClientDescriptor } from '@mdp/protocol';
import { ClientFailure, NO_ANSWER, type CallHandler } from './answers.js';
import { descriptor, endpoint, skill } from './descriptors.js';
import { until } from './waiters.js';

/** A registered MDP client of the transport under test. */
export interface SuiteClient {
  /** Answers each `callClient` (the kit's contract: data, a {@link ClientFailure} or {@link NO_ANSWER}). */
  handler: CallHandler | undefined;
  /** Every `callClient` received, in order. */
  readonly calls: readonly CallClientMessage[];
  /** Send one protocol message; resolves once the server applied it. */
  send(message: unknown): Promise<void>;
  /** The client goes away (a dropped socket, a loop `disconnect`); resolves once it is gone. */
  close(): Promise<void>;
}

/** A server of the transport under test, on a real socket. */
export interface TransportUnderTest {
  readonly router: Router;
  /** Connect a new client and register `client`; resolves once the router has it. */
  register(client: ClientDescriptor): Promise<SuiteClient>;
  /** Stop the transport, the router and the socket server. */
  stop(): Promise<void>;
}

export interface TransportSuiteOptions {
  /** Bring up a fresh server for one case. */
  readonly start: () => Promise<TransportUnderTest>;
}

const CATALOG = [endpoint('/hello'), endpoint('/items/:id', 'POST'), skill('/docs/skill.md')];

/** Make `client` keep its next call unanswered; resolves once that call reached it. */
function holdNextCall(client: SuiteClient): Promise<void> {
  return new Promise((resolve) => {
    client.handler = () => {
      resolve();
      return NO_ANSWER;
    };
  });
}

/** Register the shared cases in the calling `describe`. */
export function runTransportSuite(name: string, options: TransportSuiteOptions): void {
  describe(`${name}: the transport contract`, () => {
    const withServer = (test: (t: TransportUnderTest) => Promise<void>) => async () => {
      const t = await options.start();
      try {
        await test(t);
      } finally {
        await t.stop();
      }
    };

    it(
      'registers a client the router lists with its catalog',
      withServer(async (t) => {
        await t.register(descriptor('app', CATALOG, { name: 'App' }));
        const info = t.router.getClient('app');
        expect(info?.descriptor).toMatchObject({ id: 'app', name: 'App' });
        expect(info?.descriptor.paths.map((p) => p.path)).toEqual(['/hello', '/items/:id', '/docs/skill.md']);
      }),
    );

    it(
      'routes a call with its parameters, query and body, and returns the client’s data',
      withServer(async (t) => {
        const client = await t.register(descriptor('app', CATALOG));
        client.handler = (call) => ({ got: call.path, params: call.params, query: call.query, body: call.body });
        const outcome = await t.router.invoke('app', 'POST', '/items/42', { query: { q: 'x' }, body: { n: 1 } });
        expect(outcome).toEqual({ ok: true, data: { got: '/items/42', params: { id: '42' }, query: { q: 'x' }, body: { n: 1 } } });
        expect(client.calls).toHaveLength(1);
        expect(client.calls[0]).toMatchObject({ type: 'callClient', clientId: 'app', method: 'POST', path: '/items/42' });
      }),
    );

    it(
      'passes a client’s failure through as the client’s error',
      withServer(async (t) => {
        const client = await t.register(descriptor('app', CATALOG));
        client.handler = () => new ClientFailure({ code: 'busy', message: 'try later' });
        expect(await t.router.invoke('app', 'GET', '/hello')).toEqual({ ok: false, source: 'client', error: { code: 'busy', message: 'try later' } });
      }),
    );

    it(
      'refuses a path the client did not publish without reaching it',
      withServer(async (t) => {
        const client = await t.register(descriptor('app', CATALOG));
        expect(await t.router.invoke('app', 'GET', '/nope')).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });
        expect(client.calls).toHaveLength(0);
      }),
    );

    it(
      'applies updateClientCatalog: the new paths route, the dropped ones no longer do',
      withServer(async (t) => {
        const client = await t.register(descriptor('app', CATALOG));
        await client.send({ type: 'updateClientCatalog', clientId: 'app', paths: [endpoint('/fresh')] });
        expect(t.router.getClient('app')?.descriptor.paths.map((p) => p.path)).toEqual(['/fresh']);
        expect(await t.router.invoke('app', 'GET', '/fresh')).toEqual({ ok: true, data: 'ok' });
        expect(await t.router.invoke('app', 'GET', '/hello')).toMatchObject({ ok: false, error: { code: 'not_found' } });
      }),
    );

    it(
      'forgets a client on unregisterClient',
      withServer(async (t) => {
        const client = await t.register(descriptor('app', CATALOG));
        await client.send({ type: 'unregisterClient', clientId: 'app' });
        expect(t.router.getClient('app')).toBeUndefined();
        expect(await t.router.invoke('app', 'GET', '/hello')).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });
        expect(client.calls).toHaveLength(0);
      }),
    );

    it(
      'fails a pending call with transport_error when its client goes away, and forgets the client',
      withServer(async (t) => {
        const client = await t.register(descriptor('app', CATALOG));
        const reached = holdNextCall(client);
        const outcome = t.router.invoke('app', 'GET', '/hello');
        await reached;
        await client.close();
        expect(await outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
        await until(
          (onChange) => t.router.onClientEvent(onChange),
          () => t.router.getClient('app') === undefined,
        );
      }),
    );

    it(
      'gives an id to its newest registration: calls go to the newer client',
      withServer(async (t) => {
        const older = await t.register(descriptor('app', CATALOG));
        const newer = await t.register(descriptor('app', CATALOG));
        newer.handler = () => 'newer';
        expect(await t.router.invoke('app', 'GET', '/hello')).toEqual({ ok: true, data: 'newer' });
        expect(older.calls).toHaveLength(0);
        expect(t.router.listClients().filter((c) => c.descriptor.id === 'app')).toHaveLength(1);
      }),
    );

    it(
      'keeps two clients apart: each gets only its own calls',
      withServer(async (t) => {
        const a = await t.register(descriptor('a', CATALOG));
        const b = await t.register(descriptor('b', CATALOG));
        a.handler = () => 'from a';
        b.handler = () => 'from b';
        const [fromA, fromB] = await Promise.all([t.router.invoke('a', 'GET', '/hello'), t.router.invoke('b', 'GET', '/hello')]);
        expect([fromA, fromB]).toEqual([
          { ok: true, data: 'from a' },
          { ok: true, data: 'from b' },
        ]);
        expect([a.calls.length, b.calls.length]).toEqual([1, 1]);
      }),
    );

    it(
      'ends its clients’ sessions and fails their pending calls when the router closes',
      withServer(async (t) => {
        const client = await t.register(descriptor('app', CATALOG));
        const reached = holdNextCall(client);
        const outcome = t.router.invoke('app', 'GET', '/hello');
        await reached;
        await t.router.close();
        expect(await outcome).toMatchObject({ ok: false, source: 'server' });
        expect(t.router.getClient('app')).toBeUndefined();
      }),
    );
  });
}
