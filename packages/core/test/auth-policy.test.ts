import { describe, expect, it } from 'vitest';
import {
  AUTH_COOKIE_MAX_AGE_MS,
  cookieKeyOf,
  createAuthGate,
  createTokenPolicy,
  credentialPrincipal,
  encodeAuthCookie,
  fixedKeyring,
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
  const key = cookieKeyOf(secret);
  const ring = fixedKeyring([key]);

  it('round-trip with the right key only, until they expire', () => {
    const auth = { scheme: 'Bearer', token: 't', metadata: { a: 1 } };
    const value = sealAuthCookie(auth, key, now + 1000);
    expect(openAuthCookie(value, ring, now)).toEqual(auth);
    expect(openAuthCookie(value, ring, now + 999)).toEqual(auth);
    expect(openAuthCookie(value, ring, now + 1000)).toBeUndefined();
    expect(openAuthCookie(value, fixedKeyring([cookieKeyOf(Buffer.alloc(32, 8))]), now)).toBeUndefined();
  });

  it('name their key: the same material gives the same key and id, other material another', () => {
    expect(cookieKeyOf(Buffer.alloc(32, 7))).toEqual(key);
    expect(key.id).toMatch(/^[A-Za-z0-9_-]{12}$/);
    expect(cookieKeyOf(Buffer.alloc(32, 8)).id).not.toBe(key.id);
    expect(sealAuthCookie({ token: 't' }, key, now).startsWith(`${key.id}.`)).toBe(true);
    expect(() => cookieKeyOf(Buffer.alloc(8))).toThrow(RangeError);
  });

  it('do not show the token to whoever reads the cookie (another service on the same host gets it too)', () => {
    const value = sealAuthCookie({ scheme: 'Bearer', token: 'SUPER-SECRET-TOKEN' }, key, now + 1000);
    expect(value).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(Buffer.from(value.split('.')[1] ?? '', 'base64url').toString('latin1')).not.toContain('SUPER-SECRET');
    // Sealing twice gives two different values (a fresh IV each time).
    expect(sealAuthCookie({ token: 'SUPER-SECRET-TOKEN' }, key, now)).not.toBe(sealAuthCookie({ token: 'SUPER-SECRET-TOKEN' }, key, now));
  });

  it('refuse unsealed, tampered, re-labelled and garbage values', () => {
    const value = sealAuthCookie({ token: 't' }, key, now + 1000);
    const [id, body] = value.split('.') as [string, string];
    const bytes = Buffer.from(body, 'base64url');
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
    expect(openAuthCookie(`${id}.${bytes.toString('base64url')}`, ring, now)).toBeUndefined();
    // The id is authenticated too: the same bytes under another key's name do not open.
    const other = cookieKeyOf(Buffer.alloc(32, 9));
    expect(openAuthCookie(`${other.id}.${body}`, fixedKeyring([other, key]), now)).toBeUndefined();
    expect(openAuthCookie(body, ring, now)).toBeUndefined();
    expect(openAuthCookie(encodeAuthCookie({ token: 't' }), ring, now)).toBeUndefined();
    expect(openAuthCookie(`${id}.${encodeAuthCookie({ token: 't' })}`, ring, now)).toBeUndefined();
    for (const garbage of ['', '.', `${id}.`, `${id}`, 'a'.repeat(200), `${'a'.repeat(12)}.${'a'.repeat(200)}`]) {
      expect(openAuthCookie(garbage, ring, now), garbage).toBeUndefined();
    }
  });

  it('open under a retired key for one cookie lifetime after it was retired, and no longer', () => {
    const retiredAt = now + 10_000;
    const old = cookieKeyOf(secret, retiredAt);
    const fresh = cookieKeyOf(Buffer.alloc(32, 3));
    const rotated = fixedKeyring([fresh, old]);
    // A cookie sealed with a long life, so that only the key's retirement can end it.
    const value = sealAuthCookie({ token: 't' }, key, now + 10 * AUTH_COOKIE_MAX_AGE_MS);
    expect(openAuthCookie(value, rotated, retiredAt)).toEqual({ token: 't' });
    expect(openAuthCookie(value, rotated, retiredAt + AUTH_COOKIE_MAX_AGE_MS - 1)).toEqual({ token: 't' });
    expect(openAuthCookie(value, rotated, retiredAt + AUTH_COOKIE_MAX_AGE_MS)).toBeUndefined();
    // The lifetime is the caller's.
    expect(openAuthCookie(value, rotated, retiredAt + 1000, 1000)).toBeUndefined();
    expect(openAuthCookie(sealAuthCookie({ token: 'n' }, fresh, now + 1000), rotated, now)).toEqual({ token: 'n' });
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

describe('createAuthGate with a keyring', () => {
  it("seals with the ring's sealing key and opens with any key it holds, retired ones for a lifetime", () => {
    let clock = 1_800_000_000_000;
    const policy = createTokenPolicy(['good']);
    const k1 = cookieKeyOf(Buffer.alloc(32, 1));
    let ring = fixedKeyring([k1]);
    const gate = createAuthGate(policy, { now: () => clock, cookieKeys: { sealing: () => ring.sealing(), find: (id) => ring.find(id) } });
    const before = `mdp_auth=${gate.encodeCookie({ token: 'good' })}`;
    expect(before.startsWith(`mdp_auth=${k1.id}.`)).toBe(true);
    // Rotated half an hour later: new cookies use k2, the old one still opens.
    clock += AUTH_COOKIE_MAX_AGE_MS / 2;
    const k2 = cookieKeyOf(Buffer.alloc(32, 2));
    ring = fixedKeyring([k2, cookieKeyOf(Buffer.alloc(32, 1), clock)]);
    const after = `mdp_auth=${gate.encodeCookie({ token: 'good' })}`;
    expect(after.startsWith(`mdp_auth=${k2.id}.`)).toBe(true);
    expect(gate.allows(gate.extract({ cookie: before }))).toBe(true);
    expect(gate.allows(gate.extract({ cookie: after }))).toBe(true);
    // The old cookie's own hour ends first; the new one lives on.
    clock += AUTH_COOKIE_MAX_AGE_MS / 2;
    expect(gate.extract({ cookie: before })?.token).toBeUndefined();
    expect(gate.allows(gate.extract({ cookie: after }))).toBe(true);
    // Another gate with another policy's random key opens none of them.
    expect(createAuthGate(createTokenPolicy(['good']), { now: () => clock }).extract({ cookie: after })?.token).toBeUndefined();
  });
});

describe('createAuthGate honoursCookie', () => {
  const foreign = { host: '127.0.0.1:1', origin: 'https://evil.example' };
  const honoursCookie = (headers: { origin?: unknown }): boolean => headers.origin !== foreign.origin;

  it('under a policy, reads a request whose cookie it does not honour as if it had none', () => {
    const gate = createAuthGate(createTokenPolicy(['good']), { honoursCookie });
    const cookie = `other=1; mdp_auth=${gate.encodeCookie({ token: 'good' })}`;
    expect(gate.allows(gate.extract({ cookie }))).toBe(true);
    expect(gate.allows(gate.extract({ cookie, origin: 'http://localhost:3000' }))).toBe(true);
    const refused = gate.extract({ ...foreign, cookie });
    expect(gate.allows(refused)).toBe(false);
    expect(refused).toEqual({ headers: { cookie: 'other=1' } });
    // What the caller shows itself still counts.
    expect(gate.allows(gate.extract({ ...foreign, cookie, authorization: 'Bearer good' }))).toBe(true);
    expect(gate.honoursCookie(foreign)).toBe(false);
    expect(gate.honoursCookie({})).toBe(true);
  });

  it('without a policy, neither reads nor forwards a cookie it does not honour', () => {
    const gate = createAuthGate(undefined, { honoursCookie });
    const cookie = `mdp_auth=${gate.encodeCookie({ token: 'user-secret' })}; theirs=2`;
    expect(gate.extract({ cookie })).toMatchObject({ token: 'user-secret' });
    const headers = { ...foreign, cookie };
    const auth = gate.extract(headers);
    expect(auth).toEqual({ headers: { cookie: 'theirs=2' } });
    expect(gate.forwardableHeaders(headers)).toEqual({ ...foreign, cookie: 'theirs=2' });
    expect(gate.forwardableAuth(headers, auth)).toEqual({ headers: { cookie: 'theirs=2' } });
    // Only the cookie: the headers of a request it honours go on as they came.
    expect(gate.forwardableHeaders({ cookie })).toEqual({ cookie });
  });

  it('honours every cookie when not told otherwise', () => {
    expect(createAuthGate().honoursCookie(foreign)).toBe(true);
    expect(createAuthGate(createTokenPolicy(['good'])).honoursCookie(foreign)).toBe(true);
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
