/**
 * *beyond* (SPEC §7): an optional server auth policy. Without one the server accepts every
 * connection, as today's servers do on loopback. With one, websocket upgrades, HTTP loop connects
 * and skill reads need a credential the policy accepts, and the `mdp_auth` cookie is sealed
 * (cookie-seal.ts): a forged or tampered cookie is refused, an expired one too, and its holder — or
 * another service on the same host, which browsers send the cookie to as well (cookies ignore
 * ports) — cannot read the token in it.
 *
 * With or without a policy, the gate can be told which requests the cookie counts on
 * (`honoursCookie`): a browser sends it by itself, also on requests a page of another site makes,
 * so on those it is treated as absent.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthContext } from '@mdp/protocol';
import { AUTH_COOKIE_NAME, encodeAuthCookie, extractTransportAuth, type HeaderMap } from './auth.js';
import { systemClock } from './clock.js';
import { AUTH_COOKIE_MAX_AGE_MS, cookieKeyOf, fixedKeyring, openAuthCookie, sealAuthCookie, type CookieKeyring } from './cookie-seal.js';
import { FORWARD_AS_IS, FORWARD_WITHOUT_CREDENTIAL, withoutAuthCookie, type CredentialForwarding } from './forwarding.js';

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
  /**
   * Material (16 bytes or more) the key that seals and opens `mdp_auth` cookies is derived from,
   * when the gate is given no `cookieKeys`. Default: 32 random bytes per gate, so that cookies end
   * with the process.
   */
  readonly cookieSecret?: Buffer;
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

/**
 * How a server reads, mints and forwards credentials, with or without a policy. One object for
 * every edge. Forwarding (forwarding.ts): without a policy a call carries the caller's transport
 * auth and headers to the client as they came; under one, never the credential the server verified.
 * On a request whose cookie the gate does not honour (`AuthGateOptions.honoursCookie`), the
 * `mdp_auth` cookie is left out of all of it, as if the browser had not sent it.
 */
export interface AuthGate extends CredentialForwarding {
  readonly policy: AuthPolicy | undefined;
  /**
   * Transport auth of a request (under a policy the cookie is opened, and refused unless sealed by
   * one of the gate's keys and unexpired; on a request whose cookie is not honoured it is ignored).
   */
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
  /** Whether the `mdp_auth` cookie counts on a request with these headers (browsers send it unasked). */
  honoursCookie(headers: HeaderMap): boolean;
}

export interface AuthGateOptions {
  /** Milliseconds since the epoch; default the system clock's `wallNow` (tests pass a fixed clock). */
  readonly now?: () => number;
  /** Lifetime of a sealed cookie, ms, and how long a retired key still opens cookies. Default one hour. */
  readonly cookieMaxAgeMs?: number;
  /**
   * The keys that seal and open cookies under a policy (a ring backed by a file survives restarts
   * and is shared by the servers that read the file). Default: one key from the policy's
   * `cookieSecret`.
   */
  readonly cookieKeys?: CookieKeyring;
  /**
   * Whether the `mdp_auth` cookie counts on a request with these headers; where it does not, the
   * gate reads, checks and forwards the request as if it had no such cookie. Default: always (a
   * server uses `credentialedOriginProblem` of the origin policy: pages of other sites not allowed
   * do not get the cookie's credential).
   */
  readonly honoursCookie?: (headers: HeaderMap) => boolean;
}

/** Whether a Cookie header may hold the `mdp_auth` cookie (a cheap test before the origin's). */
function mayHoldAuthCookie(headers: HeaderMap): boolean {
  const cookie = headers.cookie;
  return cookie !== undefined && (typeof cookie === 'string' ? cookie : cookie.join('; ')).includes(AUTH_COOKIE_NAME);
}

/** `headers` without the `mdp_auth` cookie (its other cookies stay). */
function withoutTheCookie<H extends HeaderMap>(headers: H): H {
  const { cookie, ...rest } = headers;
  if (cookie === undefined) return headers;
  const kept = withoutAuthCookie(typeof cookie === 'string' ? cookie : cookie.join('; '));
  return (kept === undefined ? rest : { ...rest, cookie: kept }) as H;
}

export function createAuthGate(policy?: AuthPolicy, options: AuthGateOptions = {}): AuthGate {
  const honours = options.honoursCookie;
  const honoursCookie = (headers: HeaderMap): boolean => honours === undefined || honours(headers);
  /** The headers as the gate reads them: without a cookie it does not honour. */
  const counted = <H extends HeaderMap>(headers: H): H => (honours === undefined || !mayHoldAuthCookie(headers) || honours(headers) ? headers : withoutTheCookie(headers));
  const forwarding = policy ? FORWARD_WITHOUT_CREDENTIAL : FORWARD_AS_IS;
  const common = {
    policy,
    honoursCookie,
    forwardableAuth: (headers: HeaderMap, auth: AuthContext | undefined) => forwarding.forwardableAuth(counted(headers), auth),
    forwardableHeaders: (headers: Record<string, string>) => forwarding.forwardableHeaders(counted(headers)),
  };
  if (!policy) {
    return {
      ...common,
      extract: (headers) => extractTransportAuth(counted(headers)),
      allows: () => true,
      principalOf: () => undefined,
      encodeCookie: encodeAuthCookie,
    };
  }
  const now = options.now ?? systemClock.wallNow;
  const maxAgeMs = options.cookieMaxAgeMs ?? AUTH_COOKIE_MAX_AGE_MS;
  const ring = options.cookieKeys ?? fixedKeyring([cookieKeyOf(policy.cookieSecret ?? randomBytes(32))]);
  const decodeCookie = (value: string): AuthContext | undefined => openAuthCookie(value, ring, now(), maxAgeMs);
  return {
    ...common,
    extract: (headers) => extractTransportAuth(counted(headers), { decodeCookie }),
    allows: (auth) => policy.verify(auth),
    principalOf: (auth) => (policy.principal && auth ? policy.principal(auth) : credentialPrincipal(auth)),
    encodeCookie: (auth) => sealAuthCookie(auth, ring.sealing(), now() + maxAgeMs),
  };
}
