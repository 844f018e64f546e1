/**
 * The seed's Errors table, row by row, on the built `mdp-server` binary, over both transports and
 * both skill route forms. Where the seed fixes a status and a body, they hold exactly: 404 with an
 * empty body on skill routes in every not-found case (the reason only in `MDP-Error-Code` and
 * `MDP-Error`), 404 empty for polls of a missing or unknown session, 400 `{error: string}`, 405
 * empty with `Allow: GET, OPTIONS`, 502 `{error: <any>}`; OPTIONS answers 204.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientDescriptor } from '@mdp/protocol';
import { ClientFailure, LoopTestClient, NO_ANSWER, TestClient, descriptor, skill, stopAll, type CallHandler } from '@mdp/test-kit';
import { startChild, stopChildren, type ChildServer } from './hardening/child.js';

let server: ChildServer;
let joins = 0;
let leaves = 0;

beforeAll(async () => {
  server = await startChild([]);
});

afterAll(async () => {
  await stopAll();
  await stopChildren();
});

/** Both route forms of one skill read. */
const routes = (clientId: string, skillPath: string): string[] => [
  `/skills/${encodeURIComponent(clientId)}${skillPath}`,
  `/${encodeURIComponent(clientId)}/skills${skillPath}`,
];

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: Headers;
}

async function get(route: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${server.http}${route}`, init);
  return { status: res.status, body: await res.text(), headers: res.headers };
}

/** The seed's not-found answer on both route forms, with the reason in the headers. */
async function expectNotFound(clientId: string, skillPath: string, code: 'unknown_client' | 'unknown_path'): Promise<void> {
  for (const route of routes(clientId, skillPath)) {
    const answer = await get(route);
    expect([answer.status, answer.body], route).toEqual([404, '']);
    expect(answer.headers.get('content-type'), route).toBeNull();
    expect(answer.headers.get('mdp-error-code'), route).toBe(code);
    expect(answer.headers.get('mdp-error'), route).toContain(`"${clientId}"`);
  }
}

async function expectRead(clientId: string, skillPath: string): Promise<void> {
  for (const route of routes(clientId, skillPath)) expect((await get(route)).status, route).toBe(200);
}

/** A registered client over one transport, and the moves of the seed's list on it. */
interface Registered {
  set handler(handler: CallHandler);
  unregister(): Promise<void>;
  update(paths: ClientDescriptor['paths']): Promise<void>;
}

interface Transport {
  readonly name: string;
  register(desc: ClientDescriptor): Promise<Registered>;
}

const websocket: Transport = {
  name: 'websocket',
  async register(desc) {
    const client = await TestClient.register(server.ws, desc);
    await server.logged('client.join', ++joins);
    return {
      set handler(handler: CallHandler) {
        client.handler = handler;
      },
      async unregister() {
        client.send({ type: 'unregisterClient', clientId: desc.id });
        await server.logged('client.leave', ++leaves);
      },
      async update(paths) {
        client.send({ type: 'updateClientCatalog', clientId: desc.id, paths });
        await client.roundTrip();
      },
    };
  },
};

const httpLoop: Transport = {
  name: 'HTTP loop',
  async register(desc) {
    const client = await LoopTestClient.register(`${server.http}/mdp/http-loop`, desc);
    await server.logged('client.join', ++joins);
    return {
      set handler(handler: CallHandler) {
        client.handler = handler;
      },
      async unregister() {
        expect((await client.send({ type: 'unregisterClient', clientId: desc.id })).status).toBe(202);
        await server.logged('client.leave', ++leaves);
      },
      async update(paths) {
        expect((await client.send({ type: 'updateClientCatalog', clientId: desc.id, paths })).status).toBe(202);
      },
    };
  },
};

const SKILL = '/docs/review/skill.md';

describe('skill routes: 404 with an empty body in every not-found case', () => {
  it('an unknown client', async () => {
    await expectNotFound('nobody-here', '/docs/review', 'unknown_client');
  });

  describe.each([websocket, httpLoop])('over the $name', (transport) => {
    const id = (what: string): string => `${transport.name === 'websocket' ? 'ws' : 'loop'}-${what}`;

    it('an unknown skill on a known client', async () => {
      await transport.register(descriptor(id('known'), [skill(SKILL)]));
      await expectRead(id('known'), '/docs/review');
      await expectNotFound(id('known'), '/docs/other', 'unknown_path');
      await expectNotFound(id('known'), '/docs/review/more', 'unknown_path');
    });

    it('a read after unregisterClient', async () => {
      const client = await transport.register(descriptor(id('unregistered'), [skill(SKILL)]));
      await expectRead(id('unregistered'), '/docs/review');
      await client.unregister();
      await expectNotFound(id('unregistered'), '/docs/review', 'unknown_client');
    });

    it('a read after updateClientCatalog dropped the skill', async () => {
      const client = await transport.register(descriptor(id('updated'), [skill(SKILL), skill('/kept/skill.md')]));
      await expectRead(id('updated'), '/docs/review');
      await client.update([skill('/kept/skill.md')]);
      await expectNotFound(id('updated'), '/docs/review', 'unknown_path');
      await expectRead(id('updated'), '/kept');
    });
  });

  it('a read after the websocket closed with a close frame', async () => {
    const client = await TestClient.register(server.ws, descriptor('ws-closed', [skill(SKILL)]));
    await server.logged('client.join', ++joins);
    client.socket.close(1000, 'bye');
    await server.logged('client.leave', ++leaves);
    await expectNotFound('ws-closed', '/docs/review', 'unknown_client');
  });

  it('a read after the websocket closed without a close frame', async () => {
    const client = await TestClient.register(server.ws, descriptor('ws-dropped', [skill(SKILL)]));
    await server.logged('client.join', ++joins);
    client.tcp.destroy();
    await server.logged('client.leave', ++leaves);
    await expectNotFound('ws-dropped', '/docs/review', 'unknown_client');
  });

  it('a read after an HTTP-loop disconnect', async () => {
    const client = await LoopTestClient.register(`${server.http}/mdp/http-loop`, descriptor('loop-disconnected', [skill(SKILL)]));
    await server.logged('client.join', ++joins);
    await client.close();
    await server.logged('client.leave', ++leaves);
    await expectNotFound('loop-disconnected', '/docs/review', 'unknown_client');
  });
});

describe('the other rows of the Errors table', () => {
  it('skill routes: 400 {error: string} for an invalid skill request', async () => {
    for (const skillPath of ['/bad%E0%A4%A', '/a%2Fb', '/a//b']) {
      for (const route of routes('ws-known', skillPath)) {
        const answer = await get(route);
        expect(answer.status, route).toBe(400);
        const body = JSON.parse(answer.body) as Record<string, unknown>;
        expect(Object.keys(body), route).toEqual(['error']);
        expect(typeof body.error, route).toBe('string');
      }
    }
  });

  it('skill routes: 405 with an empty body and Allow: GET, OPTIONS for every other method; OPTIONS 204', async () => {
    for (const route of [...routes('ws-known', '/docs/review'), ...routes('nobody-here', '/docs/review')]) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']) {
        const answer = await get(route, { method });
        expect([answer.status, answer.body, answer.headers.get('allow')], `${method} ${route}`).toEqual([405, '', 'GET, OPTIONS']);
      }
      const options = await get(route, { method: 'OPTIONS' });
      expect([options.status, options.body], route).toEqual([204, '']);
    }
  });

  describe.each([websocket, httpLoop])('skill routes over the $name: 502 {error: <any>}', (transport) => {
    it('when the skill fails on the client, its error passed on as it came', async () => {
      const id = `failing-${transport.name === 'websocket' ? 'ws' : 'loop'}`;
      const client = await transport.register(descriptor(id, [skill(SKILL)]));
      const error = { code: 'quota_exceeded', message: 'too many reads', details: { limit: 3 } };
      client.handler = () => new ClientFailure(error);
      for (const route of routes(id, '/docs/review')) {
        const answer = await get(route);
        expect(answer.status, route).toBe(502);
        expect(JSON.parse(answer.body), route).toEqual({ error });
      }
      await client.unregister();
    });
  });

  it('skill routes: 502 {error} when the client goes away mid-call', async () => {
    const client = await TestClient.register(server.ws, descriptor('vanishing-ws', [skill(SKILL)]));
    await server.logged('client.join', ++joins);
    client.handler = () => {
      client.tcp.destroy();
      return NO_ANSWER;
    };
    const answer = await get('/skills/vanishing-ws/docs/review');
    expect(answer.status).toBe(502);
    expect(Object.keys(JSON.parse(answer.body) as object)).toEqual(['error']);
    await server.logged('client.leave', ++leaves);
  });

  it('poll: 404 with an empty body for a missing or unknown session id', async () => {
    for (const route of ['/mdp/http-loop/poll?waitMs=0', '/mdp/http-loop/poll?waitMs=0&sessionId=00000000-0000-4000-8000-000000000000']) {
      const answer = await get(route);
      expect([answer.status, answer.body], route).toEqual([404, '']);
    }
    const byHeader = await get('/mdp/http-loop/poll?waitMs=0', { headers: { 'x-mdp-session-id': 'no-such-session' } });
    expect([byHeader.status, byHeader.body]).toEqual([404, '']);
  });

  it('poll: 400 {error: string} for a malformed request', async () => {
    const answer = await get('/mdp/http-loop/poll?waitMs=0&sessionId=a&sessionId=b');
    expect(answer.status).toBe(400);
    const body = JSON.parse(answer.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['error']);
    expect(typeof body.error).toBe('string');
  });
});
