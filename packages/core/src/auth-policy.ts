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
import { AUTH_ACTIONS, DEFAULT_SCOPE_NAMES, missingScope, type AuthAction, type ScopeNames, type Scopes } from './scopes.js';

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
  /**
   * The scopes of a credential `verify` accepted (scopes.ts), or `undefined` when it may do
   * everything (a static token). Default: everything.
   */
  scopes?(auth: AuthContext): Scopes;
  /**
   * What `verify` must do first that cannot be done at once (fetch a key set, check a signature):
   * the edges call it, through {@link AuthGate.prepare}, before their synchronous checks, and wait
   * for it. Returns `undefined` when nothing is to be done (a credential already checked, or one the
   * policy reads at once), so that the hot path pays for no promise. Never rejects: a credential it
   * cannot accept is simply refused by `verify` afterwards.
   */
  prepare?(auth: AuthContext): Promise<void> | undefined;
  /**
   * What a client the caller calls may learn of it besides its principal and scopes (for a signed
   * token: its issuer and subject). Never a secret.
   */
  describe?(auth: AuthContext): Readonly<Record<string, string>> | undefined;
}

/** Who a caller is, as every way in may read it: {@link AuthGate.callerOf}. */
export interface Caller {
  /** {@link AuthPolicy.principal}: a short stable string, never a secret. */
  readonly principal: string;
  /** Its scopes, or `undefined` for every scope (scopes.ts). */
  readonly scopes: Scopes;
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
  /**
   * Do what the policy needs before `allows` can judge the credential of a request with these
   * headers (`AuthPolicy.prepare`: a signed token's key set fetched, its signature checked). A
   * server awaits it once per request and upgrade, before any synchronous check; `undefined` when
   * there is nothing to wait for (no policy, no credential, one checked already). Never rejects.
   */
  prepare(headers: HeaderMap): Promise<void> | undefined;
  /** {@link prepare} for a credential that came another way (a body's `auth`). */
  prepareAuth(auth: AuthContext | undefined): Promise<void> | undefined;
  /**
   * Who the caller with this transport auth is: its principal and scopes; `undefined` without a
   * policy or for a credential `allows` refuses. Every way in (skill reads, host API, MCP, the MDP
   * transports) may read it, after `prepare`.
   */
  callerOf(auth: AuthContext | undefined): Caller | undefined;
  /** The scopes of a credential `allows` accepted (`undefined`: every scope, and always without a policy). */
  scopesOf(auth: AuthContext | undefined): Scopes;
  /** Which scope grants each action (scopes.ts); the defaults unless the gate was given others. */
  readonly scopeNames: ScopeNames;
  /**
   * The scope a credential `allows` accepted lacks for `action` (on `clientId`, for `register`), or
   * `undefined` when it has it (and always without a policy). Answer 403 with
   * `WWW-Authenticate: Bearer error="insufficient_scope", scope="<it>"`.
   */
  missingScope(auth: AuthContext | undefined, action: AuthAction, clientId?: string): string | undefined;
  /**
   * The auth a call carries when its caller named one itself (the host API's body `auth`): as given
   * without a policy; under one, with the caller's principal and scopes set over whatever it said
   * of them (see {@link AuthGateOptions.forwardCaller}).
   */
  namedAuth(given: AuthContext, auth: AuthContext | undefined): AuthContext;
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
  /** Which scope grants each action; default `mdp:read`, `mdp:call`, `mdp:register`, `mdp:admin`. */
  readonly scopeNames?: Partial<ScopeNames>;
  /**
   * Under a policy, calls forwarded to a client carry who called in `auth.metadata` (`principal`,
   * `scopes`, and what `AuthPolicy.describe` adds), set by the server over anything the caller
   * said. Default false (the server sets it when it signs teams in).
   */
  readonly forwardCaller?: boolean;
  /**
   * Under a policy, forward the credential the server verified to the clients too (`Authorization`,
   * the token). Default false: a client holding it could act as the caller here.
   */
  readonly forwardCredential?: boolean;
}

/** The `metadata` keys the server sets on forwarded auth under a policy. */
export const CALLER_METADATA_KEYS = Object.freeze(['principal', 'scopes', 'issuer', 'subject'] as const);

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
  const counted = <H extends HeaderMap>(headers: H): H =>
    honours === undefined || !mayHoldAuthCookie(headers) || honours(headers) ? headers : withoutTheCookie(headers);
  const forwarding = policy && options.forwardCredential !== true ? FORWARD_WITHOUT_CREDENTIAL : FORWARD_AS_IS;
  const scopeNames: ScopeNames = Object.freeze({ ...DEFAULT_SCOPE_NAMES, ...options.scopeNames });
  const allScopes = Object.freeze(AUTH_ACTIONS.map((action) => scopeNames[action]));
  if (!policy) {
    return {
      policy,
      honoursCookie,
      scopeNames,
      forwardableAuth: (headers: HeaderMap, auth: AuthContext | undefined) => forwarding.forwardableAuth(counted(headers), auth),
      forwardableHeaders: (headers: Record<string, string>) => forwarding.forwardableHeaders(counted(headers)),
      extract: (headers) => extractTransportAuth(counted(headers)),
      allows: () => true,
      principalOf: () => undefined,
      encodeCookie: encodeAuthCookie,
      prepare: () => undefined,
      prepareAuth: () => undefined,
      callerOf: () => undefined,
      scopesOf: () => undefined,
      missingScope: () => undefined,
      namedAuth: (given) => given,
    };
  }
  const now = options.now ?? systemClock.wallNow;
  const maxAgeMs = options.cookieMaxAgeMs ?? AUTH_COOKIE_MAX_AGE_MS;
  const ring = options.cookieKeys ?? fixedKeyring([cookieKeyOf(policy.cookieSecret ?? randomBytes(32))]);
  const decodeCookie = (value: string): AuthContext | undefined => openAuthCookie(value, ring, now(), maxAgeMs);
  const extract = (headers: HeaderMap): AuthContext | undefined => extractTransportAuth(counted(headers), { decodeCookie });
  const principalOf = (auth: AuthContext | undefined): string => (policy.principal && auth ? policy.principal(auth) : credentialPrincipal(auth));
  const scopesOf = (auth: AuthContext): Scopes => (policy.scopes ? policy.scopes(auth) : undefined);
  const callerOf = (auth: AuthContext | undefined): Caller | undefined =>
    auth && policy.verify(auth) ? { principal: principalOf(auth), scopes: scopesOf(auth) } : undefined;
  const forwardCaller = options.forwardCaller === true;
  /** `auth` with the caller's principal, scopes and description set over its metadata. */
  const stamped = (forwarded: AuthContext | undefined, auth: AuthContext | undefined): AuthContext | undefined => {
    if (!forwardCaller) return forwarded;
    const caller = callerOf(auth);
    if (!caller || !auth) return forwarded;
    const metadata: Record<string, unknown> = { ...forwarded?.metadata };
    for (const key of CALLER_METADATA_KEYS) delete metadata[key];
    Object.assign(metadata, policy.describe?.(auth), { principal: caller.principal, scopes: caller.scopes ?? allScopes });
    return { ...forwarded, metadata };
  };
  const prepareAuth = (auth: AuthContext | undefined): Promise<void> | undefined => (auth && policy.prepare ? policy.prepare(auth) : undefined);
  return {
    policy,
    honoursCookie,
    scopeNames,
    forwardableAuth: (headers: HeaderMap, auth: AuthContext | undefined) => stamped(forwarding.forwardableAuth(counted(headers), auth), auth),
    forwardableHeaders: (headers: Record<string, string>) => forwarding.forwardableHeaders(counted(headers)),
    extract,
    allows: (auth) => policy.verify(auth),
    principalOf,
    encodeCookie: (auth) => sealAuthCookie(auth, ring.sealing(), now() + maxAgeMs),
    prepare(headers) {
      if (!policy.prepare) return undefined;
      const cookie = mayHoldAuthCookie(headers);
      const authorization = headers.authorization;
      if (!cookie) {
        // The common case, read without the whole extraction: the token of `Authorization`.
        if (authorization === undefined) return undefined;
        const value = (typeof authorization === 'string' ? authorization : authorization.join(', ')).trim();
        const space = value.indexOf(' ');
        return policy.prepare({ token: space > 0 ? value.slice(space + 1).trim() : value });
      }
      return prepareAuth(extract(headers));
    },
    prepareAuth,
    callerOf,
    scopesOf: (auth) => (auth ? scopesOf(auth) : undefined),
    missingScope(auth, action, clientId) {
      if (!auth || !policy.scopes) return undefined;
      return missingScope(policy.scopes(auth), action, scopeNames, clientId);
    },
    namedAuth: (given, auth) => stamped(given, auth) ?? given,
  };
}
