/**
 * Signed access tokens from an identity provider (*beyond*, SPEC §17), checked with `jose`.
 *
 *   request ─▶ gate.prepare ─▶ prepare(token)      token seen before and unexpired: nothing to do
 *                                  │ new
 *                                  ▼
 *              key set (discovered once from the issuer, or --auth-jwks-url) ─▶ jwtVerify
 *                                  │ accepted                     │ refused
 *                                  ▼                              ▼
 *                  cache {principal, scopes} until exp      log auth.token_refused {reason}
 *   then the synchronous checks (verify, principal, scopes) read the cache.
 *
 * A token is accepted when its signature checks with a key of the issuer's set under an asymmetric
 * algorithm the key itself allows (jose picks the key by `kid`, key type and the key's own `alg`:
 * `none` and HMAC never verify), and `iss`, `aud` (one of the audiences), `exp` (required) and
 * `nbf` hold within the clock skew. The principal is `iss` + `sub`, hashed: the same person is the
 * same principal on every node and across restarts.
 *
 * Key sets change and fail: a token with an unknown `kid` (a rotated key) makes the set be fetched
 * again, at most once per cooldown (30 s) counted from the last attempt, answered or not, so such
 * tokens can neither hammer the host nor wait on one that is down; the set is also fetched again in
 * the background every `refreshIntervalMs`. A fetch that fails keeps the keys in hand (a token
 * signed by one of them still passes), is logged, and shows in `status()` (readiness, metrics).
 * jose checks each key and signature (`createLocalJWKSet`, `jwtVerify`); the fetching is ours, so
 * that failures count against the cooldown too.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { isLoopbackHost, scopesOfClaims, systemClock, type Logger } from '@mdp/core';
import { ACCESS_TOKEN_DEFAULTS } from './access-token-defaults.js';

/** The algorithms a token may be signed with: asymmetric only (no `none`, no HMAC). */
export const ASYMMETRIC_ALGORITHMS = Object.freeze(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']);

export interface AccessTokenOptions {
  /** The issuer (`iss`) tokens must name; its OIDC discovery document names the key set unless `jwksUrl` is given. */
  readonly issuer: string;
  /** The key set's URL: no discovery. */
  readonly jwksUrl?: string | undefined;
  /** The audiences a token's `aud` must name one of; asked at each verification (known once listening). */
  readonly audiences: () => readonly string[];
  readonly clockSkewS?: number;
  readonly refreshIntervalMs?: number;
  readonly cooldownMs?: number;
  readonly fetchTimeoutMs?: number;
  readonly maxCached?: number;
  readonly logger: Logger;
  /** ms since the epoch; tests pass their own. */
  readonly now?: () => number;
}

/** What the server shows of the key set (readiness, metrics). */
export interface KeySetStatus {
  /** `ok`: the last fetch worked; `stale`: it failed, keys from an earlier one are in use; `unavailable`: no keys yet. */
  readonly state: 'ok' | 'stale' | 'unavailable';
  readonly jwksUrl: string | undefined;
  /** When keys were last fetched, ms since the epoch. */
  readonly fetchedAt: number | undefined;
  /** Why the last fetch failed, if it did. */
  readonly error: string | undefined;
  readonly fetches: number;
  readonly failures: number;
}

export interface Verified {
  readonly principal: string;
  readonly scopes: readonly string[];
  readonly issuer: string;
  readonly subject: string;
  /** Trusted until, ms since the epoch. */
  readonly until: number;
}

export interface AccessTokens {
  /** Whether `token` has the shape of a JWS (three base64url parts): the other tokens are not ours. */
  owns(token: string): boolean;
  /** Check `token` if it is new; `undefined` when there is nothing to wait for. Never rejects. */
  prepare(token: string): Promise<void> | undefined;
  /** The verified, unexpired token's facts, or `undefined`. */
  verified(token: string): Verified | undefined;
  status(): KeySetStatus;
  /** Fetch the key set now (at start, so that readiness knows). Never rejects. */
  start(): Promise<void>;
  close(): void;
}

const JWS_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** The OIDC discovery document: the fields used. */
const DiscoverySchema = v.object({ issuer: v.string(), jwks_uri: v.pipe(v.string(), v.url()) });

/** A JWK Set (RFC 7517 §5): jose checks each key; at most this many are looked at. */
const KeySetSchema = v.object({ keys: v.pipe(v.array(v.record(v.string(), v.unknown())), v.maxLength(100)) });

/** Whether a URL may name a key set or an issuer: https, or http to this machine. */
export function trustedUrlProblem(url: string, what: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${what} is not a URL: ${JSON.stringify(url)}`;
  }
  if (parsed.protocol === 'https:') return undefined;
  if (parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname.replace(/^\[|\]$/g, ''))) return undefined;
  return `${what} must be https (http only to this machine): ${JSON.stringify(url)}`;
}

/** The OIDC discovery URL of `issuer` (OpenID Connect Discovery 1.0 §4). */
export function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
}

/** `iss` + `sub` as a principal: hashed, so neither shows in logs, fixed in length. */
export function tokenPrincipal(issuer: string, subject: string): string {
  return `oidc:${createHash('sha256').update(`${issuer}\n${subject}`, 'utf8').digest('hex').slice(0, 32)}`;
}

function describeError(error: unknown): { reason: string; code?: string; claim?: string } {
  if (error instanceof Error) {
    const { code, claim } = error as { code?: unknown; claim?: unknown };
    return {
      reason: error.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(typeof claim === 'string' ? { claim } : {}),
    };
  }
  return { reason: String(error) };
}

export function createAccessTokens(options: AccessTokenOptions): AccessTokens {
  const logger = options.logger.child({ component: 'access-tokens' });
  const now = options.now ?? (() => systemClock.wallNow());
  const skewS = options.clockSkewS ?? ACCESS_TOKEN_DEFAULTS.clockSkewS;
  const maxCached = options.maxCached ?? ACCESS_TOKEN_DEFAULTS.maxCached;
  const timeoutMs = options.fetchTimeoutMs ?? ACCESS_TOKEN_DEFAULTS.fetchTimeoutMs;
  const cache = new Map<string, Verified>();
  const inFlight = new Map<string, Promise<void>>();
  let jwksUrl = options.jwksUrl;
  let keys: JWTVerifyGetKey | undefined;
  let discovering: Promise<JWTVerifyGetKey | undefined> | undefined;
  let lastDiscoveryFailure = -Infinity;
  let refresh: NodeJS.Timeout | undefined;
  let closed = false;
  const stats = { fetchedAt: undefined as number | undefined, error: undefined as string | undefined, fetches: 0, failures: 0 };

  /** The keys of the last set fetched (kept when a later fetch fails), or none yet. */
  let local: JWTVerifyGetKey | undefined;
  /** When the key set was last asked for, ms (whether or not the host answered): the cooldown counts from it. */
  let lastAttempt = -Infinity;
  let pendingFetch: Promise<void> | undefined;
  const cooldownMs = options.cooldownMs ?? ACCESS_TOKEN_DEFAULTS.cooldownMs;

  /** Fetch the key set once (concurrent callers share it). Never rejects: a failure keeps the keys in hand. */
  const fetchKeys = (url: string): Promise<void> =>
    (pendingFetch ??= (async () => {
      lastAttempt = now();
      stats.fetches += 1;
      try {
        const response = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
        if (response.status !== 200) throw new Error(`key set answered HTTP ${response.status}`);
        const parsed = v.safeParse(KeySetSchema, await response.json());
        if (!parsed.success) throw new Error(`not a key set: ${parsed.issues[0]?.message ?? 'invalid'}`);
        local = createLocalJWKSet(parsed.output as JSONWebKeySet);
        if (stats.error !== undefined) logger.info('auth.key_set_recovered', { jwksUrl: url, keys: parsed.output.keys.length });
        stats.fetchedAt = now();
        stats.error = undefined;
      } catch (error) {
        stats.failures += 1;
        stats.error = describeError(error).reason;
        logger.warn('auth.key_set_unreachable', { jwksUrl: url, error: stats.error, cachedKeys: local !== undefined });
      }
    })().finally(() => {
      pendingFetch = undefined;
    }));

  /**
   * The key for a token's header: from the keys in hand; for a `kid` they lack (a rotated key), the
   * set is fetched again, at most once per cooldown whether or not the host answers, so that
   * unknown `kid`s can neither hammer the key set's host nor wait on one that is down.
   */
  const keySetAt =
    (url: string): JWTVerifyGetKey =>
    async (header, token) => {
      // A fetch under way (the one at start) is waited for, not counted against the cooldown.
      if (local === undefined && (pendingFetch !== undefined || now() - lastAttempt >= cooldownMs)) await fetchKeys(url);
      const keys = local;
      if (keys === undefined) throw new Error(`no key set to check the token with (${stats.error ?? 'not fetched yet'})`);
      try {
        return await keys(header, token);
      } catch (error) {
        if (!(error instanceof joseErrors.JWKSNoMatchingKey) || (pendingFetch === undefined && now() - lastAttempt < cooldownMs)) throw error;
        await fetchKeys(url);
        if (local === undefined || local === keys) throw error;
        return local(header, token);
      }
    };

  /** The key set, discovering it from the issuer first if need be (at most once per cooldown after a failure). */
  const keySet = (): Promise<JWTVerifyGetKey | undefined> | JWTVerifyGetKey => {
    if (keys) return keys;
    if (discovering) return discovering;
    if (jwksUrl !== undefined) return (keys = keySetAt(jwksUrl));
    if (now() - lastDiscoveryFailure < cooldownMs) return Promise.resolve(undefined);
    discovering = discover().finally(() => {
      discovering = undefined;
    });
    return discovering;
  };

  const discover = async (): Promise<JWTVerifyGetKey | undefined> => {
    const url = discoveryUrl(options.issuer);
    try {
      const response = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
      if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
      const parsed = v.safeParse(DiscoverySchema, await response.json());
      if (!parsed.success) throw new Error(`not a discovery document: ${parsed.issues[0]?.message ?? 'invalid'}`);
      // OpenID Connect Discovery §4.3: the document must name the issuer it was asked for.
      if (parsed.output.issuer !== options.issuer)
        throw new Error(`the document names issuer ${JSON.stringify(parsed.output.issuer)}, not ${JSON.stringify(options.issuer)}`);
      const problem = trustedUrlProblem(parsed.output.jwks_uri, 'jwks_uri');
      if (problem) throw new Error(problem);
      jwksUrl = parsed.output.jwks_uri;
      logger.info('auth.issuer_discovered', { issuer: options.issuer, jwksUrl });
      return (keys = keySetAt(jwksUrl));
    } catch (error) {
      lastDiscoveryFailure = now();
      stats.failures += 1;
      stats.error = `discovery at ${url} failed: ${describeError(error).reason}`;
      logger.warn('auth.discovery_failed', { issuer: options.issuer, url, error: stats.error });
      return undefined;
    }
  };

  const refused = (details: Record<string, unknown>): void => {
    logger.info('auth.token_refused', details);
  };

  const verify = async (token: string): Promise<void> => {
    const found = keySet();
    const getKey = found instanceof Promise ? await found : found;
    if (getKey === undefined) return refused({ reason: `no key set to check the token with (${stats.error ?? 'not fetched yet'})` });
    try {
      const { payload } = await jwtVerify(token, getKey, {
        issuer: options.issuer,
        audience: [...options.audiences()],
        algorithms: [...ASYMMETRIC_ALGORITHMS],
        clockTolerance: skewS,
        requiredClaims: ['exp', 'sub'],
        currentDate: new Date(now()),
      });
      const issuer = payload.iss as string;
      const subject = payload.sub as string;
      const until = Math.min(((payload.exp as number) + skewS) * 1000, now() + ACCESS_TOKEN_DEFAULTS.maxCacheMs);
      if (cache.size >= maxCached) cache.delete(cache.keys().next().value as string);
      cache.set(token, {
        principal: tokenPrincipal(issuer, subject),
        scopes: scopesOfClaims(payload as { scope?: unknown; scp?: unknown }),
        issuer,
        subject,
        until,
      });
    } catch (error) {
      refused(describeError(error));
    }
  };

  const owns = (token: string): boolean => token.length > 0 && token.charCodeAt(0) === 101 /* e */ && JWS_SHAPE.test(token);

  const verified = (token: string): Verified | undefined => {
    const entry = cache.get(token);
    if (entry === undefined) return undefined;
    if (now() < entry.until) return entry;
    cache.delete(token);
    return undefined;
  };

  /** Fetch the set again now (discovering it first if need be). Never rejects. */
  const refreshNow = async (): Promise<void> => {
    const found = keySet();
    const getKey = found instanceof Promise ? await found : found;
    if (getKey !== undefined && jwksUrl !== undefined) await fetchKeys(jwksUrl);
  };

  const scheduleRefresh = (): void => {
    const every = options.refreshIntervalMs ?? ACCESS_TOKEN_DEFAULTS.refreshIntervalMs;
    // Keys removed from the set stop verifying new tokens within this; a failure keeps the old keys.
    refresh = setInterval(() => void refreshNow(), every);
    refresh.unref();
  };

  return {
    owns,
    prepare(token) {
      if (token.length > ACCESS_TOKEN_DEFAULTS.maxTokenChars) {
        refused({ reason: `token longer than ${ACCESS_TOKEN_DEFAULTS.maxTokenChars} characters`, length: token.length });
        return undefined;
      }
      // The hot path: a token verified before is one lookup (only verified tokens are cached).
      if (verified(token) !== undefined || !owns(token)) return undefined;
      let pending = inFlight.get(token);
      if (pending === undefined) {
        pending = verify(token).finally(() => inFlight.delete(token));
        inFlight.set(token, pending);
      }
      return pending;
    },
    verified,
    status() {
      const state = stats.fetchedAt === undefined ? 'unavailable' : stats.error === undefined ? 'ok' : 'stale';
      return { state, jwksUrl, fetchedAt: stats.fetchedAt, error: stats.error, fetches: stats.fetches, failures: stats.failures };
    },
    async start() {
      if (closed || refresh) return;
      scheduleRefresh();
      await refreshNow();
    },
    close() {
      closed = true;
      if (refresh) clearInterval(refresh);
      refresh = undefined;
      cache.clear();
    },
  };
}
