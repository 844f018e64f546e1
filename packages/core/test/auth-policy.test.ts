import { describe, expect, it } from 'vitest';
import {
  AUTH_COOKIE_MAX_AGE_MS,
  createAuthGate,
  createTokenPolicy,
  credentialPrincipal,
  encodeAuthCookie,
  openAuthCookie,
  sealAuthCookie,
} from '../src/index.js';

const secret = Buffer.alloc(32, 7);

describe('createTokenPolicy', () => {
  it('accepts only the configured tokens', () => {
    const policy = createTokenPolicy(['alpha', 'beta']);
    expect(policy.verify({ token: 'alpha' })).toBe(true);
    expect(policy.verify({ scheme: 'Bearer', token: 'beta' })).toBe(true);
    expect(policy.verify({ token: 'gamma' })).toBe(false);
    expect(policy.verify({ token: '' })).toBe(false);
    expect(policy.verify({})).toBe(false);
    expect(policy.verify(undefined)).toBe(false);
  });

  it('needs at least one non-empty token', () => {
    expect(() => createTokenPolicy([])).toThrow(RangeError);
    expect(() => createTokenPolicy([''])).toThrow(RangeError);
  });
});

describe('sealed cookies', () => {
  const now = 1_800_000_000_000;

  it('round-trip with the right secret only, until they expire', () => {
    const auth = { scheme: 'Bearer', token: 't', metadata: { a: 1 } };
    const value = sealAuthCookie(auth, secret, now + 1000);
    expect(openAuthCookie(value, secret, now)).toEqual(auth);
    expect(openAuthCookie(value, secret, now + 999)).toEqual(auth);
    expect(openAuthCookie(value, secret, now + 1000)).toBeUndefined();
    expect(openAuthCookie(value, Buffer.alloc(32, 8), now)).toBeUndefined();
  });

  it('do not show the token to whoever reads the cookie (another service on the same host gets it too)', () => {
    const value = sealAuthCookie({ scheme: 'Bearer', token: 'SUPER-SECRET-TOKEN' }, secret, now + 1000);
    expect(value).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(value, 'base64url').toString('latin1')).not.toContain('SUPER-SECRET');
    // Sealing twice gives two different values (a fresh IV each time).
    expect(sealAuthCookie({ token: 'SUPER-SECRET-TOKEN' }, secret, now)).not.toBe(sealAuthCookie({ token: 'SUPER-SECRET-TOKEN' }, secret, now));
  });

  it('refuse unsealed, tampered and garbage values', () => {
    const value = sealAuthCookie({ token: 't' }, secret, now + 1000);
    const bytes = Buffer.from(value, 'base64url');
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
    expect(openAuthCookie(bytes.toString('base64url'), secret, now)).toBeUndefined();
    expect(openAuthCookie(encodeAuthCookie({ token: 't' }), secret, now)).toBeUndefined();
    expect(openAuthCookie('', secret, now)).toBeUndefined();
    expect(openAuthCookie('.', secret, now)).toBeUndefined();
    expect(openAuthCookie('a'.repeat(200), secret, now)).toBeUndefined();
  });
});

describe('createAuthGate', () => {
  it('without a policy reads unsigned cookies and allows everything', () => {
    const gate = createAuthGate();
    const cookie = `mdp_auth=${gate.encodeCookie({ token: 'x' })}`;
    expect(gate.extract({ cookie })).toMatchObject({ token: 'x' });
    expect(gate.allows(undefined)).toBe(true);
  });

  it('with a policy reads only its own sealed, unexpired cookies and allows only verified credentials', () => {
    let clock = 1_800_000_000_000;
    const gate = createAuthGate(createTokenPolicy(['good'], { cookieSecret: secret }), { now: () => clock });
    const signed = `mdp_auth=${gate.encodeCookie({ token: 'good' })}`;
    expect(gate.extract({ cookie: signed })).toMatchObject({ token: 'good' });
    expect(gate.allows(gate.extract({ cookie: signed }))).toBe(true);
    const unsigned = `mdp_auth=${encodeAuthCookie({ token: 'good' })}`;
    expect(gate.extract({ cookie: unsigned })?.token).toBeUndefined();
    expect(gate.allows(gate.extract({ cookie: unsigned }))).toBe(false);
    expect(gate.allows(gate.extract({ authorization: 'Bearer good' }))).toBe(true);
    clock += AUTH_COOKIE_MAX_AGE_MS;
    expect(gate.extract({ cookie: signed })?.token).toBeUndefined();
  });
});

describe('principals', () => {
  it('name a token by a hash, never by the token itself', () => {
    const gate = createAuthGate(createTokenPolicy(['alpha', 'beta']));
    const alpha = gate.principalOf({ scheme: 'Bearer', token: 'alpha' });
    expect(alpha).toMatch(/^token:[0-9a-f]{32}$/);
    expect(alpha).not.toContain('alpha');
    // The same token however it arrives (header, cookie, extra headers) is the same principal.
    expect(gate.principalOf({ token: 'alpha', headers: { cookie: 'x=1', 'x-mdp-auth-tab': '7' } })).toBe(alpha);
    expect(gate.principalOf({ token: 'beta' })).not.toBe(alpha);
  });

  it('name a credential without a token by its headers (not the raw cookie), scheme and metadata', () => {
    const a = credentialPrincipal({ headers: { 'x-mdp-auth-user': 'ann', cookie: 'one=1' } });
    expect(credentialPrincipal({ headers: { cookie: 'two=2', 'x-mdp-auth-user': 'ann' } })).toBe(a);
    expect(credentialPrincipal({ headers: { 'x-mdp-auth-user': 'bob' } })).not.toBe(a);
    expect(credentialPrincipal({ headers: { 'x-mdp-auth-user': 'ann' }, metadata: { role: 'x' } })).not.toBe(a);
    expect(a).toMatch(/^credential:[0-9a-f]{32}$/);
  });

  it("use a custom policy's own principal when it gives one", () => {
    const gate = createAuthGate({
      cookieSecret: secret,
      verify: (auth) => auth?.token?.startsWith('user-') === true,
      principal: (auth) => `user:${auth.token?.split('-')[1]}`,
    });
    expect(gate.principalOf({ token: 'user-ann-session1' })).toBe('user:ann');
    expect(gate.principalOf({ token: 'user-ann-session2' })).toBe('user:ann');
  });

  it('are undefined without a policy: every caller is the same anonymous principal', () => {
    expect(createAuthGate().principalOf({ token: 'anything' })).toBeUndefined();
  });
});
