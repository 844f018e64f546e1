import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMetaDocument } from '@mdp/protocol';
import { ClientFailure, NO_ANSWER, TestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import { read } from './hardening/clients.js';
import { clientChange, rawRequest, registeredClient, startServer } from './harness.js';
import { clientErrorAnswer } from '../src/server.js';

afterEach(stopAll);

describe('GET /mdp/meta', () => {
  it('answers the full standalone document with absolute URLs', async () => {
    const t = await startServer();
    const res = await fetch(`${t.http}/mdp/meta`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const parsed = parseMetaDocument(await res.json());
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const meta = parsed.value;
    expect(meta.protocol).toBe('mdp');
    expect(meta.protocolVersion).toBe('2.0.0');
    expect(meta.supportedProtocolRanges).toEqual(['^2.0.0']);
    expect(meta.serverId).toBe(`127.0.0.1:${t.port}`);
    expect(meta.endpoints).toEqual({
      ws: `ws://127.0.0.1:${t.port}`,
      httpLoop: `http://127.0.0.1:${t.port}/mdp/http-loop`,
      auth: `http://127.0.0.1:${t.port}/mdp/auth`,
      meta: `http://127.0.0.1:${t.port}/mdp/meta`,
      cluster: `ws://127.0.0.1:${t.port}/mdp/cluster`,
    });
    expect(meta.cluster).toMatchObject({
      role: 'leader',
      term: 0,
      membershipMode: 'dynamic',
      membershipFingerprint: 'dynamic',
      leaderId: meta.serverId,
      knownMemberCount: 1,
      reachableMemberCount: 1,
      quorumSize: 1,
      hasQuorum: true,
    });
  });

  it('reports a configured server id', async () => {
    const t = await startServer({ serverId: 'hub-a' });
    const meta = (await (await fetch(`${t.http}/mdp/meta`)).json()) as { serverId: string };
    expect(meta.serverId).toBe('hub-a');
  });
});

describe('skill routes over a websocket client', () => {
  it('reads a multi-segment skill through both routes and the explicit leaf', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c1', [skill('/docs/review/skill.md')]));
    client.handler = (call) => `# Review\nfrom ${call.path}`;
    for (const route of ['/skills/c1/docs/review', '/c1/skills/docs/review', '/skills/c1/docs/review/skill.md']) {
      const res = await fetch(`${t.http}${route}`);
      expect(res.status, route).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
      expect(await res.text()).toBe('# Review\nfrom /docs/review/skill.md');
    }
    const call = client.calls[0]!;
    expect(call).toMatchObject({
      type: 'callClient',
      clientId: 'c1',
      method: 'GET',
      path: '/docs/review/skill.md',
      kind: 'skill',
      name: '/docs/review/skill.md',
    });
    expect(call.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('resolves the .skill.md and SKILL.md forms', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c2', [skill('/review.skill.md'), skill('/guides/setup/SKILL.md')]));
    client.handler = (call) => call.path;
    expect(await (await fetch(`${t.http}/skills/c2/review`)).text()).toBe('/review.skill.md');
    expect(await (await fetch(`${t.http}/c2/skills/review.skill.md`)).text()).toBe('/review.skill.md');
    expect(await (await fetch(`${t.http}/skills/c2/guides/setup`)).text()).toBe('/guides/setup/SKILL.md');
  });

  it('binds :param segments only to values field clients accept; others are 404 and never reach the client', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('params', [skill('/docs/:topic/skill.md')]));
    client.handler = (call) => `topic=${call.params?.topic}`;
    expect(await (await fetch(`${t.http}/skills/params/docs/guide-2`)).text()).toBe('topic=guide-2');
    for (const value of ['Guide', 'v1.2', 'a~b']) {
      expect((await fetch(`${t.http}/skills/params/docs/${value}`)).status, value).toBe(404);
    }
    expect(client.calls).toHaveLength(1);
  });

  it('forwards query (last value wins), headers and transport auth', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c3', [skill('/a/skill.md')]));
    client.handler = () => 'ok';
    const res = await fetch(`${t.http}/skills/c3/a?x=1&x=2&y=hello%20world`, {
      headers: { 'x-custom': 'v1', authorization: 'Bearer tok-1', 'x-mdp-auth-tenant': 't9' },
    });
    expect(res.status).toBe(200);
    const call = client.calls[0]!;
    expect(call.query).toEqual({ x: '2', y: 'hello world' });
    expect(call.args?.query).toEqual({ x: '2', y: 'hello world' });
    expect(call.headers?.['x-custom']).toBe('v1');
    expect(call.auth).toMatchObject({
      scheme: 'Bearer',
      token: 'tok-1',
      headers: { authorization: 'Bearer tok-1', 'x-mdp-auth-tenant': 't9' },
    });
  });

  it('uses the descriptor content type and wraps non-string data as {data}', async () => {
    const t = await startServer();
    const client = await registeredClient(
      t,
      descriptor('c4', [
        skill('/plain/skill.md', { contentType: 'text/plain' }),
        skill('/json/skill.md'),
        skill('/html/skill.md', { contentType: 'text/html; charset=latin1' }),
      ]),
    );
    client.handler = (call) => (call.path === '/json/skill.md' ? { items: [1, 2] } : 'text');
    const plain = await fetch(`${t.http}/skills/c4/plain`);
    expect(plain.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const html = await fetch(`${t.http}/skills/c4/html`);
    expect(html.headers.get('content-type')).toBe('text/html; charset=latin1');
    const json = await fetch(`${t.http}/skills/c4/json`);
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await json.json()).toEqual({ data: { items: [1, 2] } });
  });

  it('answers 404 with an empty body, saying in headers whether the client or the skill is unknown (a non-skill descriptor is no skill)', async () => {
    const t = await startServer();
    await registeredClient(
      t,
      descriptor('c5', [skill('/known/skill.md'), { type: 'endpoint', method: 'GET', path: '/known/endpoint' }, { type: 'prompt', path: '/p/prompt.md' }]),
    );
    for (const [route, code, message] of [
      ['/skills/nobody/known', 'unknown_client', 'No client "nobody" is connected'],
      ['/skills/c5/unknown', 'unknown_path', 'Client "c5" has no skill "/unknown"'],
      ['/c5/skills/known/endpoint', 'unknown_path', 'Client "c5" has no skill "/known/endpoint"'],
      ['/skills/c5/p/prompt.md', 'unknown_path', 'Client "c5" has no skill "/p/prompt.md"'],
    ] as const) {
      const res = await fetch(`${t.http}${route}`);
      expect([res.status, await res.text()], route).toEqual([404, '']);
      expect(res.headers.get('mdp-error-code'), route).toBe(code);
      expect(res.headers.get('mdp-error')?.startsWith(message), `${route}: ${res.headers.get('mdp-error')}`).toBe(true);
    }
  });

  it('answers 405 with Allow for other methods and 204 for OPTIONS', async () => {
    const t = await startServer();
    await registeredClient(t, descriptor('c6', [skill('/s/skill.md')]));
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${t.http}/skills/c6/s`, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, OPTIONS');
      expect(await res.text()).toBe('');
    }
    const options = await fetch(`${t.http}/c6/skills/s`, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173' } });
    expect(options.status).toBe(204);
    expect(options.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(options.headers.get('access-control-allow-credentials')).toBe('true');
    // Another site's page: the seed's 204, without a grant.
    const foreign = await fetch(`${t.http}/c6/skills/s`, { method: 'OPTIONS', headers: { origin: 'http://example.test' } });
    expect(foreign.status).toBe(204);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers a read with CORS headers for a page that may read: echoed with credentials, `*` without Origin', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c6b', [skill('/s/skill.md')]));
    const plain = await rawRequest(t.http, '/skills/c6b/s');
    expect(plain.status).toBe(200);
    expect(plain.headers['access-control-allow-origin']).toBe('*');
    expect(plain.headers['access-control-allow-credentials']).toBeUndefined();
    for (const name of ['Origin', 'origin', 'ORIGIN']) {
      const read = await rawRequest(t.http, '/skills/c6b/s', 'GET', [name, 'http://localhost:5173']);
      expect(read.status, name).toBe(200);
      expect(read.headers['access-control-allow-origin'], name).toBe('http://localhost:5173');
      expect(read.headers['access-control-allow-credentials'], name).toBe('true');
      expect(read.headers.vary, name).toBe('Origin');
    }
    // The failure answers carry them too.
    const missing = await rawRequest(t.http, '/skills/c6b/nothing', 'GET', ['Origin', 'http://localhost:5173']);
    expect(missing.status).toBe(404);
    expect(missing.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(client.calls).toHaveLength(4);
  });

  it("refuses a page of another site (403 {error}, no CORS grant) and never calls the client; its misses stay the seed's 404", async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c6c', [skill('/s/skill.md')]));
    for (const origin of [
      ['Origin', 'http://example.test'],
      ['Origin', 'http://a.test', 'origin', 'http://b.test'],
      ['Origin', 'null'],
    ]) {
      for (const route of ['/skills/c6c/s', '/c6c/skills/s']) {
        const read = await rawRequest(t.http, route, 'GET', origin);
        expect(read.status, `${route} ${origin.join(' ')}`).toBe(403);
        expect(Object.keys(JSON.parse(read.body) as object)).toEqual(['error']);
        expect(read.headers['access-control-allow-origin']).toBeUndefined();
      }
    }
    expect(client.calls).toHaveLength(0);
    const missing = await rawRequest(t.http, '/skills/c6c/nothing', 'GET', ['Origin', 'http://example.test']);
    expect([missing.status, missing.body, missing.headers['access-control-allow-origin']]).toEqual([404, '', undefined]);
    const preflight = await rawRequest(t.http, '/skills/c6c/s', 'OPTIONS', ['Origin', 'http://example.test']);
    expect([preflight.status, preflight.headers['access-control-allow-origin']]).toEqual([204, undefined]);
  });

  it('lets a page read the skills of a client its own origin registered, and a --allow-origin page any', async () => {
    const t = await startServer({ allowedOrigins: ['https://agent.example'] });
    const page = await registeredClient(t, descriptor('page-client', [skill('/s/skill.md')]), { origin: 'https://app.example' });
    page.handler = () => 'from the page';
    const own = await rawRequest(t.http, '/skills/page-client/s', 'GET', ['Origin', 'https://app.example']);
    expect([own.status, own.body, own.headers['access-control-allow-origin']]).toEqual([200, 'from the page', 'https://app.example']);
    const configured = await rawRequest(t.http, '/skills/page-client/s', 'GET', ['Origin', 'https://agent.example']);
    expect([configured.status, configured.headers['access-control-allow-origin']]).toEqual([200, 'https://agent.example']);
    const other = await rawRequest(t.http, '/skills/page-client/s', 'GET', ['Origin', 'https://other.example']);
    expect(other.status).toBe(403);
    expect(page.calls).toHaveLength(2);
  });

  // Review finding: `null` pages were one origin, so any site's sandboxed iframe (Origin: null)
  // read, with credentials, the skills of a page opened from a file, and took over its id.
  it("treats the opaque origin (null) as no page's own: one null page neither reads nor takes another's client", async () => {
    const t = await startServer();
    const file = await registeredClient(t, descriptor('file-page', [skill('/s/skill.md')]), { origin: 'null' });
    const read = await rawRequest(t.http, '/skills/file-page/s', 'GET', ['Origin', 'null']);
    expect([read.status, read.headers['access-control-allow-origin']]).toEqual([403, undefined]);
    const sandboxed = await TestClient.connect(t.ws, { headers: { origin: 'null' } });
    sandboxed.send({ type: 'registerClient', client: descriptor('file-page', [skill('/s/skill.md')]) });
    expect(await sandboxed.closed).toEqual({ code: 4403, reason: 'Client id held by another principal' });
    expect(file.calls).toHaveLength(0);
    expect(t.server.router.getClient('file-page')?.origin).toBe('null');
  });

  // Review finding: a browser sends no Origin with the GET of a <script src> or a no-cors fetch, so
  // any site called a local client's skill and learnt from load/error whether it exists.
  it("refuses another site's page that sends no Origin, by its Fetch Metadata, and never calls the client", async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c6e', [skill('/s/skill.md')]));
    const element = ['Sec-Fetch-Site', 'cross-site', 'Sec-Fetch-Mode', 'no-cors', 'Sec-Fetch-Dest', 'script'];
    for (const route of ['/skills/c6e/s', '/c6e/skills/s']) {
      const read = await rawRequest(t.http, route, 'GET', element);
      expect([read.status, read.headers['access-control-allow-origin']], route).toEqual([403, undefined]);
      expect(Object.keys(JSON.parse(read.body) as object)).toEqual(['error']);
    }
    // A miss is still the seed's empty 404, without a grant.
    const missing = await rawRequest(t.http, '/skills/nobody/s', 'GET', element);
    expect([missing.status, missing.body, missing.headers['access-control-allow-origin']]).toEqual([404, '', undefined]);
    expect(client.calls).toHaveLength(0);
    // The user following a link to the skill, and the server's own pages, still read it.
    const followed = await rawRequest(t.http, '/skills/c6e/s', 'GET', [
      'Sec-Fetch-Site',
      'cross-site',
      'Sec-Fetch-Mode',
      'navigate',
      'Sec-Fetch-Dest',
      'document',
    ]);
    const own = await rawRequest(t.http, '/skills/c6e/s', 'GET', ['Sec-Fetch-Site', 'same-origin', 'Sec-Fetch-Mode', 'no-cors', 'Sec-Fetch-Dest', 'script']);
    expect([followed.status, own.status]).toEqual([200, 200]);
    expect(client.calls).toHaveLength(2);
  });

  it('refuses a rebound DNS name (Host) on a loopback server, even without Origin', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c6d', [skill('/s/skill.md')]));
    const rebound = await read(t.http, '/skills/c6d/s', { headers: { host: `evil.example:${t.port}` } });
    if (rebound === 'aborted') throw new Error('aborted');
    expect([rebound.status, JSON.parse(rebound.body)]).toEqual([403, { error: `Forbidden: Host "evil.example:${t.port}" is not allowed` }]);
    const local = await read(t.http, '/skills/c6d/s', { headers: { host: `localhost:${t.port}` } });
    expect(local !== 'aborted' && local.status).toBe(200);
    expect(client.calls).toHaveLength(1); // the loopback name's read only
  });

  it('answers 400 {error} for malformed encoding and bad paths, without crashing', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c7', [skill('/s/skill.md')]));
    const routes = [
      '/skills/c7/%E0%A4%A',
      '/skills/c7/a%2Fb',
      '/c7/skills/%ZZ',
      '/skills/c7/s/%2E%2E/x',
      '/skills/c7/s/../x',
      '/skills/c7/a%20b',
      '/skills/c7/a//b',
      '/skills/c7/%00',
      '/skills/c7/caf%C3%A9',
      '/skills/c7/a@b',
    ];
    for (const route of routes) {
      const res = await rawRequest(t.http, route);
      expect(res.status, route).toBe(400);
      const body = JSON.parse(res.body) as { error: unknown };
      expect(typeof body.error, route).toBe('string');
    }
    // The same checks for absolute-form targets (RFC 9112 §3.2.2), which reach the server as sent.
    for (const route of ['/skills/c7/x/../s', '/skills/c7/x/%2e%2e/s', '/c7/skills/x/../s']) {
      const res = await rawRequest(t.http, `${t.http}${route}`);
      expect(res.status, `absolute ${route}`).toBe(400);
    }
    expect(client.calls).toHaveLength(0);
    expect((await fetch(`${t.http}/skills/c7/s`)).status).toBe(200);
    expect((await rawRequest(t.http, `${t.http}/skills/c7/s`)).status).toBe(200);
  });

  it("answers requests node's parser refuses with {error}: 431 for oversized headers, 400 for garbage; the server goes on", async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c8', [skill('/s/skill.md')]));
    client.handler = () => 'still here';
    const send = (text: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(t.port, '127.0.0.1', () => socket.end(text));
        let answer = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => (answer += chunk));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
      });
    const oversized = await send(`GET /skills/c8/s HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(oversized).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(oversized).toContain('Content-Type: application/json\r\n');
    expect(JSON.parse(oversized.slice(oversized.indexOf('\r\n\r\n') + 4))).toEqual({ error: 'Request line and headers exceed the server limit' });
    const garbage = await send('NOT HTTP AT ALL\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4))).toEqual({ error: 'Malformed HTTP request' });
    expect(clientErrorAnswer('ERR_HTTP_REQUEST_TIMEOUT')).toMatch(
      /^HTTP\/1\.1 408 Request Timeout\r\n[\s\S]*\r\n\r\n\{"error":"Request not received in time"\}$/,
    );
    expect(await (await fetch(`${t.http}/skills/c8/s`)).text()).toBe('still here');
  });

  it('answers 502 {error} with the client error when the skill fails on the client', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c8', [skill('/s/skill.md')]));
    client.handler = () => new ClientFailure({ code: 'quota_exceeded', message: 'too many', details: { limit: 3 } });
    const res = await fetch(`${t.http}/skills/c8/s`);
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: { code: 'quota_exceeded', message: 'too many', details: { limit: 3 } } });
  });

  it('answers 504 when the client does not answer in time', async () => {
    const t = await startServer({ invocationTimeoutMs: 150 });
    const client = await registeredClient(t, descriptor('c9', [skill('/s/skill.md')]));
    client.handler = () => NO_ANSWER;
    const res = await fetch(`${t.http}/skills/c9/s`);
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('timeout');
    expect(t.server.router.pendingCount).toBe(0);
  });

  it('answers 502 at once when the client disconnects mid-call', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('c10', [skill('/s/skill.md')]));
    client.handler = () => {
      void client.close();
      return NO_ANSWER;
    };
    const res = await fetch(`${t.http}/skills/c10/s`);
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('transport_error');
  });
});

describe('registry over the websocket', () => {
  it('applies catalog updates and unregistration', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('u1', [skill('/old/skill.md')]));
    client.handler = (call) => call.path;
    expect((await fetch(`${t.http}/skills/u1/old`)).status).toBe(200);

    const updated = new Promise<void>((resolve) => {
      const off = t.server.router.onClientEvent((e) => e.type === 'updated' && (off(), resolve()));
    });
    client.send({ type: 'updateClientCatalog', clientId: 'u1', paths: [skill('/new/skill.md')] });
    await updated;
    expect((await fetch(`${t.http}/skills/u1/old`)).status).toBe(404);
    expect(await (await fetch(`${t.http}/skills/u1/new`)).text()).toBe('/new/skill.md');

    const gone = clientChange(t.server, 'u1', false);
    client.send({ type: 'unregisterClient', clientId: 'u1' });
    await gone;
    expect((await fetch(`${t.http}/skills/u1/new`)).status).toBe(404);
  });

  it('a second registration with the same id replaces the first, which is closed with 4000', async () => {
    const t = await startServer();
    const first = await registeredClient(t, descriptor('dup', [skill('/one/skill.md')]));
    const second = await TestClient.connect(t.ws);
    second.handler = () => 'from second';
    second.send({ type: 'registerClient', client: descriptor('dup', [skill('/one/skill.md')]) });
    expect(await first.closed).toEqual({ code: 4000, reason: 'Replaced by newer client session' });
    expect(await (await fetch(`${t.http}/skills/dup/one`)).text()).toBe('from second');
    expect(t.server.router.listClients().map((c) => c.id)).toEqual(['dup']);
  });

  it('answers ping with pong carrying the same timestamp', async () => {
    const t = await startServer();
    const client = await TestClient.connect(t.ws);
    const pong = client.next((m) => m.type === 'pong');
    client.send({ type: 'ping', timestamp: 1234567 });
    expect(await pong).toEqual({ type: 'pong', timestamp: 1234567 });
  });

  it('pings clients on the heartbeat interval and closes silent ones', async () => {
    const t = await startServer({ heartbeatIntervalMs: 40, heartbeatTimeoutMs: 120 });
    const client = await registeredClient(t, descriptor('hb', [skill('/s/skill.md')]));
    const ping = await client.next((m) => m.type === 'ping');
    expect(typeof ping.timestamp).toBe('number');
    // This client never answers pings, so it is closed once silent for the time-out.
    const closed = await client.closed;
    expect(closed.code).toBe(4001);
    expect(t.server.router.getClient('hb')).toBeUndefined();
  });
});

describe('bad frames close only the offending socket', () => {
  const cases: Array<[string, (c: TestClient) => void, number]> = [
    ['binary frame', (c) => c.sendRaw(Buffer.from('{"type":"ping"}'), true), 1003],
    ['not JSON', (c) => c.sendRaw('{nope'), 1008],
    ['JSON that is not an object', (c) => c.sendRaw('[1,2]'), 1008],
    ['unknown type', (c) => c.send({ type: 'hello' }), 1008],
    ['invalid registerClient', (c) => c.send({ type: 'registerClient', client: { id: '', name: 'x', paths: [] } }), 1008],
    [
      'server-to-client type',
      (c) => c.send({ type: 'callClient', requestId: 'r', clientId: 'x', method: 'GET', path: '/a', kind: 'tool', name: '/a', args: {} }),
      1008,
    ],
    ['catalog update for another client', (c) => c.send({ type: 'updateClientCatalog', clientId: 'someone-else', paths: [] }), 1008],
    ['frame over the size limit', (c) => c.sendRaw(JSON.stringify({ type: 'ping', pad: 'x'.repeat(4096) })), 1009],
  ];

  for (const [name, act, code] of cases) {
    it(`${name} → ${code}, other clients keep working`, async () => {
      const t = await startServer({ maxMessageBytes: 2048 });
      const good = await registeredClient(t, descriptor('good', [skill('/s/skill.md')]));
      good.handler = () => 'still here';
      const bad = await TestClient.connect(t.ws);
      act(bad);
      const closed = await bad.closed;
      expect(closed.code).toBe(code);
      if (code === 1008) expect(closed.reason.length).toBeGreaterThan(0);
      const res = await fetch(`${t.http}/skills/good/s`);
      expect(await res.text()).toBe('still here');
    });
  }

  it('names the offending field in the close reason', async () => {
    const t = await startServer();
    const bad = await TestClient.connect(t.ws);
    bad.send({ type: 'registerClient', client: { id: 'x', name: 'x', paths: [{ type: 'endpoint', path: '/a', method: 'FETCH' }] } });
    const closed = await bad.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toContain('client.paths.0.method');
  });
});

describe('graceful shutdown', () => {
  it('with no drain time: fails pending calls, closes sockets with 1001 and releases the port', async () => {
    const t = await startServer({ drainTimeoutMs: 0 });
    const client = await registeredClient(t, descriptor('sd', [skill('/s/skill.md')]));
    let called: () => void = () => {};
    const reached = new Promise<void>((resolve) => (called = resolve));
    client.handler = () => {
      called();
      return NO_ANSWER;
    };
    const read = fetch(`${t.http}/skills/sd/s`);
    await reached;
    await t.server.close();
    const res = await read;
    expect(res.status).toBe(502);
    expect((await client.closed).code).toBe(1001);
    await expect(fetch(`${t.http}/mdp/meta`)).rejects.toThrow();
  });

  it('drains: a call in flight that finishes within the drain time is answered normally', async () => {
    const t = await startServer({ drainTimeoutMs: 60_000 });
    const client = await registeredClient(t, descriptor('sd', [skill('/s/skill.md')]));
    let answer: (text: string) => void = () => {};
    client.handler = () => new Promise<string>((resolve) => (answer = resolve));
    const sent = client.next((m) => m.type === 'callClient');
    const read = fetch(`${t.http}/skills/sd/s`);
    await sent;
    const closed = t.server.close();
    // Closing waits for the call; the listener already refuses new connections.
    await expect(fetch(`${t.http}/mdp/meta`)).rejects.toThrow();
    answer('late but in time');
    const res = await read;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('late but in time');
    await closed;
    expect((await client.closed).code).toBe(1001);
  });

  it('drains up to its deadline, then ends what is left with transport_error', async () => {
    const t = await startServer({ drainTimeoutMs: 50 });
    const client = await registeredClient(t, descriptor('sd', [skill('/s/skill.md')]));
    client.handler = () => NO_ANSWER;
    const sent = client.next((m) => m.type === 'callClient');
    const read = fetch(`${t.http}/skills/sd/s`);
    await sent;
    await t.server.close();
    const res = await read;
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ error: { code: 'transport_error' } });
  });
});
