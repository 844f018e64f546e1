/**
 * *beyond* (SPEC §7): an optional server auth policy. Without one the server accepts every
 * connection, as today's servers do on loopback. With one, websocket upgrades, HTTP loop connects
 * and skill reads need a credential the policy accepts, and the `mdp_auth` cookie is sealed
 * (AES-256-GCM under a key derived from the policy's cookie secret): a forged or tampered cookie is
 * refused, an expired one too, and its holder — or another service on the same host, which
 * browsers send the cookie to as well (cookies ignore ports) — cannot read the token in it.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthContext } from '@mdp/protocol';
import { parseAuthContext } from '@mdp/protocol';
import { encodeAuthCookie, extractTransportAuth, type HeaderMap } from './auth.js';
import { FORWARD_AS_IS, FORWARD_WITHOUT_CREDENTIAL, type CredentialForwarding } from './forwarding.js';

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
  /** Key from which the key that seals and opens `mdp_auth` cookies is derived. */
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

/** Lifetime of a sealed cookie, ms: one hour, the cookie's Max-Age. */
export const AUTH_COOKIE_MAX_AGE_MS = 3_600_000;

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The AES key of the cookies: kept apart from any other use of the cookie secret. */
function sealingKey(secret: Buffer): Buffer {
  return createHmac('sha256', secret).update('mdp_auth cookie sealing key v1').digest();
}

/**
 * `base64url(iv | tag | ciphertext)` of `{exp, auth}` (exp: ms since the epoch). base64url has no
 * `.`, `;` or `,`, so the value needs no quoting in a Cookie header.
 */
export function sealAuthCookie(auth: AuthContext, secret: Buffer, expiresAt: number): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify({ exp: expiresAt, auth }), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** Open a sealed cookie; `undefined` when forged, tampered, sealed under another secret, expired at `now`, or not an AuthContext. */
export function openAuthCookie(value: string, secret: Buffer, now: number): AuthContext | undefined {
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined;
  let text: string;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(secret), bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
  let sealed: unknown;
  try {
    sealed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { exp, auth } = (typeof sealed === 'object' && sealed !== null ? sealed : {}) as { exp?: unknown; auth?: unknown };
  if (typeof exp !== 'number' || !(now < exp)) return undefined;
  const parsed = parseAuthContext(auth);
  return parsed.ok ? parsed.value : undefined;
}

/**
 * How a server reads, mints and forwards credentials, with or without a policy. One object for
 * every edge. Forwarding (forwarding.ts): without a policy a call carries the caller's transport
 * auth and headers to the client as they came; under one, never the credential the server verified.
 */
export interface AuthGate extends CredentialForwarding {
  readonly policy: AuthPolicy | undefined;
  /** Transport auth of a request (under a policy the cookie is opened, and refused unless sealed by it and unexpired). */
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

export interface AuthGateOptions {
  /** Milliseconds since the epoch; default Date.now (tests pass a fixed clock). */
  readonly now?: () => number;
  /** Lifetime of a sealed cookie, ms. Default one hour. */
  readonly cookieMaxAgeMs?: number;
}

export function createAuthGate(policy?: AuthPolicy, options: AuthGateOptions = {}): AuthGate {
  if (!policy) {
    return {
      policy,
      extract: (headers) => extractTransportAuth(headers),
      allows: () => true,
      principalOf: () => undefined,
      encodeCookie: encodeAuthCookie,
      ...FORWARD_AS_IS,
    };
  }
  const now = options.now ?? Date.now;
  const maxAgeMs = options.cookieMaxAgeMs ?? AUTH_COOKIE_MAX_AGE_MS;
  const decodeCookie = (value: string): AuthContext | undefined => openAuthCookie(value, policy.cookieSecret, now());
  return {
    policy,
    extract: (headers) => extractTransportAuth(headers, { decodeCookie }),
    allows: (auth) => policy.verify(auth),
    principalOf: (auth) => (policy.principal && auth ? policy.principal(auth) : credentialPrincipal(auth)),
    encodeCookie: (auth) => sealAuthCookie(auth, policy.cookieSecret, now() + maxAgeMs),
    ...FORWARD_WITHOUT_CREDENTIAL,
  };
}
