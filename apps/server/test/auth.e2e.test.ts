/** POST/DELETE /mdp/auth and transport auth on every route (SPEC §7). */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeAuthCookie } from '@mdp/core';
import { descriptor, skill, stopAll } from '@mdp/test-kit';
import { registeredClient, startServer } from './harness.js';

afterEach(stopAll);

function cookieOf(res: Response): { value: string; attributes: string[] } {
  const header = res.headers.get('set-cookie') ?? '';
  const [pair, ...attributes] = header.split(';').map((p) => p.trim());
  const [name, value] = (pair ?? '').split('=');
  expect(name).toBe('mdp_auth');
  return { value: value ?? '', attributes };
}

describe('/mdp/auth', () => {
  it('issues the cookie from the body with the attributes of SPEC §7', async () => {
    const t = await startServer();
    const auth = { scheme: 'Bearer', token: 'abc', metadata: { user: 'u1' } };
    const res = await fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth }) });
    expect(res.status).toBe(204);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const cookie = cookieOf(res);
    expect(cookie.attributes).toEqual(['Path=/', 'Max-Age=3600', 'HttpOnly', 'SameSite=Lax']);
    expect(decodeAuthCookie(cookie.value)).toEqual(auth);
    expect(JSON.parse(Buffer.from(cookie.value, 'base64url').toString())).toEqual(auth);
  });

  it('falls back to the transport auth of the request, and refuses when there is none', async () => {
    const t = await startServer();
    const res = await fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { authorization: 'Token xyz' } });
    expect(res.status).toBe(204);
    expect(decodeAuthCookie(cookieOf(res).value)).toMatchObject({ scheme: 'Token', token: 'xyz' });
    const none = await fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { cookie: 'unrelated=1' } });
    expect(none.status).toBe(400);
    expect(typeof ((await none.json()) as { error: unknown }).error).toBe('string');
  });

  it('refuses invalid bodies with 400 {error}', async () => {
    const t = await startServer();
    for (const body of ['{nope', '[]', JSON.stringify({ auth: { token: 5 } }), JSON.stringify({ auth: [] })]) {
      const res = await fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status, body).toBe(400);
      expect(typeof ((await res.json()) as { error: unknown }).error).toBe('string');
    }
  });

  it('refuses auth that cannot make a usable cookie with 400 {error}: nested too deeply, or over 4096 bytes', async () => {
    const t = await startServer();
    const post = (body: string): Promise<Response> => fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    // 100,000 levels: JSON.parse takes it; the auth schema refuses it before anything tries to write it back.
    const deep = await post(`{"auth":{"token":"t","metadata":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}}`);
    expect(deep.status).toBe(400);
    expect(await deep.json()).toEqual({ error: 'auth.metadata: must not nest objects and arrays more than 64 levels deep' });
    const big = await post(JSON.stringify({ auth: { token: 't', metadata: { blob: 'x'.repeat(4000) } } }));
    expect(big.status).toBe(400);
    expect(((await big.json()) as { error: string }).error).toMatch(/^auth is too large for a cookie: \d+ bytes encoded, at most 4096$/);
    expect(big.headers.get('set-cookie')).toBeNull();
    // Just under the limit is still issued.
    const fits = await post(JSON.stringify({ auth: { token: 't', metadata: { blob: 'x'.repeat(2900) } } }));
    expect(fits.status).toBe(204);
    expect(`mdp_auth=${cookieOf(fits).value}`.length).toBeLessThanOrEqual(4096);
  });

  it('DELETE clears the cookie', async () => {
    const t = await startServer();
    const res = await fetch(`${t.http}/mdp/auth`, { method: 'DELETE' });
    expect(res.status).toBe(204);
    const cookie = cookieOf(res);
    expect(cookie.value).toBe('');
    expect(cookie.attributes).toContain('Max-Age=0');
  });

  it('answers a credentialed cross-origin preflight from pages whose cookie counts, and refuses other sites a cookie', async () => {
    const t = await startServer({ allowedOrigins: ['http://page.test'] });
    const preflight = (origin: string) =>
      fetch(`${t.http}/mdp/auth`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
    const allowed = await preflight('http://page.test');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('http://page.test');
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    // Another site's page: SPEC §6's CORS as for any page (Origin echoed, credentials allowed), but
    // neither minted nor cleared a cookie: what it sends with credentials does not count.
    const other = await preflight('http://other.test');
    expect(other.status).toBe(204);
    expect(other.headers.get('access-control-allow-origin')).toBe('http://other.test');
    expect(other.headers.get('access-control-allow-credentials')).toBe('true');
    for (const method of ['POST', 'DELETE']) {
      const res = await fetch(`${t.http}/mdp/auth`, {
        method,
        headers: { 'content-type': 'application/json', origin: 'http://other.test' },
        body: method === 'POST' ? JSON.stringify({ auth: { token: 'x' } }) : null,
      });
      expect(res.status, method).toBe(403);
      expect(await res.json()).toEqual({
        error: `Origin "http://other.test" may not use the mdp_auth cookie: only this server's own pages, loopback pages and --allow-origin origins may`,
      });
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    const minted = await fetch(`${t.http}/mdp/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://page.test' },
      body: JSON.stringify({ auth: { token: 'x' } }),
    });
    expect(minted.status).toBe(204);
    expect(minted.headers.get('access-control-allow-credentials')).toBe('true');
  });
});

describe('transport auth reaches the client', () => {
  it('a websocket opened with the issued cookie is a transport-auth session', async () => {
    const t = await startServer();
    const issued = await fetch(`${t.http}/mdp/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth: { scheme: 'Bearer', token: 'from-cookie' } }),
    });
    const cookie = `mdp_auth=${cookieOf(issued).value}`;
    await registeredClient(t, descriptor('cookie-client', [skill('/s/skill.md')]), { cookie });
    expect(t.server.router.getClient('cookie-client')?.authSource).toBe('transport');
  });

  it('a skill read carries the reader cookie auth in callClient.auth', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('reader-target', [skill('/s/skill.md')]));
    client.handler = (call) => JSON.stringify(call.auth);
    const issued = await fetch(`${t.http}/mdp/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth: { scheme: 'Bearer', token: 'reader-cookie', metadata: { role: 'viewer' } } }),
    });
    const cookie = `mdp_auth=${cookieOf(issued).value}`;
    const res = await fetch(`${t.http}/skills/reader-target/s`, { headers: { cookie } });
    const auth = JSON.parse(await res.text()) as Record<string, unknown>;
    expect(auth).toMatchObject({ scheme: 'Bearer', token: 'reader-cookie', metadata: { role: 'viewer' }, headers: { cookie } });
  });

  it('registered auth and transport auth together report transport+message', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('both', [skill('/s/skill.md')]), { authorization: 'Bearer t' });
    expect(t.server.router.getClient('both')?.authSource).toBe('transport');
    client.send({ type: 'registerClient', client: descriptor('both', [skill('/s/skill.md')]), auth: { token: 'm' } });
    await new Promise<void>((resolve) => {
      const off = t.server.router.onClientEvent((e) => e.type === 'updated' && (off(), resolve()));
    });
    expect(t.server.router.getClient('both')?.authSource).toBe('transport+message');
  });
});
