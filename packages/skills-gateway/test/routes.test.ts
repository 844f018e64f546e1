/** createSkillsRoutes in-process with Hono's app.request(): what reaches the client, and fall-through. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { Router, encodeAuthCookie } from '@mdp/core';
import { skill, type FakeClient } from '@mdp/test-kit';
import { createSkillsRoutes, lastValueQuery } from '../src/index.js';
import { connectClient } from './helpers.js';

let router: Router;
let client: FakeClient;

beforeEach(() => {
  router = new Router({ invocationTimeoutMs: 60_000 });
  client = connectClient(router, 'c1', [skill('/a/skill.md'), skill('/b/skill.md')]);
});

afterEach(async () => {
  await router.close();
});

describe('lastValueQuery', () => {
  it('keeps the last value of a repeated key', () => {
    expect(lastValueQuery(new URLSearchParams('x=1&y=a&x=2&x=3&empty='))).toEqual({ x: '3', y: 'a', empty: '' });
  });

  it('keeps keys named like Object built-ins', () => {
    expect(JSON.stringify(lastValueQuery(new URLSearchParams('__proto__=1&constructor=2&toString=3')))).toBe('{"__proto__":"1","constructor":"2","toString":"3"}');
  });
});

describe('createSkillsRoutes', () => {
  it('forwards headers named like Object built-ins as sent', async () => {
    const app = createSkillsRoutes(router);
    await app.request('/skills/c1/a', { headers: new Headers([['__proto__', 'y'], ['constructor', 'x']]) });
    expect(JSON.stringify(client.lastCall.headers)).toMatch(/"__proto__":"y"/);
    expect(JSON.stringify(client.lastCall.headers)).toMatch(/"constructor":"x"/);
  });

  it('reads a skill and answers with the handler status, headers and body', async () => {
    const app = createSkillsRoutes(router);
    client.reply = () => ({ ok: true, data: '# A' });
    const response = await app.request('/skills/c1/a');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(await response.text()).toBe('# A');

    const nested = await app.request('/c1/skills/b', { method: 'GET' });
    expect(await nested.text()).toBe('# A');
    expect(client.lastCall.path).toBe('/b/skill.md');
  });

  it('forwards the decoded query with the last value of a repeated key', async () => {
    const app = createSkillsRoutes(router);
    await app.request('/skills/c1/a?x=1&x=2&y=hello%20world&x=3');
    expect(client.lastCall.query).toEqual({ x: '3', y: 'hello world' });
    expect(client.lastCall.args?.query).toEqual({ x: '3', y: 'hello world' });
  });

  it('forwards request headers with lower-case names, repeated values joined by ", "', async () => {
    const app = createSkillsRoutes(router);
    const headers = new Headers();
    headers.append('X-Custom', 'v1');
    headers.append('Accept-Language', 'en');
    headers.append('Accept-Language', 'fr');
    await app.request('/skills/c1/a', { headers });
    expect(client.lastCall.headers).toMatchObject({ 'x-custom': 'v1', 'accept-language': 'en, fr' });
    expect(Object.keys(client.lastCall.headers ?? {}).every((name) => name === name.toLowerCase())).toBe(true);
  });

  it('sends the transport auth of the request: Authorization, mdp_auth cookie, x-mdp-auth-*', async () => {
    const app = createSkillsRoutes(router);
    const cookie = `mdp_auth=${encodeAuthCookie({ token: 'from-cookie', metadata: { user: 'u1' } })}`;
    await app.request('/skills/c1/a', { headers: { authorization: 'Bearer tok-1', cookie, 'x-mdp-auth-tenant': 't9' } });
    expect(client.lastCall.auth).toEqual({
      scheme: 'Bearer',
      token: 'tok-1',
      metadata: { user: 'u1' },
      headers: { authorization: 'Bearer tok-1', cookie, 'x-mdp-auth-tenant': 't9' },
    });

    await app.request('/skills/c1/a');
    expect(client.lastCall.auth).toBeUndefined();
  });

  it('uses a custom extractAuth', async () => {
    const app = createSkillsRoutes(router, { extractAuth: (headers) => ({ token: String(headers['x-api-key']) }) });
    await app.request('/skills/c1/a', { headers: { 'X-Api-Key': 'k-42' } });
    expect(client.lastCall.auth).toEqual({ token: 'k-42' });
  });

  it('maps statuses onto the response: 404 JSON saying what is missing, 405 with an empty body, 400 JSON, OPTIONS 204', async () => {
    const app = createSkillsRoutes(router);
    const missing = await app.request('/skills/c1/missing');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'not_found', message: expect.stringContaining('has no skill "/missing"') } });

    const post = await app.request('/skills/c1/a', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, OPTIONS');
    expect(await post.text()).toBe('');

    const bad = await app.request('/skills/c1/a%2Fb');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/^application\/json/);
    expect(typeof ((await bad.json()) as { error: unknown }).error).toBe('string');

    const options = await app.request('/skills/c1/a', { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(await options.text()).toBe('');
  });

  it('lets authorize refuse a read with 401 {error}; OPTIONS is never refused', async () => {
    const app = createSkillsRoutes(router, { authorize: (auth) => auth?.token === 'good' });
    const refused = await app.request('/skills/c1/a', { headers: { authorization: 'Bearer bad' } });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'Unauthorized' });
    expect((await app.request('/skills/c1/a', { method: 'OPTIONS' })).status).toBe(204);
    expect(client.calls).toHaveLength(0);

    expect((await app.request('/skills/c1/a', { headers: { authorization: 'Bearer good' } })).status).toBe(200);
    expect(client.calls).toHaveLength(1);
  });

  it('passes the per-call timeoutMs option to the router', async () => {
    client.reply = () => undefined;
    const app = createSkillsRoutes(router, { timeoutMs: 5 });
    const response = await app.request('/skills/c1/a');
    expect(response.status).toBe(504);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('timeout');
  });

  it('reads the raw request target from the node adapter, so dot segments are refused, not resolved', async () => {
    const app = createSkillsRoutes(router);
    // A fetch URL has `/a/../b` resolved to `/b` already; the raw target still shows the dot segment.
    const response = await app.request('/skills/c1/b', {}, { incoming: { url: '/skills/c1/a/../b?x=1' } });
    expect(response.status).toBe(400);
    expect(client.calls).toHaveLength(0);

    await app.request('/skills/c1/b?x=1', {}, { incoming: { url: '/skills/c1/a?x=1' } });
    expect(client.lastCall).toMatchObject({ path: '/a/skill.md', query: { x: '1' } });
  });

  it('falls through to the next handler for paths that are not skill routes', async () => {
    const app = new Hono();
    app.route('/', createSkillsRoutes(router));
    app.get('/hello', (c) => c.text('hello'));
    app.get('/mdp/skills/x', (c) => c.text('server route'));
    app.get('/skills/c1', (c) => c.text('no skill path'));

    expect(await (await app.request('/hello')).text()).toBe('hello');
    expect(await (await app.request('/mdp/skills/x')).text()).toBe('server route');
    expect(await (await app.request('/skills/c1')).text()).toBe('no skill path');
    const unknown = await app.request('/elsewhere');
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toBe('404 Not Found'); // Hono's own not-found, not the empty skill 404
    expect(await (await app.request('/skills/c1/a')).text()).toBe('skill at /a/skill.md');
    expect(client.calls).toHaveLength(1);
  });
});
