/** POST/DELETE /mdp/auth: the auth cookie bootstrap for browser websocket clients (SPEC §7). */
import { Hono } from 'hono';
import { parseAuthContext, type AuthContext } from '@mdp/protocol';
import { AUTH_COOKIE_NAME, headersToMap, type AuthGate } from '@mdp/core';
import type { CookieSameSite } from './settings/options.js';

/** Cookie lifetime, seconds (one hour). */
export const AUTH_COOKIE_MAX_AGE_S = 3600;

/**
 * Largest `mdp_auth=<value>` pair issued, bytes. Browsers keep cookies up to 4096 bytes of name and
 * value and drop larger ones silently, so a bigger one could never authenticate anything.
 */
export const MAX_AUTH_COOKIE_BYTES = 4096;

const SAME_SITE: Readonly<Record<CookieSameSite, string>> = { lax: 'Lax', strict: 'Strict', none: 'None' };

/** `Secure` over TLS, and always with `SameSite=None` (browsers drop a cross-site cookie without it). */
export function cookieAttributes(sameSite: CookieSameSite, secure: boolean, maxAge: number): string {
  return `Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=${SAME_SITE[sameSite]}${secure || sameSite === 'none' ? '; Secure' : ''}`;
}

/**
 * The part of a request's transport auth worth putting in a cookie: everything but the raw Cookie
 * header (re-issuing would otherwise nest the old cookie in the new one). Nothing left → undefined.
 */
function credentialOf(auth: AuthContext | undefined): AuthContext | undefined {
  if (!auth) return undefined;
  const { cookie: _cookie, ...headers } = auth.headers ?? {};
  const result: AuthContext = { ...auth };
  if (Object.keys(headers).length > 0) result.headers = headers;
  else delete result.headers;
  return result.scheme || result.token || result.headers || result.metadata ? result : undefined;
}

/**
 * The transport auth `POST /mdp/auth` mints from when the body names none. Under an auth policy the
 * `mdp_auth` cookie is left out: a sealed cookie carries its expiry, and minting a fresh one from it
 * alone would let whoever holds (or copied) it renew it for ever, so only a credential shown again
 * (`Authorization`, `x-mdp-auth-*`) gets a new cookie. Without a policy the cookie counts, as on
 * the servers in use today.
 */
function requestCredential(gate: AuthGate, headers: Record<string, string>): AuthContext | undefined {
  if (!gate.policy) return credentialOf(gate.extract(headers));
  const { cookie: _cookie, ...shown } = headers;
  return credentialOf(gate.extract(shown));
}

const NO_AUTH = 'No auth given: send {"auth": {...}} or an Authorization header';
const NO_AUTH_GUARDED = 'No auth given: send {"auth": {...}}, an Authorization header or x-mdp-auth-* headers (the mdp_auth cookie cannot renew itself)';

/**
 * Why a request of a page of another site (`AuthGate.honoursCookie`) is not given or cleared a
 * cookie, or undefined. The cookie would never count on its requests, and setting or clearing it
 * from there would let any site swap the user's credential or sign them out.
 */
function foreignPage(gate: AuthGate, headers: Headers): string | undefined {
  const origin = headers.get('origin') ?? undefined;
  if (origin === undefined || gate.honoursCookie({ host: headers.get('host') ?? undefined, origin })) return undefined;
  return `Origin ${JSON.stringify(origin)} may not use the mdp_auth cookie: only this server's own pages, loopback pages and --allow-origin origins may`;
}

export function createAuthRoutes(gate: AuthGate, sameSite: CookieSameSite = 'lax'): Hono {
  const app = new Hono();
  app.post('/', async (c) => {
    const foreign = foreignPage(gate, c.req.raw.headers);
    if (foreign) return c.json({ error: foreign }, 403);
    const text = await c.req.text();
    let auth: AuthContext | undefined;
    if (text.trim() !== '') {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return c.json({ error: 'Request body is not valid JSON' }, 400);
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return c.json({ error: 'Request body must be a JSON object' }, 400);
      }
      const raw = (body as { auth?: unknown }).auth;
      if (raw !== undefined) {
        const parsed = parseAuthContext(raw);
        if (!parsed.ok) return c.json({ error: `auth.${parsed.error}` }, 400);
        auth = parsed.value;
      }
    }
    auth ??= requestCredential(gate, headersToMap(c.req.raw.headers));
    if (!auth) return c.json({ error: gate.policy ? NO_AUTH_GUARDED : NO_AUTH }, 400);
    // Under an auth policy a cookie is only minted for a credential the policy accepts (an access
    // token in the body is checked here: the listener prepared only the request's headers).
    if (gate.policy) await gate.prepareAuth(auth);
    if (gate.policy && !gate.allows(auth)) return c.json({ error: 'Unauthorized' }, 401);
    let value: string;
    try {
      value = gate.encodeCookie(auth);
    } catch {
      // The auth schema already refuses deep nesting; this keeps a throw from ever becoming a 500.
      return c.json({ error: 'auth is nested too deeply to be stored in a cookie' }, 400);
    }
    const pairBytes = AUTH_COOKIE_NAME.length + 1 + value.length;
    if (pairBytes > MAX_AUTH_COOKIE_BYTES) {
      return c.json({ error: `auth is too large for a cookie: ${pairBytes} bytes encoded, at most ${MAX_AUTH_COOKIE_BYTES}` }, 400);
    }
    const secure = new URL(c.req.url).protocol === 'https:';
    c.header('cache-control', 'no-store');
    c.header('set-cookie', `${AUTH_COOKIE_NAME}=${value}; ${cookieAttributes(sameSite, secure, AUTH_COOKIE_MAX_AGE_S)}`);
    return c.body(null, 204);
  });
  app.delete('/', (c) => {
    const foreign = foreignPage(gate, c.req.raw.headers);
    if (foreign) return c.json({ error: foreign }, 403);
    const secure = new URL(c.req.url).protocol === 'https:';
    c.header('cache-control', 'no-store');
    c.header('set-cookie', `${AUTH_COOKIE_NAME}=; ${cookieAttributes(sameSite, secure, 0)}`);
    return c.body(null, 204);
  });
  return app;
}
