/**
 * Under an auth policy what the server verified (the token, the `mdp_auth` cookie) is never
 * forwarded to the client a call reaches: a client, perhaps another principal's, could act as the
 * caller with it. What the caller sent for clients (other cookies, `x-mdp-auth-*`) still goes on.
 * Without a policy `callClient.auth` is the request's transport auth as it came (SPEC §7).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AUTH_COOKIE_NAME } from '@mdp/core';
import { descriptor, skill, stopAll } from '@mdp/test-kit';
import { registeredClient, startServer } from './harness.js';

afterEach(stopAll);

const endpoint = (method: 'GET' | 'POST', path: string) => ({ type: 'endpoint' as const, method, path });
const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
/** The `mdp_auth=<value>` pair of a Set-Cookie answer. */
const cookiePair = (res: Response): string => (res.headers.get('set-cookie') ?? '').split(';')[0] as string;

describe("under an auth policy, one principal's credential", () => {
  it('is not handed to a client of another principal by a host API call', async () => {
    const t = await startServer({ authTokens: ['agent-token', 'client-token'] });
    const client = await registeredClient(t, descriptor('app', [endpoint('POST', '/x')]), { authorization: 'Bearer client-token' });
    const res = await post(`${t.http}/mdp/call`, { clientId: 'app', method: 'POST', path: '/x' }, { authorization: 'Bearer agent-token' });
    expect(res.status).toBe(200);
    expect(client.calls).toHaveLength(1);
    expect(JSON.stringify(client.calls[0])).not.toContain('agent-token');
    expect(client.calls[0]?.auth).toBeUndefined();
    // call-many too; an auth the caller puts in the body is for the client, and goes as given.
    await post(`${t.http}/mdp/call-many`, { clientIds: ['app'], method: 'POST', path: '/x' }, { authorization: 'Bearer agent-token' });
    await post(`${t.http}/mdp/call`, { clientId: 'app', method: 'POST', path: '/x', auth: { token: 'for-app' } }, { authorization: 'Bearer agent-token' });
    expect(client.calls).toHaveLength(3);
    expect(JSON.stringify(client.calls[1])).not.toContain('agent-token');
    expect(client.calls[2]?.auth).toEqual({ token: 'for-app' });
  });

  it('is not handed, nor is the sealed cookie, to the client whose skill a browser reads', async () => {
    const t = await startServer({ authTokens: ['reader-token', 'client-token'] });
    const client = await registeredClient(t, descriptor('app', [skill('/docs/skill.md')]), { authorization: 'Bearer client-token' });
    const minted = await fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { authorization: 'Bearer reader-token' } });
    expect(minted.status).toBe(204);
    const cookie = cookiePair(minted);
    const read = await fetch(`${t.http}/skills/app/docs`, { headers: { cookie: `theme=dark; ${cookie}`, 'x-mdp-auth-app': 'app-key' } });
    expect(read.status).toBe(200);
    expect(client.calls).toHaveLength(1);
    const seen = JSON.stringify(client.calls[0]);
    expect(seen).not.toContain('reader-token');
    expect(seen).not.toContain(cookie.slice(AUTH_COOKIE_NAME.length + 1));
    // What the reader sent for the app goes on.
    expect(client.calls[0]?.auth).toEqual({ headers: { cookie: 'theme=dark', 'x-mdp-auth-app': 'app-key' } });
    expect(client.calls[0]?.headers).toMatchObject({ cookie: 'theme=dark', 'x-mdp-auth-app': 'app-key' });
  });

  it('is not handed over in the request headers of a skill read either', async () => {
    const t = await startServer({ authTokens: ['reader-token'] });
    const client = await registeredClient(t, descriptor('app', [skill('/docs/skill.md')]), { authorization: 'Bearer reader-token' });
    expect((await fetch(`${t.http}/skills/app/docs`, { headers: { authorization: 'Bearer reader-token', accept: 'text/markdown' } })).status).toBe(200);
    expect(client.calls[0]?.headers).not.toHaveProperty('authorization');
    expect(client.calls[0]?.headers).toMatchObject({ accept: 'text/markdown' });
    expect(client.calls[0]?.auth).toBeUndefined();
  });
});

describe('without a policy', () => {
  it('the client gets the transport auth of the request as it came (SPEC §7)', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('app', [skill('/docs/skill.md'), endpoint('POST', '/x')]));
    await fetch(`${t.http}/skills/app/docs`, { headers: { authorization: 'Bearer reader-token' } });
    expect(client.calls[0]?.auth).toEqual({ scheme: 'Bearer', token: 'reader-token', headers: { authorization: 'Bearer reader-token' } });
    expect(client.calls[0]?.headers).toMatchObject({ authorization: 'Bearer reader-token' });
    await post(`${t.http}/mdp/call`, { clientId: 'app', method: 'POST', path: '/x' }, { authorization: 'Bearer agent-token' });
    expect(client.calls[1]?.auth).toMatchObject({ scheme: 'Bearer', token: 'agent-token' });
  });
});
