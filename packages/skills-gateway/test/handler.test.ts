/** handleSkillRead against a real Router: resolution, the callClient it sends, status mapping (SPEC §8). */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Router } from '@mdp/core';
import { skill } from '@mdp/test-kit';
import { DEFAULT_SKILL_CONTENT_TYPE, SKILL_TEXT_HEADERS, handleSkillRead, skillContentType, type SkillReadResponse } from '../src/index.js';
import { connectClient, readRequest } from './helpers.js';

const JSON_TYPE = 'application/json; charset=utf-8';

let router: Router;

beforeEach(() => {
  router = new Router({ invocationTimeoutMs: 60_000 });
});

afterEach(async () => {
  await router.close();
  vi.useRealTimers();
});

const read = (pathname: string, init?: Parameters<typeof readRequest>[1]): Promise<SkillReadResponse> => handleSkillRead(router, readRequest(pathname, init));

const bodyOf = (response: SkillReadResponse): unknown => JSON.parse(response.body ?? 'null');

describe('skillContentType', () => {
  it.each([
    [undefined, 'text/markdown; charset=utf-8'],
    ['', 'text/markdown; charset=utf-8'],
    ['text/plain', 'text/plain; charset=utf-8'],
    ['TEXT/HTML', 'TEXT/HTML; charset=utf-8'],
    ['text/html; charset=latin1', 'text/html; charset=latin1'],
    ['text/plain;charset=utf-16', 'text/plain;charset=utf-16'],
    ['application/json', 'application/json'],
    ['application/yaml', 'application/yaml'],
  ])('%s → %s', (declared, expected) => {
    expect(skillContentType(declared)).toBe(expected);
  });

  it('defaults to Markdown in UTF-8', () => {
    expect(DEFAULT_SKILL_CONTENT_TYPE).toBe('text/markdown; charset=utf-8');
  });
});

describe('200', () => {
  it('tolerates one trailing slash, as the reference server does: /skills/c1/docs/ reads /docs/skill.md', async () => {
    const client = connectClient(router, 'c1', [skill('/docs/skill.md')]);
    for (const pathname of ['/skills/c1/docs/', '/c1/skills/docs/', '/skills/c1/d%6Fcs/']) {
      expect((await read(pathname)).status, pathname).toBe(200);
      expect(client.lastCall.path).toBe('/docs/skill.md');
    }
    expect((await read('/skills/c1/docs//')).status).toBe(400);
  });

  it('answers string data as text, through both routes, and sends one GET callClient for the skill', async () => {
    const client = connectClient(router, 'c1', [skill('/docs/review/skill.md')]);
    client.reply = () => ({ ok: true, data: '# Review' });
    const auth = { scheme: 'Bearer', token: 't1' };
    for (const pathname of ['/skills/c1/docs/review', '/c1/skills/docs/review']) {
      const response = await read(pathname, { query: { x: '2' }, headers: { 'x-custom': 'v' }, auth });
      expect(response, pathname).toEqual({ status: 200, headers: { 'content-type': 'text/markdown; charset=utf-8', ...SKILL_TEXT_HEADERS }, body: '# Review' });
    }
    expect(client.calls).toHaveLength(2);
    expect(client.lastCall).toMatchObject({
      type: 'callClient',
      clientId: 'c1',
      method: 'GET',
      path: '/docs/review/skill.md',
      params: {},
      query: { x: '2' },
      headers: { 'x-custom': 'v' },
      auth,
      kind: 'skill',
      name: '/docs/review/skill.md',
      args: { params: {}, query: { x: '2' }, headers: { 'x-custom': 'v' } },
    });
    expect(client.lastCall.body).toBeUndefined();
  });

  it("uses the descriptor's content type, adding a charset to text/*", async () => {
    connectClient(router, 'c1', [
      skill('/plain/skill.md', { contentType: 'text/plain' }),
      skill('/json/skill.md', { contentType: 'application/json' }),
      skill('/latin/skill.md', { contentType: 'text/html; charset=latin1' }),
    ]);
    expect((await read('/skills/c1/plain')).headers).toEqual({ 'content-type': 'text/plain; charset=utf-8', ...SKILL_TEXT_HEADERS });
    expect((await read('/skills/c1/json')).headers).toEqual({ 'content-type': 'application/json', ...SKILL_TEXT_HEADERS });
    expect((await read('/skills/c1/latin')).headers).toEqual({ 'content-type': 'text/html; charset=latin1', ...SKILL_TEXT_HEADERS });
  });

  // Review finding: a page of any site registered a skill of type text/html; a reader who opened
  // it ran its scripts as a page of the server, which may use the host API and call every client.
  it("sends every text with a sandbox and nosniff: a client's HTML or SVG never runs as the server's own page", async () => {
    connectClient(router, 'c1', [
      skill('/html/skill.md', { contentType: 'text/html' }),
      skill('/svg/skill.md', { contentType: 'image/svg+xml' }),
      skill('/md/skill.md'),
    ]);
    for (const pathname of ['/skills/c1/html', '/skills/c1/svg', '/skills/c1/md']) {
      const { headers } = await read(pathname);
      expect(headers['content-security-policy'], pathname).toBe("sandbox; default-src 'none'");
      expect(headers['x-content-type-options'], pathname).toBe('nosniff');
    }
  });

  it('answers an empty string as an empty text body', async () => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    client.reply = () => ({ ok: true, data: '' });
    expect(await read('/skills/c1/s')).toEqual({ status: 200, headers: { 'content-type': DEFAULT_SKILL_CONTENT_TYPE, ...SKILL_TEXT_HEADERS }, body: '' });
  });

  it.each([
    ['an object', { items: [1, 2] }, { data: { items: [1, 2] } }],
    ['a number', 0, { data: 0 }],
    ['false', false, { data: false }],
    ['null', null, { data: null }],
    ['no data at all', undefined, { data: null }],
  ])('wraps %s as JSON {data}', async (_name, data, expected) => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    client.reply = () => ({ ok: true, data });
    const response = await read('/skills/c1/s');
    expect(response.status).toBe(200);
    expect(response.headers).toEqual({ 'content-type': JSON_TYPE });
    expect(bodyOf(response)).toEqual(expected);
  });
});

describe('resolution', () => {
  it('takes the first candidate that names a skill: skill.md, then SKILL.md, then .skill.md', async () => {
    const all = connectClient(router, 'all', [skill('/a.skill.md'), skill('/a/SKILL.md'), skill('/a/skill.md')]);
    await read('/skills/all/a');
    expect(all.lastCall.path).toBe('/a/skill.md');

    const upper = connectClient(router, 'upper', [skill('/a.skill.md'), skill('/a/SKILL.md')]);
    await read('/skills/upper/a');
    expect(upper.lastCall.path).toBe('/a/SKILL.md');

    const dotted = connectClient(router, 'dotted', [skill('/a.skill.md')]);
    await read('/skills/dotted/a');
    expect(dotted.lastCall.path).toBe('/a.skill.md');
    await read('/skills/dotted/a.skill.md');
    expect(dotted.lastCall.path).toBe('/a.skill.md');
  });

  it('skips candidates that resolve to an endpoint or a prompt', async () => {
    const client = connectClient(router, 'c1', [
      { type: 'endpoint', method: 'GET', path: '/a/:leaf' },
      { type: 'prompt', path: '/a/:name/prompt.md' },
      skill('/a.skill.md'),
    ]);
    expect((await read('/skills/c1/a')).status).toBe(200);
    expect(client.calls.map((call) => call.path)).toEqual(['/a.skill.md']);
  });

  it('reads percent-encoded names as their decoded form, and the same skill through both routes', async () => {
    const client = connectClient(router, 'c 1', [skill('/docs/review/skill.md')]);
    for (const pathname of ['/skills/c%201/docs/review', '/skills/c%201/%64ocs/review', '/c%201/skills/docs/rev%69ew/skill.md']) {
      expect((await read(pathname)).status, pathname).toBe(200);
    }
    expect(client.calls.map((call) => call.path)).toEqual(Array(3).fill('/docs/review/skill.md'));
  });

  it('a skill registered at a name no route may carry is never read through it (400 before lookup)', async () => {
    // '/odd/.skill.md' is a valid descriptor path; its bare name '/odd/' has an empty segment. The
    // trailing slash the routes tolerate makes '/odd/' name '/odd': '/odd/skill.md', never it.
    const client = connectClient(router, 'c1', [skill('/odd/.skill.md'), skill('/odd/skill.md')]);
    expect((await read('/skills/c1/odd//')).status).toBe(400);
    expect((await read('/skills/c1/odd%2F')).status).toBe(400);
    expect((await read('/skills/c1/odd/')).status).toBe(200);
    expect((await read('/skills/c1/odd/.skill.md')).status).toBe(200);
    expect((await read('/skills/c1/odd')).status).toBe(200);
    expect(client.calls.map((call) => call.path)).toEqual(['/odd/skill.md', '/odd/.skill.md', '/odd/skill.md']);
  });

  it('follows catalog updates: a read resolves against the newest catalog', async () => {
    const client = connectClient(router, 'c1', [skill('/a/skill.md')]);
    expect((await read('/skills/c1/a')).status).toBe(200);
    client.session.handle({ type: 'updateClientCatalog', clientId: 'c1', paths: [skill('/b/SKILL.md')] });
    expect((await read('/skills/c1/a')).status).toBe(404);
    expect((await read('/skills/c1/b')).status).toBe(200);
    expect(client.calls.map((call) => call.path)).toEqual(['/a/skill.md', '/b/SKILL.md']);
  });

  it('passes the values of parameter segments', async () => {
    const client = connectClient(router, 'c1', [skill('/topics/:topic/skill.md')]);
    expect((await read('/skills/c1/topics/billing')).status).toBe(200);
    expect(client.lastCall).toMatchObject({ path: '/topics/billing/skill.md', params: { topic: 'billing' } });
  });
});

describe('errors', () => {
  it('404 with an empty body saying in its headers which is unknown: the client, or the skill on it (a non-skill descriptor is no skill)', async () => {
    const client = connectClient(router, 'c1', [
      skill('/known/skill.md'),
      { type: 'endpoint', method: 'GET', path: '/api' },
      { type: 'prompt', path: '/p/prompt.md' },
    ]);
    const noClient = await read('/skills/nobody/known');
    expect(noClient).toMatchObject({ status: 404, body: undefined });
    expect(noClient.headers).toEqual({ 'mdp-error-code': 'unknown_client', 'mdp-error': 'No client "nobody" is connected' });
    for (const [pathname, skillPath] of [
      ['/skills/c1/unknown', '/unknown'],
      ['/c1/skills/api', '/api'],
      ['/skills/c1/p/prompt.md', '/p/prompt.md'],
      ['/skills/c1/%75nknown', '/unknown'],
    ] as const) {
      const response = await read(pathname);
      expect(response.status, pathname).toBe(404);
      expect(response.body, pathname).toBeUndefined();
      expect(response.headers['mdp-error-code']).toBe('unknown_path');
      expect(response.headers['mdp-error']).toContain(`Client "c1" has no skill "${skillPath}" (tried `);
      expect(response.headers['mdp-error']).toContain(`${skillPath}/skill.md`);
      expect(response.miss).toMatchObject({ code: 'unknown_path', clientId: 'c1', skillPath });
    }
    expect(client.calls).toHaveLength(0);
  });

  it('404 headers are ASCII and bounded whatever the id holds', async () => {
    const id = `é\u2028"${'x'.repeat(1000)}`;
    const response = await read(`/skills/${encodeURIComponent(id)}/s`);
    expect(response.status).toBe(404);
    const text = response.headers['mdp-error'] ?? '';
    expect(text).toMatch(/^[\x20-\x7e]+$/);
    expect(text.startsWith('No client "\\u00e9\\u2028\\"xxx')).toBe(true);
    expect(text.length).toBeLessThanOrEqual(400);
    expect(text.endsWith('...')).toBe(true);
    expect(response.miss?.clientId).toBe(id);
  });

  it('404 naming the mirrored twin an id reaches, or the twins when there are several', async () => {
    const mirrored = (serverId: string) => ({ metadata: { mdpProxy: { serverId, clientId: 'hello' } } });
    connectClient(router, '127.0.0.1:47373.hello', [skill('/s/skill.md')], mirrored('127.0.0.1:47373'));
    // Outside a cluster no id is a server's: no twin is named.
    const alone = await read('/skills/hello/s');
    expect([alone.body, alone.headers['mdp-error'], alone.headers['mdp-client-candidates']]).toEqual([undefined, 'No client "hello" is connected', undefined]);
    const cluster = { isServerId: (id: string) => id.startsWith('127.0.0.1:') };
    const readInCluster = (pathname: string): Promise<SkillReadResponse> => handleSkillRead(router, readRequest(pathname), cluster);
    const one = await readInCluster('/skills/hello/s');
    expect(one).toMatchObject({ status: 404, body: undefined });
    expect(one.headers).toEqual({
      'mdp-error-code': 'unknown_client',
      'mdp-error': 'No client "hello" is connected; it is mirrored here as "127.0.0.1:47373.hello": read /skills/127.0.0.1%3A47373.hello/s',
      'mdp-client-candidates': '127.0.0.1%3A47373.hello',
    });
    connectClient(router, '127.0.0.1:47374.hello', [skill('/s/skill.md')], mirrored('127.0.0.1:47374'));
    const two = await readInCluster('/skills/hello/s');
    expect(two.body).toBeUndefined();
    expect(two.headers['mdp-client-candidates']).toBe('127.0.0.1%3A47373.hello, 127.0.0.1%3A47374.hello');
    expect(two.miss?.candidates).toEqual(['127.0.0.1:47373.hello', '127.0.0.1:47374.hello']);
  });

  it('404 with an empty body for what is no skill route at all', async () => {
    for (const pathname of ['/skills/c1', '/mdp/skills/known']) {
      expect(await read(pathname), pathname).toEqual({ status: 404, headers: {}, body: undefined });
    }
  });

  it('400 {error} for malformed encoding and paths, without calling the client', async () => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    for (const pathname of ['/skills/c1/%E0%A4%A', '/skills/c1/a%2Fb', '/c1/skills/s/../s', '/skills/c1/s//', '/skills/c1/a%20b']) {
      const response = await read(pathname);
      expect(response.status, pathname).toBe(400);
      expect(response.headers).toEqual({ 'content-type': JSON_TYPE });
      expect(typeof (bodyOf(response) as { error: unknown }).error, pathname).toBe('string');
    }
    expect(client.calls).toHaveLength(0);
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'])('405 with Allow for %s, before the path is looked at', async (method) => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    for (const pathname of ['/skills/c1/s', '/skills/c1/%ZZ']) {
      expect(await read(pathname, { method })).toEqual({ status: 405, headers: { allow: 'GET, OPTIONS' }, body: undefined });
    }
    expect(client.calls).toHaveLength(0);
  });

  it('204 for OPTIONS, without calling the client', async () => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    expect(await read('/skills/c1/s', { method: 'OPTIONS' })).toEqual({ status: 204, headers: { allow: 'GET, OPTIONS' }, body: undefined });
    expect(client.calls).toHaveLength(0);
  });

  it("502 with the client's own error, code and details passed through", async () => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    const error = { code: 'quota_exceeded', message: 'too many', details: { limit: 3 } };
    client.reply = () => ({ ok: false, error });
    const response = await read('/skills/c1/s');
    expect(response.status).toBe(502);
    expect(response.headers).toEqual({ 'content-type': JSON_TYPE });
    expect(bodyOf(response)).toEqual({ error });
  });

  it('502 handler_error when the client fails without details', async () => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    client.reply = () => ({ ok: false });
    const response = await read('/skills/c1/s');
    expect(response.status).toBe(502);
    expect(bodyOf(response)).toMatchObject({ error: { code: 'handler_error' } });
  });

  it('502 transport_error when the client session ends mid-call', async () => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    client.reply = () => {
      client.session.end();
      return undefined;
    };
    const response = await read('/skills/c1/s');
    expect(response.status).toBe(502);
    expect(bodyOf(response)).toMatchObject({ error: { code: 'transport_error' } });
    expect(router.pendingCount).toBe(0);
  });

  it('404 with an empty body when the client is gone by the time the call is made', async () => {
    connectClient(router, 'c1', [skill('/s/skill.md')]);
    vi.spyOn(router, 'dispatch').mockImplementationOnce((_clientId, _target, _options, done) => {
      done({ ok: false, source: 'server', error: { code: 'not_found', message: 'gone' } });
      return undefined;
    });
    const response = await read('/skills/c1/s');
    expect(response).toMatchObject({ status: 404, body: undefined, headers: { 'mdp-error-code': 'unknown_client', 'mdp-error': 'gone' } });
    expect(response.miss).toEqual({ code: 'unknown_client', clientId: 'c1', skillPath: '/s/skill.md', message: 'gone' });
  });

  it("502 {error} when the client itself answers not_found: the client's failure, not a miss", async () => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    client.reply = () => ({ ok: false, error: { code: 'not_found', message: 'no such page' } });
    const response = await read('/skills/c1/s');
    expect(response.status).toBe(502);
    expect(bodyOf(response)).toEqual({ error: { code: 'not_found', message: 'no such page' } });
  });

  it('504 {error} after the per-call timeoutMs, not the router default', async () => {
    vi.useFakeTimers();
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    client.reply = () => undefined;
    let response: SkillReadResponse | undefined;
    void handleSkillRead(router, readRequest('/skills/c1/s'), { timeoutMs: 50 }).then((r) => (response = r));
    await vi.advanceTimersByTimeAsync(49);
    expect(response).toBeUndefined();
    expect(router.pendingCount).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(response?.status).toBe(504);
    expect(response?.headers).toEqual({ 'content-type': JSON_TYPE });
    expect(bodyOf(response!)).toMatchObject({ error: { code: 'timeout' } });
    expect(router.pendingCount).toBe(0);
  });
});

describe('a reader that goes away', () => {
  it('ends its call at once (502) when its signal aborts, and never sends a call for an aborted one', async () => {
    const client = connectClient(router, 'c1', [skill('/s/skill.md')]);
    client.reply = () => undefined;
    const controller = new AbortController();
    const response = handleSkillRead(router, readRequest('/skills/c1/s'), {}, controller.signal);
    expect(router.pendingCount).toBe(1);
    controller.abort();
    expect(await response).toMatchObject({ status: 502 });
    expect(bodyOf(await response)).toEqual({
      error: { code: 'transport_error', message: 'The caller went away before the client answered' },
    });
    expect(router.pendingCount).toBe(0);

    const gone = AbortSignal.abort();
    expect((await handleSkillRead(router, readRequest('/skills/c1/s'), {}, gone)).status).toBe(502);
    expect(router.pendingCount).toBe(0);
    expect(client.calls).toHaveLength(1);
  });
});

describe('visibleTo (tenancy by principal)', () => {
  it('answers a client the reader does not see exactly as an unknown client, and never calls it', async () => {
    const mine = connectClient(router, 'mine', [skill('/docs/skill.md')]);
    const theirs = connectClient(router, 'theirs', [skill('/docs/skill.md')]);
    const options = {
      visibleTo: (auth: { token?: string } | undefined) => (auth?.token === 'A' ? (client: { id: string }) => client.id === 'mine' : undefined),
    };
    const as = (pathname: string, token: string) => handleSkillRead(router, readRequest(pathname, { auth: { token } }), options);
    expect((await as('/skills/mine/docs', 'A')).status).toBe(200);
    for (const pathname of ['/skills/theirs/docs', '/theirs/skills/docs', '/skills/theirs/d%6Fcs', '/skills/theirs/other']) {
      const hidden = await as(pathname, 'A');
      const unknown = await as(pathname.replace('theirs', 'nobody'), 'A');
      expect(hidden.status, pathname).toBe(404);
      expect(hidden.body).toBeUndefined();
      expect(hidden.headers['mdp-error-code']).toBe('unknown_client');
      expect(JSON.stringify(hidden.headers).replaceAll('theirs', 'X')).toBe(JSON.stringify(unknown.headers).replaceAll('nobody', 'X'));
    }
    expect(theirs.calls).toHaveLength(0);
    // A reader that sees everything reads it.
    expect((await as('/skills/theirs/docs', 'B')).status).toBe(200);
    expect(mine.calls).toHaveLength(1);
  });
});
