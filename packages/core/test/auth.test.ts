/** Transport auth extraction and the mdp_auth cookie (SPEC §7). */
import { describe, expect, it } from 'vitest';
import { AUTH_COOKIE_NAME, AUTH_HEADER_PREFIX, decodeAuthCookie, encodeAuthCookie, extractTransportAuth, headersToMap } from '../src/index.js';
import { readCookie } from '../src/auth.js';

describe('extractTransportAuth', () => {
  it('splits "Bearer x" into scheme and token and copies the raw header', () => {
    expect(extractTransportAuth({ authorization: 'Bearer x' })).toEqual({
      scheme: 'Bearer',
      token: 'x',
      headers: { authorization: 'Bearer x' },
    });
  });

  it('keeps everything after the scheme as the token', () => {
    expect(extractTransportAuth({ authorization: '  Custom   a b  ' })).toMatchObject({ scheme: 'Custom', token: 'a b' });
  });

  it('takes a bare value as the token', () => {
    expect(extractTransportAuth({ authorization: 'abc123' })).toEqual({ token: 'abc123', headers: { authorization: 'abc123' } });
  });

  it('decodes the mdp_auth cookie and copies the raw cookie header', () => {
    const cookie = `theme=dark; ${AUTH_COOKIE_NAME}=${encodeAuthCookie({
      scheme: 'Bearer',
      token: 'from-cookie',
      headers: { 'x-mdp-auth-tenant': 'acme' },
      metadata: { role: 'operator' },
    })}; lang=en`;
    expect(extractTransportAuth({ cookie })).toEqual({
      scheme: 'Bearer',
      token: 'from-cookie',
      metadata: { role: 'operator' },
      headers: { 'x-mdp-auth-tenant': 'acme', cookie },
    });
  });

  it('lets an explicit Authorization header win over the cookie for scheme and token', () => {
    const cookie = `${AUTH_COOKIE_NAME}=${encodeAuthCookie({ scheme: 'Cookie', token: 'c', metadata: { m: 1 } })}`;
    expect(extractTransportAuth({ authorization: 'Bearer h', cookie })).toEqual({
      scheme: 'Bearer',
      token: 'h',
      metadata: { m: 1 },
      headers: { authorization: 'Bearer h', cookie },
    });
  });

  it('copies x-mdp-auth-* headers, joining repeated values', () => {
    expect(
      extractTransportAuth({
        [`${AUTH_HEADER_PREFIX}tenant`]: 'acme',
        'x-mdp-auth-roles': ['a', 'b'],
        'x-other': 'ignored',
        host: 'localhost',
      }),
    ).toEqual({ headers: { 'x-mdp-auth-tenant': 'acme', 'x-mdp-auth-roles': 'a, b' } });
  });

  it('copies the raw authorization, cookie and x-mdp-auth-* headers together', () => {
    const cookie = 'session=abc';
    const auth = extractTransportAuth({ authorization: 'Bearer t', cookie, 'x-mdp-auth-tenant': 'acme', accept: '*/*' });
    expect(auth?.headers).toEqual({ authorization: 'Bearer t', cookie, 'x-mdp-auth-tenant': 'acme' });
  });

  it('copies a raw cookie header that has no mdp_auth cookie', () => {
    expect(extractTransportAuth({ cookie: 'app_session=s1; theme=dark' })).toEqual({
      headers: { cookie: 'app_session=s1; theme=dark' },
    });
  });

  it.each([
    ['no headers', {}],
    ['unrelated headers', { host: 'localhost', accept: 'text/html', 'x-mdp-session-id': 'abc' }],
    ['empty credentials', { authorization: '', cookie: '' }],
    ['undefined values', { authorization: undefined, cookie: undefined }],
  ])('returns undefined for %s', (_name, headers) => {
    expect(extractTransportAuth(headers)).toBeUndefined();
  });

  it.each([
    ['not base64 JSON', 'mdp_auth=%%%garbage%%%'],
    ['JSON that is not an AuthContext', `mdp_auth=${Buffer.from(JSON.stringify({ token: 5 })).toString('base64url')}`],
    ['a JSON array', `mdp_auth=${Buffer.from('[1,2]').toString('base64url')}`],
    ['an empty value', 'mdp_auth='],
  ])('ignores a garbage mdp_auth cookie (%s) as a credential', (_name, cookie) => {
    const auth = extractTransportAuth({ cookie });
    // Nothing is taken from it; only the raw header travels on, as for any cookie.
    expect(auth).toEqual({ headers: { cookie } });
    expect(extractTransportAuth({ cookie, authorization: 'Bearer ok' })).toEqual({
      scheme: 'Bearer',
      token: 'ok',
      headers: { authorization: 'Bearer ok', cookie },
    });
  });

  it('uses a custom cookie decoder (e.g. a signed cookie)', () => {
    const seen: string[] = [];
    const auth = extractTransportAuth(
      { cookie: 'mdp_auth=signed.value' },
      {
        decodeCookie: (value) => {
          seen.push(value);
          return value === 'signed.value' ? { token: 'verified' } : undefined;
        },
      },
    );
    expect(seen).toEqual(['signed.value']);
    expect(auth).toEqual({ token: 'verified', headers: { cookie: 'mdp_auth=signed.value' } });
  });

  it('does not share state between calls', () => {
    const cookie = `mdp_auth=${encodeAuthCookie({ token: 't', headers: { a: '1' } })}`;
    const first = extractTransportAuth({ cookie });
    if (first?.headers) first.headers.injected = 'x';
    expect(extractTransportAuth({ cookie })?.headers).toEqual({ a: '1', cookie });
  });
});

describe('mdp_auth cookie', () => {
  it('round-trips an AuthContext as base64url JSON', () => {
    const auth = { scheme: 'Bearer', token: 'tok/+=', headers: { 'x-mdp-auth-a': 'b' }, metadata: { n: 1, nested: { ok: true } } };
    const value = encodeAuthCookie(auth);
    expect(value).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))).toEqual(auth);
    expect(decodeAuthCookie(value)).toEqual(auth);
  });

  it.each(['', '!!!', Buffer.from('not json').toString('base64url'), Buffer.from('null').toString('base64url')])('decodes %j to undefined', (value) => {
    expect(decodeAuthCookie(value)).toBeUndefined();
  });

  it('readCookie finds one cookie by exact name', () => {
    expect(readCookie('a=1; mdp_auth=x=y; b=2', 'mdp_auth')).toBe('x=y');
    expect(readCookie('xmdp_auth=1; mdp_auth_old=2', 'mdp_auth')).toBeUndefined();
    expect(readCookie('  mdp_auth =  v  ', 'mdp_auth')).toBe('v');
    expect(readCookie('flag; mdp_auth=v', 'mdp_auth')).toBe('v');
    expect(readCookie(undefined, 'mdp_auth')).toBeUndefined();
    expect(readCookie('', 'mdp_auth')).toBeUndefined();
  });
});

describe('headersToMap', () => {
  it('turns Fetch headers into a lower-case map that extractTransportAuth reads', () => {
    const headers = new Headers({ Authorization: 'Bearer z', 'X-MDP-Auth-Tenant': 'acme' });
    const map = headersToMap(headers);
    expect(map).toEqual({ authorization: 'Bearer z', 'x-mdp-auth-tenant': 'acme' });
    expect(extractTransportAuth(map)).toMatchObject({ scheme: 'Bearer', token: 'z', headers: { 'x-mdp-auth-tenant': 'acme' } });
  });

  it('keeps a header named __proto__ as a header', () => {
    expect(JSON.stringify(headersToMap(new Headers([['__proto__', 'y']])))).toBe('{"__proto__":"y"}');
  });

  it('reads node rawHeaders: lower-case names, repeats joined by ", ", cookies by "; "', () => {
    const raw = ['Authorization', 'Bearer a', 'X-Trace', 'one', 'Cookie', 'a=1', 'authorization', 'Bearer b', 'x-trace', 'two', 'cookie', 'mdp_auth=x'];
    expect(headersToMap(raw)).toEqual({ authorization: 'Bearer a, Bearer b', 'x-trace': 'one, two', cookie: 'a=1; mdp_auth=x' });
    expect(readCookie(headersToMap(raw).cookie, 'mdp_auth')).toBe('x');
  });

  it('gives the same map for the same request from rawHeaders and from Fetch Headers', () => {
    const raw = ['A', '1', 'b', '2', 'a', '3', 'Cookie', 'c=1', 'cookie', 'd=2', 'Set-Cookie', 's=1', 'set-cookie', 's=2'];
    const fetchHeaders = new Headers();
    for (let i = 0; i < raw.length; i += 2) fetchHeaders.append(raw[i]!, raw[i + 1]!);
    expect(headersToMap(raw)).toEqual({ a: '1, 3', b: '2', cookie: 'c=1; d=2', 'set-cookie': 's=1, s=2' });
    expect(headersToMap(fetchHeaders)).toEqual(headersToMap(raw));
  });

  it('keeps rawHeaders named like Object built-ins as plain headers', () => {
    const map = headersToMap(['Constructor', 'x', '__proto__', 'y', 'toString', 'z', 'constructor', 'w', '__proto__', 'v']);
    expect(JSON.stringify(map)).toBe('{"constructor":"x, w","__proto__":"y, v","tostring":"z"}');
    expect(Object.getPrototypeOf(map)).toBe(Object.prototype);
  });
});
