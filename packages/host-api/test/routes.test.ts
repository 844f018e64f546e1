/**
 * The host API routes, one suite run against both adapters: the Hono routes in process
 * (`app.request`) and the node handler on a real node server. The host contract is a recording fake.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { MdpError, Router, createLocalHost, createTenancy, originPolicyFor, type CallOptions, type HostApi } from '@mdp/core';
import type { CallPathRequest, CallPathsRequest, CallResult, ListPathsRequest, PathDescriptor } from '@mdp/protocol';
import { createNodeHostHandler, type HostApiOptions } from '../src/index.js';
import { createHostRoutes } from '../src/hono.js';

interface Recorded {
  readonly calls: Array<{ request: CallPathRequest | CallPathsRequest; options: CallOptions | undefined }>;
}

function fakeHost(answer: (request: CallPathRequest) => CallResult | Promise<CallResult> = () => ({ ok: true, data: 'fine' })): HostApi & Recorded {
  const calls: Recorded['calls'] = [];
  return {
    calls,
    listClients: async (request) => ({
      clients:
        request?.search === 'none'
          ? []
          : [
              {
                id: 'c',
                name: 'C',
                paths: [],
                status: 'online',
                connectedAt: 'x',
                lastSeenAt: 'y',
                connection: { mode: 'ws', secure: false, authSource: 'none' },
                aliases: [],
              },
            ],
    }),
    listPaths: async (request) => {
      if (request?.clientId === 'ghost') throw new MdpError('not_found', 'No client "ghost" is connected');
      if (request?.clientId === 'boom') throw new Error('secret internals');
      return { paths: [{ type: 'skill', path: '/s/skill.md', clientId: 'c', clientName: 'C', depth: request?.depth ?? null } as never] };
    },
    callPath: async (request, options) => {
      calls.push({ request, options });
      return answer(request);
    },
    callPaths: async (request, options) => {
      calls.push({ request, options });
      if (request.path === '/none') throw new MdpError('not_found', 'No connected client has GET /none');
      return { results: [{ clientId: 'c', ok: true, data: 1 }] };
    },
    onChange: () => () => undefined,
  };
}

interface Requester {
  request(path: string, init?: RequestInit): Promise<Response>;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

const ADAPTERS: ReadonlyArray<readonly [string, (host: HostApi, options?: HostApiOptions) => Requester]> = [
  [
    'hono',
    (host, options) => {
      const root = new Hono();
      root.route('/', createHostRoutes(host, options));
      return { request: async (path, init) => root.request(path, init) };
    },
  ],
  [
    'node',
    (host, options) => {
      const handle = createNodeHostHandler(host, options);
      const server = createServer((req, res) => {
        if (!handle(req, res, req.url ?? '/')) res.writeHead(404).end();
      });
      servers.push(server);
      const listening = new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
      return { request: async (path, init) => fetch(`http://127.0.0.1:${await listening}${path}`, init) };
    },
  ],
];

const post = (_path: string, body: unknown, headers: Record<string, string> = {}): RequestInit & { method: string } => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

describe('node adapter', () => {
  it('tells every call of a call-many that the caller went away, through one listener on the response', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    let heard = 0;
    let started!: () => void;
    const calling = new Promise<void>((resolve) => (started = resolve));
    let allHeard!: () => void;
    const done = new Promise<void>((resolve) => (allHeard = resolve));
    const host: HostApi = {
      ...fakeHost(),
      // As the router does for each client of a call-many: one abort listener per call.
      callPaths: (_request, options) =>
        new Promise(() => {
          for (let i = 0; i < 50; i++) {
            options?.signal?.addEventListener('abort', () => {
              if (++heard === 50) allHeard();
            });
          }
          started();
        }),
    };
    const requester = ADAPTERS[1]![1](host);
    const controller = new AbortController();
    const pending = requester
      .request('/mdp/call-many', { ...post('/mdp/call-many', { method: 'GET', path: '/s' }), signal: controller.signal })
      .catch(() => 'aborted');
    await calling;
    controller.abort();
    expect(await pending).toBe('aborted');
    await done;
    process.off('warning', onWarning);
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });
  it('tells a call that its caller went away, and not a listener that was removed first', async () => {
    let started!: () => void;
    const calling = new Promise<void>((resolve) => (started = resolve));
    let heard!: (which: string) => void;
    const abort = new Promise<string>((resolve) => (heard = resolve));
    const host: HostApi = {
      ...fakeHost(),
      callPath: (_request, options) =>
        new Promise(() => {
          const removed = (): void => heard('removed');
          options?.signal?.addEventListener('abort', removed);
          options?.signal?.removeEventListener('abort', removed);
          options?.signal?.addEventListener('abort', () => heard('kept'));
          expect(options?.signal?.aborted).toBe(false);
          started();
        }),
    };
    const requester = ADAPTERS[1]![1](host);
    const controller = new AbortController();
    const pending = requester
      .request('/mdp/call', { ...post('/mdp/call', { clientId: 'c', method: 'GET', path: '/s' }), signal: controller.signal })
      .catch(() => 'aborted');
    await calling;
    controller.abort();
    expect(await pending).toBe('aborted');
    expect(await abort).toBe('kept');
  });
});

describe.each(ADAPTERS)('%s adapter', (_name, app) => {
  describe('tenancy by principal', () => {
    it("lists and calls only the caller's clients; another principal's is an unknown client (404)", async () => {
      const router = new Router({ invocationTimeoutMs: 1000 });
      try {
        const open = (id: string, principal: string) => {
          const session = router.openSession({ kind: 'fake', send: () => undefined, close: () => undefined }, undefined, principal);
          session.handle({ type: 'registerClient', client: { id, name: id, paths: [{ type: 'endpoint', method: 'GET', path: '/p' }] } });
        };
        open('mine', 'token:a');
        open('theirs', 'token:b');
        const tenant = createLocalHost(router, { tenancy: createTenancy({ mode: 'principal' }) });
        const a = app(tenant, { viewerOf: (auth) => ({ principal: auth?.token === 'A' ? 'token:a' : 'token:b' }) });
        const as = { headers: { authorization: 'Bearer A' } };
        const clients = (await (await a.request('/mdp/clients', as)).json()) as { clients: { id: string }[] };
        expect(clients.clients.map((c) => c.id)).toEqual(['mine']);
        const hidden = await a.request('/mdp/paths?clientId=theirs', as);
        const unknown = await a.request('/mdp/paths?clientId=nobody', as);
        expect(hidden.status).toBe(404);
        expect(((await hidden.text()) as string).replace('theirs', 'X')).toBe((await unknown.text()).replace('nobody', 'X'));
        const call = await a.request('/mdp/call', post('/mdp/call', { clientId: 'theirs', method: 'GET', path: '/p' }, as.headers));
        expect(call.status).toBe(404);
        expect(await call.json()).toEqual({ ok: false, source: 'server', error: { code: 'not_found', message: 'No client "theirs" is connected' } });
        const many = await a.request('/mdp/call-many', post('/mdp/call-many', { method: 'GET', path: '/nothing-here' }, as.headers));
        expect(many.status).toBe(404);
      } finally {
        await router.close();
      }
    });
  });

  describe('listing', () => {
    it('answers GET /mdp/clients and /mdp/paths with the host contract results', async () => {
      const a = app(fakeHost());
      const clients = await a.request('/mdp/clients?search=any');
      expect(clients.status).toBe(200);
      expect(((await clients.json()) as { clients: unknown[] }).clients).toHaveLength(1);
      const paths = await a.request('/mdp/paths?clientId=c&depth=2');
      expect(await paths.json()).toEqual({ paths: [{ type: 'skill', path: '/s/skill.md', clientId: 'c', clientName: 'C', depth: 2 }] });
    });

    it.each([
      ['depth=0', '/mdp/paths?depth=0', 'depth: must be a whole number of at least 1, got "0"'],
      ['depth=two', '/mdp/paths?depth=two', 'depth: must be a whole number of at least 1, got "two"'],
      ['depth=-1', '/mdp/paths?depth=-1', 'depth: must be a whole number of at least 1, got "-1"'],
      ['a 1001-character search', `/mdp/clients?search=${'x'.repeat(1001)}`, 'search: must be at most 1000 characters'],
      ['limit=0', '/mdp/clients?limit=0', 'limit: must be at least 1'],
      ['limit=1001', '/mdp/paths?limit=1001', 'limit: must be at most 1000'],
      ['limit=ten', '/mdp/clients?limit=ten', 'limit: must be a whole number from 1 to 1000, got "ten"'],
      ['limit=2.5', '/mdp/paths?limit=2.5', 'limit: must be a whole number from 1 to 1000, got "2.5"'],
      ['limit=-1', '/mdp/paths?limit=-1', 'limit: must be a whole number from 1 to 1000, got "-1"'],
      ['limit=99999999999', '/mdp/clients?limit=99999999999', 'limit: must be a whole number from 1 to 1000, got "99999999999"'],
      ['a 4097-character cursor', `/mdp/clients?cursor=${'x'.repeat(4097)}`, 'cursor: must be at most 4096 characters'],
    ])('refuses %s with 400 naming the field', async (_what, url, message) => {
      const res = await app(fakeHost()).request(url);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: { code: 'bad_request', message } });
    });

    it('passes limit and cursor on, and an empty one as none', async () => {
      const asked: ListPathsRequest[] = [];
      const host = { ...fakeHost(), listPaths: async (request: ListPathsRequest = {}) => (asked.push(request), { paths: [], nextCursor: 'next' }) };
      const a = app(host);
      const res = await a.request('/mdp/paths?limit=5&cursor=abc');
      expect(await res.json()).toEqual({ paths: [], nextCursor: 'next' });
      await a.request('/mdp/paths?limit=&cursor=');
      expect(asked).toEqual([{ limit: 5, cursor: 'abc' }, {}]);
    });

    it('walks a real registry page by page: every path once, each answer within the byte bound', async () => {
      const router = new Router();
      try {
        for (let c = 0; c < 20; c++) {
          const paths: PathDescriptor[] = Array.from({ length: 250 }, (_, p) => ({
            type: 'endpoint',
            method: 'GET',
            path: `/p${p}`,
            description: 'd'.repeat(p),
          }));
          router
            .openSession({ kind: 'fake', send: () => undefined, close: () => undefined })
            .handle({ type: 'registerClient', client: { id: `c${c}`, name: `C${c}`, paths } });
        }
        const maxPageBytes = 32 * 1024;
        const a = app(createLocalHost(router, { listing: { maxPageBytes } }));
        const seen = new Set<string>();
        let cursor: string | undefined;
        let pages = 0;
        do {
          const res = await a.request(`/mdp/paths?limit=1000${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
          expect(res.status).toBe(200);
          const text = await res.text();
          expect(Buffer.byteLength(text)).toBeLessThanOrEqual(maxPageBytes);
          const page = JSON.parse(text) as { paths: Array<{ clientId: string; path: string }>; nextCursor?: string };
          for (const path of page.paths) {
            const key = `${path.clientId} ${path.path}`;
            expect(seen.has(key)).toBe(false);
            seen.add(key);
          }
          cursor = page.nextCursor;
          pages++;
        } while (cursor !== undefined);
        expect(seen.size).toBe(5000);
        expect(pages).toBeGreaterThan(5);
      } finally {
        await router.close();
      }
    });

    it('writes a large page whole, its Content-Length in bytes', async () => {
      const big = {
        id: 'é'.repeat(100_000),
        name: 'n',
        paths: [],
        status: 'online',
        connectedAt: 'x',
        lastSeenAt: 'y',
        connection: { mode: 'ws', secure: false, authSource: 'none' },
        aliases: [],
      };
      const host = { ...fakeHost(), listClients: async () => ({ clients: [big as never], nextCursor: 'n' }) };
      const res = await app(host).request('/mdp/clients');
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(Number(res.headers.get('content-length') ?? bytes.length)).toBe(bytes.length);
      expect(JSON.parse(bytes.toString('utf8'))).toEqual({ clients: [big], nextCursor: 'n' });
    });

    it('answers a cursor it did not make with 400 naming the cursor', async () => {
      const router = new Router();
      const a = app(createLocalHost(router));
      for (const url of [
        '/mdp/clients?cursor=garbage',
        '/mdp/paths?cursor=%E2%9C%93',
        `/mdp/paths?cursor=${Buffer.from('[1,"c","a"]').toString('base64url')}`,
      ]) {
        const res = await a.request(url);
        expect(res.status).toBe(400);
        expect(await res.json()).toEqual({ error: { code: 'bad_request', message: expect.stringMatching(/^cursor: /) } });
      }
      await router.close();
    });

    it('maps a host not_found to 404 and hides unknown errors behind a plain 500', async () => {
      const a = app(fakeHost());
      const ghost = await a.request('/mdp/paths?clientId=ghost');
      expect(ghost.status).toBe(404);
      expect(await ghost.json()).toEqual({ error: { code: 'not_found', message: 'No client "ghost" is connected' } });
      const boom = await a.request('/mdp/paths?clientId=boom');
      expect(boom.status).toBe(500);
      expect(await boom.text()).not.toContain('secret');
    });
  });

  describe('calls', () => {
    it("forwards the validated request with the caller's transport auth and its abort signal", async () => {
      const host = fakeHost();
      const res = await app(host).request(
        '/mdp/call',
        post('/mdp/call', { clientId: 'c', method: 'POST', path: '/a', body: { x: 1 }, ignored: true }, { authorization: 'Bearer t1' }),
      );
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, data: 'fine' });
      const [call] = host.calls;
      expect(call?.request).toEqual({
        clientId: 'c',
        method: 'POST',
        path: '/a',
        body: { x: 1 },
        auth: { scheme: 'Bearer', token: 't1', headers: { authorization: 'Bearer t1' } },
      });
      expect(call?.options?.signal).toMatchObject({ aborted: false, addEventListener: expect.any(Function), removeEventListener: expect.any(Function) });
    });

    it('under an auth policy (authorize) forwards nothing of the credential the caller showed', async () => {
      const host = fakeHost();
      const guarded = app(host, { authorize: (auth: { token?: string } | undefined) => auth?.token === 't1' });
      const headers = { authorization: 'Bearer t1', cookie: 'theme=dark; mdp_auth=sealed', 'x-mdp-auth-tenant': 'acme' };
      expect((await guarded.request('/mdp/call', post('/mdp/call', { clientId: 'c', method: 'GET', path: '/a' }, headers))).status).toBe(200);
      expect(host.calls[0]?.request.auth).toEqual({ headers: { cookie: 'theme=dark', 'x-mdp-auth-tenant': 'acme' } });
      expect((await guarded.request('/mdp/call-many', post('/mdp/call-many', { method: 'GET', path: '/a' }, { authorization: 'Bearer t1' }))).status).toBe(200);
      expect(host.calls[1]?.request).not.toHaveProperty('auth');
      // Who asked is still known, for the audit log.
      expect(host.calls[1]?.options?.caller).toMatchObject({ token: 't1' });
      // An auth the caller puts in the body is for the client: passed as given.
      await guarded.request('/mdp/call', post('/mdp/call', { clientId: 'c', method: 'GET', path: '/a', auth: { token: 'for-the-client' } }, headers));
      expect(host.calls[2]?.request.auth).toEqual({ token: 'for-the-client' });
    });

    it('keeps an auth given in the body', async () => {
      const host = fakeHost();
      await app(host).request(
        '/mdp/call',
        post('/mdp/call', { clientId: 'c', method: 'GET', path: '/a', auth: { token: 'own' } }, { authorization: 'Bearer t1' }),
      );
      expect(host.calls[0]?.request.auth).toEqual({ token: 'own' });
    });

    it.each([
      [{ ok: false, source: 'client', error: { code: 'not_found', message: 'client says so' } }, 502],
      [{ ok: false, source: 'server', error: { code: 'not_found', message: 'no such path' } }, 404],
      [{ ok: false, source: 'server', error: { code: 'timeout', message: 'late' } }, 504],
      [{ ok: false, source: 'server', error: { code: 'transport_error', message: 'gone' } }, 502],
      [{ ok: false, error: { code: 'custom_code', message: 'from a peer' } }, 502],
    ] as const)('answers a failed call %j with %i and {ok: false, error}', async (result, status) => {
      const res = await app(fakeHost(() => result)).request('/mdp/call', post('/mdp/call', { clientId: 'c', method: 'GET', path: '/a' }));
      expect(res.status).toBe(status);
      expect(res.headers.get('retry-after')).toBeNull();
      expect(await res.json()).toEqual(result);
    });

    it.each([
      [{ retryAfterMs: 2500 }, '3'],
      [undefined, '1'],
    ])('answers a call refused before sending (too many waiting, details %j) with 503 and Retry-After %s', async (details, seconds) => {
      const result = {
        ok: false,
        source: 'server',
        error: { code: 'not_ready', message: 'Client has too many calls waiting', ...(details ? { details } : {}) },
      } as const;
      const res = await app(fakeHost(() => result)).request('/mdp/call', post('/mdp/call', { clientId: 'c', method: 'GET', path: '/a' }));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe(seconds);
      expect(await res.json()).toEqual(result);
    });

    it.each([
      ['not JSON', '{', 'Invalid JSON: '],
      ['empty', '', 'Invalid JSON: body is empty'],
      ['an array', [], 'Body must be a JSON object'],
      ['without clientId', { method: 'GET', path: '/a' }, 'clientId'],
      ['with a bad method', { clientId: 'c', method: 'FETCH', path: '/a' }, 'method: method must be one of GET, POST, PUT, PATCH, DELETE'],
      ['with a relative path', { clientId: 'c', method: 'GET', path: 'a' }, 'path: path must start with "/"'],
      ['with a non-string query value', { clientId: 'c', method: 'GET', path: '/a', query: { n: 1 } }, 'query.n'],
      ['with a non-object auth', { clientId: 'c', method: 'GET', path: '/a', auth: 'token' }, 'auth'],
    ])('refuses a call body %s with 400 naming what is wrong', async (_what, body, message) => {
      const host = fakeHost();
      const res = await app(host).request('/mdp/call', post('/mdp/call', body));
      expect(res.status).toBe(400);
      const json = (await res.json()) as { error: { code: string; message: string } };
      expect(json.error.code).toBe('bad_request');
      expect(json.error.message).toContain(message);
      expect(host.calls).toHaveLength(0);
    });

    it('refuses a body over the limit with 413 before calling anything', async () => {
      const host = fakeHost();
      const res = await app(host, { maxBodyBytes: 64 }).request(
        '/mdp/call',
        post('/mdp/call', { clientId: 'c', method: 'POST', path: '/a', body: 'x'.repeat(100) }),
      );
      expect(res.status).toBe(413);
      expect(host.calls).toHaveLength(0);
    });

    it('bounds what a call-many may copy: its payload times the clients called stays within 4 × the body limit', async () => {
      const host = fakeHost();
      const a = app(host, { maxBodyBytes: 10_000 });
      await a.request('/mdp/call-many', post('/mdp/call-many', { method: 'POST', path: '/s', body: 'x'.repeat(998) }));
      // One copy is the JSON of [query, body, headers, auth]: 1009 bytes here, 39 of them within 40,000.
      expect(host.calls[0]?.options?.maxTargets).toBe(39);
      const repeated = await a.request('/mdp/call-many', post('/mdp/call-many', { clientIds: ['c', 'c'], method: 'GET', path: '/s' }));
      expect(repeated.status).toBe(400);
      expect(((await repeated.json()) as { error: { message: string } }).error.message).toBe('clientIds: must not name a client twice');
      expect(host.calls).toHaveLength(1);
    });

    it('answers call-many with the results, 404 when no client has the path, 400 for an empty id list', async () => {
      const a = app(fakeHost());
      const ok = await a.request('/mdp/call-many', post('/mdp/call-many', { method: 'GET', path: '/s' }));
      expect(await ok.json()).toEqual({ results: [{ clientId: 'c', ok: true, data: 1 }] });
      expect((await a.request('/mdp/call-many', post('/mdp/call-many', { method: 'GET', path: '/none' }))).status).toBe(404);
      expect((await a.request('/mdp/call-many', post('/mdp/call-many', { clientIds: [], method: 'GET', path: '/s' }))).status).toBe(400);
    });
  });

  describe('methods and auth', () => {
    it.each([
      ['POST', '/mdp/clients', 'GET, OPTIONS'],
      ['DELETE', '/mdp/paths', 'GET, OPTIONS'],
      ['GET', '/mdp/call', 'POST, OPTIONS'],
      ['PUT', '/mdp/call-many', 'POST, OPTIONS'],
    ])('answers %s %s with 405 and Allow', async (method, path, allow) => {
      const res = await app(fakeHost()).request(path, { method });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe(allow);
    });

    it('refuses callers the policy does not accept with 401, before reading anything', async () => {
      const host = fakeHost();
      const a = app(host, { authorize: (auth: { token?: string } | undefined) => auth?.token === 'good' });
      for (const [path, init] of [
        ['/mdp/clients', undefined],
        ['/mdp/paths', undefined],
        ['/mdp/call', post('/mdp/call', { clientId: 'c', method: 'GET', path: '/a' }, { authorization: 'Bearer bad' })],
        ['/mdp/call-many', post('/mdp/call-many', '{not json')],
      ] as const) {
        const res = await a.request(path, init);
        expect(res.status).toBe(401);
        expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: 'Unauthorized' } });
      }
      expect(host.calls).toHaveLength(0);
      expect((await a.request('/mdp/clients', { headers: { authorization: 'Bearer good' } })).status).toBe(200);
    });

    it('refuses pages the origin policy does not allow with 403, before anything else', async () => {
      const host = fakeHost();
      const a = app(host, { originPolicy: originPolicyFor('127.0.0.1', { allowedOrigins: ['https://agent.example'] }), authorize: () => false });
      for (const [path, init] of [
        ['/mdp/clients', { headers: { origin: 'https://evil.example' } }],
        ['/mdp/call', post('/mdp/call', { clientId: 'c', method: 'GET', path: '/a' }, { origin: 'https://evil.example' })],
        ['/mdp/call-many', { method: 'PUT', headers: { origin: 'null' } }],
      ] as const) {
        const res = await a.request(path, init);
        expect(res.status).toBe(403);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('forbidden');
      }
      expect(host.calls).toHaveLength(0);
      // An allowed origin goes on to the auth policy (which refuses everyone here).
      expect((await a.request('/mdp/clients', { headers: { origin: 'https://agent.example' } })).status).toBe(401);
    });

    it('refuses a POST body that is not declared JSON with 415, before reading it', async () => {
      const host = fakeHost();
      const a = app(host);
      for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
        const res = await a.request('/mdp/call', {
          method: 'POST',
          headers: { 'content-type': type },
          body: JSON.stringify({ clientId: 'c', method: 'GET', path: '/a' }),
        });
        expect(res.status).toBe(415);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('bad_request');
      }
      expect(host.calls).toHaveLength(0);
    });
  });
});
