/**
 * *beyond* (SPEC §7): an optional server auth policy. Without one the server accepts every
 * connection, as today's servers do on loopback. With one, websocket upgrades, HTTP loop connects
 * and skill reads need a credential the policy accepts, and the `mdp_auth` cookie is signed
 * (HMAC-SHA256) so a forged cookie is refused.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthContext } from '@mdp/protocol';
import { decodeAuthCookie, encodeAuthCookie, extractTransportAuth, type HeaderMap } from './auth.js';

export interface AuthPolicy {
  /** Whether this transport auth may connect or read. */
  verify(auth: AuthContext | undefined): boolean;
  /**
   * Who a credential the policy accepted names: a short stable string, never the secret itself. A
   * client id belongs to the principal that registered it, and every HTTP loop request must come
   * from the principal that connected. Optional; the default is {@link credentialPrincipal} (a hash
   * of the token, or of the whole credential when it has none). Give your own when one caller's
   * credentials vary from request to request (a signed, expiring token: return its subject).
   */
  principal?(auth: AuthContext): string;
  /** Key that signs and checks `mdp_auth` cookies. */
  readonly cookieSecret: Buffer;
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * The default principal of an accepted credential: `token:` and the first 128 bits of the token's
 * SHA-256 (hex), so two holders of one token are one principal and the token never appears in logs.
 * A credential without a token (an `x-mdp-auth-*` header, a cookie holding only headers or
 * metadata) is named by a hash of its scheme, its headers but the raw `cookie` one (which also
 * carries unrelated cookies) and its metadata.
 */
export function credentialPrincipal(auth: AuthContext | undefined): string {
  if (typeof auth?.token === 'string') return `token:${digest(auth.token).toString('hex', 0, 16)}`;
  const headers = Object.entries(auth?.headers ?? {})
    .filter(([name]) => name !== 'cookie')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const identity = JSON.stringify([auth?.scheme ?? null, headers, auth?.metadata ?? null]);
  return `credential:${digest(identity).toString('hex', 0, 16)}`;
}

/** A policy that accepts any credential whose `token` is one of `tokens`. */
export function createTokenPolicy(tokens: Iterable<string>, options: { cookieSecret?: Buffer } = {}): AuthPolicy {
  // Compare digests in constant time so the check leaks nothing about the tokens.
  const allowed = [...new Set(tokens)].filter((t) => t !== '').map(digest);
  if (allowed.length === 0) throw new RangeError('a token policy needs at least one non-empty token');
  return {
    cookieSecret: options.cookieSecret ?? randomBytes(32),
    verify(auth) {
      if (typeof auth?.token !== 'string') return false;
      const candidate = digest(auth.token);
      let ok = false;
      for (const token of allowed) ok = timingSafeEqual(token, candidate) || ok;
      return ok;
    },
  };
}

function signature(payload: string, secret: Buffer): string {
  return createHmac('sha256', secret).update(payload).digest('base64url');
}

/** `<base64url JSON>.<base64url HMAC>`; base64url has no `.`, so the split is unambiguous. */
export function encodeSignedAuthCookie(auth: AuthContext, secret: Buffer): string {
  const payload = encodeAuthCookie(auth);
  return `${payload}.${signature(payload, secret)}`;
}

/** Decode a signed cookie; `undefined` when unsigned, forged or not a valid AuthContext. */
export function decodeSignedAuthCookie(value: string, secret: Buffer): AuthContext | undefined {
  const dot = value.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const payload = value.slice(0, dot);
  const given = Buffer.from(value.slice(dot + 1), 'utf8');
  const expected = Buffer.from(signature(payload, secret), 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  return decodeAuthCookie(payload);
}

/** How a server reads and mints credentials, with or without a policy. One object for every edge. */
export interface AuthGate {
  readonly policy: AuthPolicy | undefined;
  /** Transport auth of a request (the cookie is checked for its signature under a policy). */
  extract(headers: HeaderMap): AuthContext | undefined;
  /** Whether a request with this transport auth may connect or read. */
  allows(auth: AuthContext | undefined): boolean;
  /**
   * The principal of a credential `allows` accepted (see {@link AuthPolicy.principal}); always
   * `undefined` without a policy, where every caller is the same anonymous principal.
   */
  principalOf(auth: AuthContext | undefined): string | undefined;
  /** The `mdp_auth` cookie value for `auth`. */
  encodeCookie(auth: AuthContext): string;
}

export function createAuthGate(policy?: AuthPolicy): AuthGate {
  if (!policy) {
    return {
      policy,
      extract: (headers) => extractTransportAuth(headers),
      allows: () => true,
      principalOf: () => undefined,
      encodeCookie: encodeAuthCookie,
    };
  }
  const decodeCookie = (value: string): AuthContext | undefined => decodeSignedAuthCookie(value, policy.cookieSecret);
  return {
    policy,
    extract: (headers) => extractTransportAuth(headers, { decodeCookie }),
    allows: (auth) => policy.verify(auth),
    principalOf: (auth) => (policy.principal && auth ? policy.principal(auth) : credentialPrincipal(auth)),
    encodeCookie: (auth) => encodeSignedAuthCookie(auth, policy.cookieSecret),
  };
}
