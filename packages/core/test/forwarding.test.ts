/**
 * What of a caller's request goes on to the client it calls: everything without a policy (SPEC §7),
 * never the credential the server verified under one.
 */
import { describe, expect, it } from 'vitest';
import { createAuthGate, createTokenPolicy } from '../src/index.js';
import { withoutAuthCookie, withoutCredentialHeaders } from '../src/forwarding.js';

describe('withoutAuthCookie', () => {
  it('drops the mdp_auth cookie and keeps every other', () => {
    expect(withoutAuthCookie('mdp_auth=abc')).toBeUndefined();
    expect(withoutAuthCookie('a=1; mdp_auth=abc; b=2')).toBe('a=1; b=2');
    expect(withoutAuthCookie('mdp_auth=abc;a=1')).toBe('a=1');
    expect(withoutAuthCookie(' mdp_auth = abc ; session=x')).toBe('session=x');
    // Two Cookie headers joined with ", " (skill reads join repeated headers so).
    expect(withoutAuthCookie('a=1, mdp_auth=abc')).toBe('a=1');
    expect(withoutAuthCookie('mdp_auth=x, mdp_auth=y; c=3')).toBe('c=3');
  });

  it('leaves a header without it as it is, look-alike names included', () => {
    expect(withoutAuthCookie('a=1;b=2')).toBe('a=1;b=2');
    expect(withoutAuthCookie('my_mdp_auth=1; mdp_auth_x=2')).toBe('my_mdp_auth=1; mdp_auth_x=2');
    expect(withoutAuthCookie('list=a,b; mdp_auth=z')).toBe('list=a,b');
  });
});

describe('withoutCredentialHeaders', () => {
  it('drops authorization and the mdp_auth cookie, keeps the rest (x-mdp-auth-* included)', () => {
    const headers = { authorization: 'Bearer T', cookie: 'mdp_auth=S; theme=dark', 'x-mdp-auth-app': 'k', accept: 'text/markdown' };
    expect(withoutCredentialHeaders(headers)).toEqual({ cookie: 'theme=dark', 'x-mdp-auth-app': 'k', accept: 'text/markdown' });
    expect(withoutCredentialHeaders({ cookie: 'mdp_auth=S' })).toEqual({});
    expect(headers.authorization).toBe('Bearer T'); // not changed in place
  });
});

describe('AuthGate forwarding', () => {
  it('without a policy forwards the transport auth and headers as they came', () => {
    const gate = createAuthGate();
    const headers = { authorization: 'Bearer T', cookie: 'mdp_auth=S; a=1' };
    const auth = gate.extract(headers);
    expect(gate.forwardableAuth(headers, auth)).toBe(auth);
    expect(gate.forwardableHeaders(headers)).toBe(headers);
  });

  it('under a policy forwards nothing of the token, the Authorization header or the sealed cookie', () => {
    const gate = createAuthGate(createTokenPolicy(['T0KEN']));
    const sealed = gate.encodeCookie({ scheme: 'Bearer', token: 'T0KEN', headers: { 'x-extra': 'from-cookie' }, metadata: { m: 1 } });
    const headers = { authorization: 'Bearer T0KEN', cookie: `theme=dark; mdp_auth=${sealed}`, 'x-mdp-auth-app': 'for-the-client' };
    const auth = gate.extract(headers);
    expect(gate.allows(auth)).toBe(true);
    const forwarded = gate.forwardableAuth(headers, auth);
    expect(forwarded).toEqual({ headers: { cookie: 'theme=dark', 'x-mdp-auth-app': 'for-the-client' } });
    const text = JSON.stringify([forwarded, gate.forwardableHeaders(headers)]);
    expect(text).not.toContain('T0KEN');
    expect(text).not.toContain(sealed);
    expect(text).not.toContain('from-cookie');
  });

  it('under a policy forwards no auth at all when the request held only the credential', () => {
    const gate = createAuthGate(createTokenPolicy(['T0KEN']));
    const cookieOnly = { cookie: `mdp_auth=${gate.encodeCookie({ token: 'T0KEN' })}` };
    expect(gate.forwardableAuth(cookieOnly, gate.extract(cookieOnly))).toBeUndefined();
    const bearerOnly = { authorization: 'Bearer T0KEN' };
    expect(gate.forwardableAuth(bearerOnly, gate.extract(bearerOnly))).toBeUndefined();
    // Node's header map may hold arrays.
    expect(gate.forwardableAuth({ cookie: ['a=1', 'mdp_auth=x'] }, undefined)).toEqual({ headers: { cookie: 'a=1' } });
  });
});
