/** *beyond* (SPEC §7): the optional auth policy, on every edge. */
import { afterEach, describe, expect, it } from 'vitest';
import { encodeAuthCookie } from '@mdp/core';
import { TestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import { createMdpServer, parseCliArgs, parseTokensFile } from '../src/index.js';
import { clientChange, registeredClient, startServer, type TestServer } from './harness.js';

afterEach(stopAll);

const TOKEN = 's3cret-token';
const bearer = { authorization: `Bearer ${TOKEN}` };

async function issueCookie(t: TestServer, auth: unknown): Promise<Response> {
  return fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth }) });
}

describe('with --auth-token', () => {
  it('closes websocket upgrades without a valid credential with 4401', async () => {
    const t = await startServer({ authTokens: [TOKEN] });
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong' }, { cookie: `mdp_auth=${encodeAuthCookie({ token: TOKEN })}` }];
    for (const headers of attempts) {
      const client = await TestClient.connect(t.ws, { headers });
      expect(await client.closed).toEqual({ code: 4401, reason: 'Unauthorized' });
    }
    expect(t.server.router.sessionCount).toBe(0);
    const ok = await registeredClient(t, descriptor('allowed', [skill('/s/skill.md')]), bearer);
    ok.handler = () => 'in';
    expect(t.server.router.getClient('allowed')?.authSource).toBe('transport');
  });

  it('refuses HTTP loop connects and skill reads with 401, lets preflights through', async () => {
    const t = await startServer({ authTokens: [TOKEN] });
    const refused = await fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST' });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'Unauthorized' });
    const allowed = await fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST', headers: bearer });
    expect(allowed.status).toBe(200);

    const client = await registeredClient(t, descriptor('guarded', [skill('/s/skill.md')]), bearer);
    client.handler = () => 'secret text';
    expect((await fetch(`${t.http}/skills/guarded/s`)).status).toBe(401);
    expect((await fetch(`${t.http}/guarded/skills/s`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    expect(await (await fetch(`${t.http}/skills/guarded/s`, { headers: bearer })).text()).toBe('secret text');
    expect((await fetch(`${t.http}/skills/guarded/s`, { method: 'OPTIONS' })).status).toBe(204);
    expect(client.calls).toHaveLength(1);
  });

  it('mints a sealed cookie only for a valid credential; it hides the token; forged and tampered cookies are refused', async () => {
    const t = await startServer({ authTokens: [TOKEN] });
    expect((await issueCookie(t, { token: 'wrong' })).status).toBe(401);
    const res = await issueCookie(t, { scheme: 'Bearer', token: TOKEN });
    expect(res.status).toBe(204);
    const value = /mdp_auth=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1] ?? '';
    // The key's id, then the sealed bytes.
    expect(value).toMatch(/^[A-Za-z0-9_-]{12}\.[A-Za-z0-9_-]+$/);
    const [keyId, sealed] = value.split('.') as [string, string];
    // Browsers send a cookie to every port of the host: another local service must not read the token.
    expect(Buffer.from(sealed, 'base64url').toString('latin1')).not.toContain(TOKEN);

    const listed = clientChange(t.server, 'cookie-client', true);
    const good = await TestClient.connect(t.ws, { headers: { cookie: `mdp_auth=${value}` } });
    good.send({ type: 'registerClient', client: descriptor('cookie-client', [skill('/s/skill.md')]) });
    await listed;

    const bytes = Buffer.from(sealed, 'base64url');
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
    const tampered = `${keyId}.${bytes.toString('base64url')}`;
    const forgedPayload = encodeAuthCookie({ scheme: 'Bearer', token: TOKEN, metadata: { admin: true } });
    for (const cookie of [tampered, `${forgedPayload}.${value}`, forgedPayload]) {
      const bad = await TestClient.connect(t.ws, { headers: { cookie: `mdp_auth=${cookie}` } });
      expect((await bad.closed).code).toBe(4401);
    }
  });
});

describe("an auth policy of the caller's own", () => {
  it('cannot cluster without a secret: peers would have nothing to prove membership with', () => {
    const authPolicy = { verify: () => true, cookieSecret: Buffer.alloc(32, 1) };
    expect(() => createMdpServer({ authPolicy, cluster: {} })).toThrow('an authPolicy (or accessTokens) without authTokens needs cluster.secret');
    // Access tokens of an issuer are no secret a peer could prove either.
    expect(() => createMdpServer({ accessTokens: { issuer: 'https://idp.example' }, cluster: {} })).toThrow('needs cluster.secret');
    expect(() => createMdpServer({ authPolicy, cluster: { mode: 'proxy-required' } })).toThrow(RangeError);
    for (const ok of [{ cluster: { secret: 's' } }, { cluster: { mode: 'standalone' as const } }, {}, { cluster: {}, authTokens: ['t'] }]) {
      expect(() => createMdpServer({ authPolicy, ...ok })).not.toThrow();
    }
  });
});

describe('without a policy (the default)', () => {
  it('accepts every connection and issues unsigned cookies, as today’s servers do', async () => {
    const t = await startServer();
    const res = await issueCookie(t, { token: 'anything' });
    expect(res.status).toBe(204);
    expect(res.headers.get('set-cookie')).not.toMatch(/mdp_auth=[^;]*\./);
    await registeredClient(t, descriptor('open', [skill('/s/skill.md')]));
  });
});

describe('auth flags', () => {
  it('takes --auth-token (repeatable), or else MDP_AUTH_TOKENS', () => {
    expect(parseCliArgs(['--auth-token', 'a', '--auth-token', 'b'])).toMatchObject({ kind: 'run', options: { authTokens: ['a', 'b'] } });
    expect(parseCliArgs([], { MDP_AUTH_TOKENS: ' c, ,d ' })).toMatchObject({ kind: 'run', options: { authTokens: ['c', 'd'] } });
    // A flag wins over the environment.
    expect(parseCliArgs(['--auth-token', 'a'], { MDP_AUTH_TOKENS: 'c' })).toMatchObject({ kind: 'run', options: { authTokens: ['a'] } });
    expect(parseCliArgs(['--auth-token', ''])).toEqual({ kind: 'error', messages: ['--auth-token must not hold an empty token'] });
  });

  it('reads a tokens file, one per line, skipping blanks and comments', () => {
    expect(parseTokensFile('# tokens\nalpha\n\n  beta  \r\n#gamma\n')).toEqual(['alpha', 'beta']);
  });
});
