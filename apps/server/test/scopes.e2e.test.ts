/**
 * Scopes per action (SPEC §17, issue item 2), with tokens of a real `oidc-provider`: each way in
 * needs the scope of what it does, a missing one is 403 naming it in `WWW-Authenticate`, and a
 * registration without the register scope is refused on both transports (4403, 403). Calls carry
 * who called, never the token.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TestClient, descriptor, endpoint, loopClient, loopFetch, skill, stopAll } from '@mdp/test-kit';
import { registeredClient, registeredLoopClient, startServer, type TestServer } from './harness.js';
import { startIssuer, type Issuer } from './oidc.js';
import type { MdpServerOptions } from '../src/settings/options.js';

describe('scopes per action', () => {
  let issuer: Issuer;
  let t: TestServer;
  /** A token of the provider with these scopes (client credentials: sub is the client's id). */
  let token: (scopes: readonly string[]) => Promise<string>;
  /** A token signed for another person, with these scopes. */
  let tokenOf: (sub: string, scopes: readonly string[]) => Promise<string>;

  const start = async (options: MdpServerOptions = {}): Promise<void> => {
    t = await startServer({ ...options, accessTokens: { ...options.accessTokens, issuer: issuer.url } });
    issuer.resource = t.http;
  };

  beforeEach(async () => {
    issuer = await startIssuer();
    token = (scopes) => issuer.clientCredentialsToken(scopes);
    tokenOf = (sub, scopes) => issuer.sign({ claims: { sub, scope: scopes.join(' ') } });
  });

  afterEach(async () => {
    await stopAll();
    await issuer.close();
  });

  const bearer = (value: string) => ({ authorization: `Bearer ${value}` });
  const call = (body: unknown, value: string) =>
    fetch(`${t.http}/mdp/call`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(value) }, body: JSON.stringify(body) });
  const metadataUrl = () => `${t.http}/.well-known/oauth-protected-resource`;

  it('lets a reader list but not call: 403 with insufficient_scope naming the call scope', async () => {
    await start();
    const admin = await token(['mdp:register', 'mdp:read', 'mdp:call']);
    const app = await registeredClient(t, descriptor('app', [endpoint('/do', 'POST'), skill('/docs/skill.md')]), bearer(admin));
    app.handler = () => 'done';
    const reader = await token(['mdp:read']);
    expect((await fetch(`${t.http}/mdp/clients`, { headers: bearer(reader) })).status).toBe(200);
    expect((await fetch(`${t.http}/skills/app/docs`, { headers: bearer(reader) })).status).toBe(200);
    const refused = await call({ clientId: 'app', method: 'POST', path: '/do' }, reader);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="mdp:call", resource_metadata="${metadataUrl()}"`);
    expect(await refused.json()).toEqual({ error: { code: 'forbidden', message: 'Calling needs scope mdp:call', details: { scope: 'mdp:call' } } });
    // A caller without the read scope may neither list nor read skills.
    const caller = await token(['mdp:call']);
    const list = await fetch(`${t.http}/mdp/clients`, { headers: bearer(caller) });
    expect(list.status).toBe(403);
    expect(list.headers.get('www-authenticate')).toContain('scope="mdp:read"');
    const read = await fetch(`${t.http}/skills/app/docs`, { headers: bearer(caller) });
    expect(read.status).toBe(403);
    expect(await read.json()).toEqual({ error: 'Reading skills needs scope mdp:read' });
    expect(read.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="mdp:read"');
    expect((await call({ clientId: 'app', method: 'POST', path: '/do' }, caller)).status).toBe(200);
    // Only the calls that were allowed reached the client: the skill read and the one call.
    expect(app.calls.map((c) => c.path)).toEqual(['/docs/skill.md', '/do']);
  });

  it('refuses a registration without the register scope on the websocket (4403) and the HTTP loop (403)', async () => {
    await start();
    const reader = await token(['mdp:read', 'mdp:call']);
    const ws = await TestClient.connect(t.ws, { headers: bearer(reader) });
    ws.send({ type: 'registerClient', client: descriptor('app') });
    expect(await ws.closed).toEqual({ code: 4403, reason: 'Registering "app" needs scope mdp:register' });
    const loop = loopClient(loopFetch(`${t.http}/mdp/http-loop`));
    const sessionId = await loop.connect({ headers: bearer(reader) });
    const sent = await loop.send(sessionId, { type: 'registerClient', client: descriptor('loop') }, bearer(reader));
    expect(sent.status).toBe(403);
    expect(await sent.json()).toEqual({ error: 'Registering "loop" needs scope mdp:register' });
    expect(t.server.router.listClients()).toEqual([]);
    // With the scope, both register.
    const publisher = await token(['mdp:register']);
    await registeredClient(t, descriptor('app'), bearer(publisher));
    await registeredLoopClient(t, descriptor('loop'), bearer(publisher));
    expect(
      t.server.router
        .listClients()
        .map((c) => c.id)
        .sort(),
    ).toEqual(['app', 'loop']);
  });

  it('limits a register scope with a prefix to the ids that start with it', async () => {
    await start();
    const team = await tokenOf('alice', ['mdp:register:team-']);
    await registeredClient(t, descriptor('team-editor'), bearer(team));
    const other = await TestClient.connect(t.ws, { headers: bearer(team) });
    other.send({ type: 'registerClient', client: descriptor('editor') });
    expect((await other.closed).code).toBe(4403);
  });

  it('maps actions to the scope names a provider uses', async () => {
    await start({ accessTokens: { issuer: 'set by start', scopeNames: { call: 'tools.invoke' } } });
    const app = await registeredClient(t, descriptor('app', [endpoint('/do', 'POST')]), bearer(await token(['mdp:register'])));
    app.handler = () => 'done';
    expect((await call({ clientId: 'app', method: 'POST', path: '/do' }, await tokenOf('alice', ['tools.invoke']))).status).toBe(200);
    const refused = await call({ clientId: 'app', method: 'POST', path: '/do' }, await tokenOf('alice', ['mdp:call']));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('scope="tools.invoke"');
  });

  it('hands the client who called and with which scopes, never the token', async () => {
    await start();
    const app = await registeredClient(t, descriptor('app', [endpoint('/do', 'POST')]), bearer(await token(['mdp:register'])));
    const alice = await tokenOf('alice', ['mdp:call', 'mdp:read']);
    expect((await call({ clientId: 'app', method: 'POST', path: '/do' }, alice)).status).toBe(200);
    // A body's own auth goes to the client too, but cannot claim to be someone else.
    expect((await call({ clientId: 'app', method: 'POST', path: '/do', auth: { token: 'for-app', metadata: { principal: 'root' } } }, alice)).status).toBe(200);
    const [plain, named] = app.calls;
    expect(plain?.auth?.token).toBeUndefined();
    expect(JSON.stringify(plain)).not.toContain(alice);
    expect(plain?.auth?.metadata).toEqual({
      principal: expect.stringMatching(/^oidc:/),
      scopes: ['mdp:call', 'mdp:read'],
      issuer: issuer.url,
      subject: 'alice',
    });
    expect(named?.auth?.token).toBe('for-app');
    expect(named?.auth?.metadata?.principal).toBe(plain?.auth?.metadata?.principal);
  });

  it('passes the token on to the client only when told to', async () => {
    await start({ accessTokens: { issuer: 'set by start', forwardToken: true } });
    const app = await registeredClient(t, descriptor('app', [endpoint('/do', 'POST')]), bearer(await token(['mdp:register'])));
    const alice = await tokenOf('alice', ['mdp:call']);
    expect((await call({ clientId: 'app', method: 'POST', path: '/do' }, alice)).status).toBe(200);
    expect(app.calls[0]?.auth).toMatchObject({ token: alice, metadata: { subject: 'alice', scopes: ['mdp:call'] } });
  });

  it('holds the inspector to the admin scope', async () => {
    await start();
    const events = (value: string) => fetch(`${t.http}/mdp/inspector/events`, { headers: bearer(value) });
    const reader = await events(await token(['mdp:read']));
    expect(reader.status).toBe(403);
    expect(reader.headers.get('www-authenticate')).toContain('scope="mdp:admin"');
    const admin = await events(await token(['mdp:admin']));
    expect(admin.status).toBe(200);
    await admin.body?.cancel();
  });
});
