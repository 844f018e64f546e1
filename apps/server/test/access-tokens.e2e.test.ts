/**
 * Access tokens of an identity provider (SPEC §17, issue item 1): a real `oidc-provider` on
 * 127.0.0.1 issues them; the server finds its key set by OIDC discovery. Good tokens are accepted
 * beside static ones and name the person (`iss` + `sub`); every hostile token is a 401 with its
 * reason logged, never a 500.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { TestClient, descriptor, endpoint, recordingLogger, stopAll, type RecordingLogger } from '@mdp/test-kit';
import { startServer, registeredClient, type TestServer } from './harness.js';
import { signingKey, startIssuer, type Issuer } from './oidc.js';

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('access tokens of an issuer', () => {
  let issuer: Issuer;
  let t: TestServer;
  let log: RecordingLogger;

  beforeEach(async () => {
    issuer = await startIssuer();
    log = recordingLogger({ level: 'info' });
    t = await startServer({ authTokens: ['static-token'], accessTokens: { issuer: issuer.url }, logger: log.logger });
    // The default audience is the server's own URL (RFC 8707).
    issuer.resource = t.http;
  });

  afterEach(async () => {
    await stopAll();
    await issuer.close();
  });

  const clients = (token: string, path = '/mdp/clients') => fetch(`${t.http}${path}`, { headers: { authorization: `Bearer ${token}` } });

  it('accepts a token the provider issued, through discovery, and static tokens beside it', async () => {
    const token = await issuer.clientCredentialsToken(['mdp:read']);
    expect((await clients(token)).status).toBe(200);
    expect((await clients('static-token')).status).toBe(200);
    expect((await clients('not-a-token')).status).toBe(401);
    expect(await log.seen('auth.issuer_discovered')).toMatchObject({ issuer: issuer.url, jwksUrl: issuer.jwksUrl });
  });

  it('names the person, not the token: the same iss + sub owns its client ids with any of its tokens', async () => {
    const alice1 = await issuer.sign({ claims: { sub: 'alice', jti: 'one' } });
    const alice2 = await issuer.sign({ claims: { sub: 'alice', jti: 'two' } });
    const bob = await issuer.sign({ claims: { sub: 'bob' } });
    const first = await registeredClient(t, descriptor('app'), { authorization: `Bearer ${alice1}` });
    // Alice's other token takes her id over (the older session is replaced); Bob's is refused it.
    const second = await registeredClient(t, descriptor('app'), { authorization: `Bearer ${alice2}` });
    expect((await first.closed).code).toBe(4000);
    const stranger = await TestClient.connect(t.ws, { headers: { authorization: `Bearer ${bob}` } });
    stranger.send({ type: 'registerClient', client: descriptor('app') });
    expect((await stranger.closed).code).toBe(4403);
    const listed = t.server.router.listClients();
    expect(listed.map((c) => c.id)).toEqual(['app']);
    expect(listed[0]?.principal).toMatch(/^oidc:[0-9a-f]{32}$/);
    second.close();
  });

  it('refuses hostile tokens with 401 and a reason in the log, never a 500', async () => {
    const now = Math.floor(Date.now() / 1000);
    const stranger = await signingKey('stranger-key');
    const publicPem = issuer.key.publicJwk;
    const cases: Record<string, { token: string; reason: RegExp }> = {
      expired: { token: await issuer.sign({ claims: { iat: now - 7200, exp: now - 3600 } }), reason: /"exp" claim timestamp check failed/ },
      'not yet valid': { token: await issuer.sign({ claims: { nbf: now + 3600 } }), reason: /"nbf" claim timestamp check failed/ },
      'wrong issuer': { token: await issuer.sign({ claims: { iss: 'http://127.0.0.1:1/evil' } }), reason: /unexpected "iss" claim value/ },
      'wrong audience': { token: await issuer.sign({ claims: { aud: 'http://other.example' } }), reason: /unexpected "aud" claim value/ },
      'alg none': { token: `${b64({ alg: 'none', kid: issuer.key.kid })}.${b64({ iss: issuer.url, aud: t.http, sub: 'x', exp: now + 600 })}.`, reason: /alg/i },
      'HMAC signed with the public key': {
        token: await new SignJWT({ sub: 'x' })
          .setProtectedHeader({ alg: 'HS256', kid: issuer.key.kid })
          .setIssuer(issuer.url)
          .setAudience(t.http)
          .setExpirationTime(now + 600)
          .sign(new TextEncoder().encode(JSON.stringify(publicPem))),
        reason: /alg/i,
      },
      'unknown kid': { token: await issuer.sign({ key: stranger }), reason: /no applicable key found in the JSON Web Key Set/ },
    };
    for (const [name, { token, reason }] of Object.entries(cases)) {
      const refused = log.next('auth.token_refused');
      const response = await clients(token);
      expect(response.status, name).toBe(401);
      expect(String((await refused).reason), name).toMatch(reason);
    }
    // A 100 KB token: in a header, over node's header limit, still a 401 that says how to sign in; in /mdp/auth's body, 401.
    const huge = `${b64({ alg: 'RS256', kid: issuer.key.kid })}.${'A'.repeat(100_000)}.sig`;
    const tooLarge = log.next('auth.token_refused');
    const hugeAnswer = await clients(huge);
    expect(hugeAnswer.status).toBe(401);
    expect(hugeAnswer.headers.get('www-authenticate')).toMatch(
      /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource"$/,
    );
    expect(await hugeAnswer.json()).toEqual({ error: 'Access token too large' });
    expect(await tooLarge).toMatchObject({ reason: expect.stringMatching(/over the server's header limit/), path: '/mdp/clients' });
    // Headers over the limit for another reason stay 431.
    expect((await fetch(`${t.http}/mdp/clients`, { headers: { 'x-padding': 'p'.repeat(100_000) } })).status).toBe(431);
    const hugeRefused = log.next('auth.token_refused');
    const minted = await fetch(`${t.http}/mdp/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth: { token: huge } }),
    });
    expect(minted.status).toBe(401);
    expect(String((await hugeRefused).reason)).toMatch(/longer than 8192 characters/);
    // A token in the query string is never read: 401, and the log says where it should go.
    const good = await issuer.sign();
    const queried = log.next('auth.token_refused');
    expect((await fetch(`${t.http}/mdp/clients?access_token=${good}`)).status).toBe(401);
    expect(String((await queried).reason)).toMatch(/query string/);
    // Still serving, and the good token works.
    expect((await clients(good)).status).toBe(200);
  });

  it('is not ready while no key set could be fetched; static tokens still work', async () => {
    const down = await startIssuer();
    await down.close();
    const cold = await startServer({ authTokens: ['static-token'], accessTokens: { issuer: down.url } });
    const ready = await fetch(`${cold.http}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ ready: false, reason: expect.stringMatching(/^access token key set not loaded: /) });
    expect((await fetch(`${cold.http}/mdp/clients`, { headers: { authorization: 'Bearer static-token' } })).status).toBe(200);
    expect((await fetch(`${cold.http}/mdp/clients`, { headers: { authorization: `Bearer ${await issuer.sign()}` } })).status).toBe(401);
  });

  it('keeps people apart under tenancy by principal, whichever of their tokens they use', async () => {
    const tenants = await startServer({ tenancy: 'principal', accessTokens: { issuer: issuer.url } });
    issuer.resource = tenants.http;
    await registeredClient(tenants, descriptor('alices-app'), { authorization: `Bearer ${await issuer.sign({ claims: { sub: 'alice', jti: '1' } })}` });
    const listed = async (sub: string) => {
      const res = await fetch(`${tenants.http}/mdp/clients`, { headers: { authorization: `Bearer ${await issuer.sign({ claims: { sub, jti: '2' } })}` } });
      return ((await res.json()) as { clients: Array<{ id: string }> }).clients.map((c) => c.id);
    };
    expect(await listed('alice')).toEqual(['alices-app']);
    expect(await listed('bob')).toEqual([]);
  });

  it('mints the mdp_auth cookie for an access token; the cookie then works like the token, until it expires', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await issuer.sign({ claims: { sub: 'browser-user', exp: now + 600 } });
    const minted = await fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(minted.status).toBe(204);
    const cookie = /mdp_auth=[^;]+/.exec(minted.headers.get('set-cookie') ?? '')?.[0] ?? '';
    expect(cookie).not.toBe('');
    // A fresh server-side look: the cookie's token is checked as the header's would be.
    expect((await fetch(`${t.http}/mdp/clients`, { headers: { cookie } })).status).toBe(200);
    const expired = await issuer.sign({ claims: { sub: 'browser-user', iat: now - 7200, exp: now - 3600 } });
    const refused = await fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { authorization: `Bearer ${expired}` } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('set-cookie')).toBeNull();
  });

  it('lets a token with the admin scope read the probes beside --metrics-token, and no other', async () => {
    const probed = await startServer({ metricsToken: 'metrics-secret', accessTokens: { issuer: issuer.url } });
    issuer.resource = probed.http;
    const metrics = async (credential: string) => (await fetch(`${probed.http}/metrics`, { headers: { authorization: `Bearer ${credential}` } })).status;
    expect(await metrics('metrics-secret')).toBe(200);
    expect(await metrics(await issuer.sign({ claims: { scope: 'mdp:admin' } }))).toBe(200);
    expect(await metrics(await issuer.sign({ claims: { scope: 'mdp:read mdp:call' } }))).toBe(401);
    expect((await fetch(`${probed.http}/metrics`)).status).toBe(401);
  });

  it("stamps an MCP session's calls with the credential of each request, not only the one that opened it", async () => {
    const publisher = await issuer.sign({ claims: { sub: 'publisher', scope: 'mdp:register' } });
    const app = await registeredClient(t, descriptor('app', [endpoint('/status')]), { authorization: `Bearer ${publisher}` });
    app.handler = () => ({ ok: true });
    const first = await issuer.sign({ claims: { sub: 'alice', jti: 'first', scope: 'mdp:read mdp:call' } });
    const refreshed = await issuer.sign({ claims: { sub: 'alice', jti: 'refreshed', scope: 'mdp:read mdp:call mdp:admin' } });
    let sessionId = '';
    const rpc = async (token: string, message: Record<string, unknown>): Promise<Response> => {
      const response = await fetch(`${t.http}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
          'mcp-protocol-version': '2025-11-25',
          ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', ...message }),
      });
      expect(response.status, JSON.stringify(message)).toBeLessThan(300);
      return response;
    };
    const opened = await rpc(first, {
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'agent', version: '1' } },
    });
    sessionId = opened.headers.get('mcp-session-id') ?? '';
    expect(sessionId).not.toBe('');
    await rpc(first, { method: 'notifications/initialized' });
    const call = { method: 'tools/call', params: { name: 'callPath', arguments: { clientId: 'app', method: 'GET', path: '/status' } } };
    const result = async (response: Response) => ((await response.json()) as { result: { isError?: boolean } }).result;
    expect((await result(await rpc(first, { id: 2, ...call }))).isError).not.toBe(true);
    expect((await result(await rpc(refreshed, { id: 3, ...call }))).isError).not.toBe(true);
    const scopesSeen = app.calls.map((made) => (made.auth?.metadata as { scopes?: unknown } | undefined)?.scopes);
    expect(scopesSeen).toEqual([
      ['mdp:read', 'mdp:call'],
      ['mdp:read', 'mdp:call', 'mdp:admin'],
    ]);
  });
});
