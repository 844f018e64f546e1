/**
 * A sealed `mdp_auth` cookie holds its expiry: under an auth policy `POST /mdp/auth` mints only from
 * a credential shown again (body `auth`, `Authorization`, `x-mdp-auth-*`), never from the cookie
 * itself, so whoever copied a cookie once cannot keep renewing it. Without a policy the cookie still
 * counts as the request's transport auth (SPEC §7, as the servers in use today).
 */
import { describe, expect, it } from 'vitest';
import { createAuthGate, createTokenPolicy } from '@mdp/core';
import { createAuthRoutes } from '../src/auth-routes.js';

/** The `mdp_auth=<value>` pair of a Set-Cookie answer. */
const cookiePair = (res: Response): string => (res.headers.get('set-cookie') ?? '').split(';')[0] as string;

function guarded() {
  const clock = { now: 1_000_000 };
  const gate = createAuthGate(createTokenPolicy(['t0ken']), { now: () => clock.now });
  return { clock, gate, app: createAuthRoutes(gate) };
}

describe('POST /mdp/auth under an auth policy', () => {
  it('does not renew a sealed cookie from the cookie alone, and says what to send', async () => {
    const { clock, gate, app } = guarded();
    const first = await app.request('/', { method: 'POST', headers: { authorization: 'Bearer t0ken' } });
    expect(first.status).toBe(204);
    clock.now += 50 * 60_000;
    const renewed = await app.request('/', { method: 'POST', headers: { cookie: `other=1; ${cookiePair(first)}` } });
    expect(renewed.status).toBe(400);
    expect(renewed.headers.get('set-cookie')).toBeNull();
    const { error } = (await renewed.json()) as { error: string };
    expect(error).toContain('Authorization header');
    expect(error).toContain('cannot renew itself');
    // The first cookie still ends when it was sealed to: 60 minutes after the token was shown.
    expect(gate.extract({ cookie: cookiePair(first) })?.token).toBe('t0ken');
    clock.now += 10 * 60_000;
    expect(gate.extract({ cookie: cookiePair(first) })?.token).toBeUndefined();
  });

  it('mints from a credential shown again, whatever cookie comes with it', async () => {
    const { clock, gate, app } = guarded();
    const first = await app.request('/', { method: 'POST', headers: { authorization: 'Bearer t0ken' } });
    clock.now += 50 * 60_000;
    const again = await app.request('/', { method: 'POST', headers: { authorization: 'Bearer t0ken', cookie: cookiePair(first) } });
    expect(again.status).toBe(204);
    clock.now += 20 * 60_000;
    expect(gate.extract({ cookie: cookiePair(again) })?.token).toBe('t0ken');
    const fromBody = await app.request('/', { method: 'POST', headers: { cookie: cookiePair(again) }, body: JSON.stringify({ auth: { token: 't0ken' } }) });
    expect(fromBody.status).toBe(204);
  });

  it('refuses a shown credential the policy does not accept, cookie or not', async () => {
    const { app } = guarded();
    const first = await app.request('/', { method: 'POST', headers: { authorization: 'Bearer t0ken' } });
    const wrong = await app.request('/', { method: 'POST', headers: { authorization: 'Bearer nope', cookie: cookiePair(first) } });
    expect(wrong.status).toBe(401);
  });
});

describe('POST /mdp/auth without a policy', () => {
  it('still takes the cookie as the request transport auth (wire compatibility)', async () => {
    const app = createAuthRoutes(createAuthGate());
    const first = await app.request('/', { method: 'POST', headers: { authorization: 'Token xyz' } });
    const again = await app.request('/', { method: 'POST', headers: { cookie: cookiePair(first) } });
    expect(again.status).toBe(204);
    expect(cookiePair(again)).toBe(cookiePair(first));
  });
});
