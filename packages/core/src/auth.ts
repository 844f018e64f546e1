/**
 * Transport auth (SPEC §7): what a request carries in `Authorization`, the `mdp_auth` cookie and
 * `x-mdp-auth-*` headers, folded into one AuthContext.
 */
import { parseAuthContext, type AuthContext } from '@mdp/protocol';
import { setOwn } from './records.js';

export const AUTH_COOKIE_NAME = 'mdp_auth';
export const AUTH_HEADER_PREFIX = 'x-mdp-auth-';

/** Header map as node gives it: lower-case names, string or string[] values. */
export type HeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

function headerValue(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.join(', ');
}

/** Read one cookie from a Cookie header; `undefined` when absent. */
export function readCookie(cookieHeader: string | undefined, name: string): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Encode an AuthContext as the `mdp_auth` cookie value (base64url of its JSON). */
export function encodeAuthCookie(auth: AuthContext): string {
  return Buffer.from(JSON.stringify(auth), 'utf8').toString('base64url');
}

/** Decode an `mdp_auth` cookie value; `undefined` when it is not a valid AuthContext. */
export function decodeAuthCookie(value: string): AuthContext | undefined {
  try {
    const parsed = parseAuthContext(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
    return parsed.ok ? parsed.value : undefined;
  } catch {
    return undefined;
  }
}

export interface ExtractAuthOptions {
  /** Turns a raw cookie value into an AuthContext; default {@link decodeAuthCookie}. */
  decodeCookie?: (value: string) => AuthContext | undefined;
}

/**
 * Extract the transport auth from request headers. Returns `undefined` when the request carries no
 * credential at all.
 */
export function extractTransportAuth(headers: HeaderMap, options: ExtractAuthOptions = {}): AuthContext | undefined {
  let auth: AuthContext | undefined;
  let copied: Record<string, string> | undefined;
  const copy = (name: string, value: string): void => {
    (copied ??= {})[name] = value;
  };

  const authorization = headerValue(headers.authorization);
  if (authorization) {
    copy('authorization', authorization);
    const trimmed = authorization.trim();
    const space = trimmed.indexOf(' ');
    auth = space > 0 ? { scheme: trimmed.slice(0, space), token: trimmed.slice(space + 1).trim() } : { token: trimmed };
  }

  const cookieHeader = headerValue(headers.cookie);
  // SPEC §7: the raw cookie header is copied whether or not it holds a valid mdp_auth cookie
  // (clients may authenticate with their own cookies, as with the existing servers).
  if (cookieHeader) copy('cookie', cookieHeader);
  const cookie = readCookie(cookieHeader, AUTH_COOKIE_NAME);
  if (cookie !== undefined) {
    const fromCookie = (options.decodeCookie ?? decodeAuthCookie)(cookie);
    if (fromCookie) {
      // An explicit Authorization header wins over the cookie for scheme/token.
      auth = { ...fromCookie, ...auth, headers: { ...fromCookie.headers, ...auth?.headers } };
      if (fromCookie.metadata) auth.metadata = fromCookie.metadata;
    }
  }

  for (const name in headers) {
    if (name.startsWith(AUTH_HEADER_PREFIX)) {
      const value = headerValue(headers[name]);
      if (value !== undefined) copy(name, value);
    }
  }

  if (!auth && !copied) return undefined;
  auth ??= {};
  if (copied) auth.headers = { ...auth.headers, ...copied };
  else if (auth.headers && Object.keys(auth.headers).length === 0) delete auth.headers;
  return auth;
}

/**
 * The headers of a request as HTTP servers receive them: a Fetch `Headers` (Hono and other Fetch
 * runtimes), or node's `IncomingMessage.rawHeaders` (name, value, name, value, … as sent).
 */
export type RequestHeaders = readonly string[] | { forEach(cb: (value: string, name: string) => void): void };

function addHeader(map: Record<string, string>, rawName: string, value: string): void {
  const name = rawName.toLowerCase();
  // Own properties only: a header named `constructor` has no earlier value to join.
  setOwn(map, name, Object.hasOwn(map, name) ? `${map[name]}${name === 'cookie' ? '; ' : ', '}${value}` : value);
}

/**
 * The one map every HTTP adapter gives {@link extractTransportAuth} and the skill reads: lower-case
 * names, a repeated header's values joined by ", " and a repeated `cookie`'s by "; " (the HTTP
 * rule, and what Fetch `Headers` do), so a node handler and a Fetch one see the same request alike.
 * Node's own `req.headers` differs: it keeps only the first of a repeated `Authorization`.
 */
export function headersToMap(headers: RequestHeaders): Record<string, string> {
  const map: Record<string, string> = {};
  if (isRawHeaders(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) addHeader(map, headers[i] as string, headers[i + 1] as string);
  } else {
    headers.forEach((value, name) => {
      addHeader(map, name, value);
    });
  }
  return map;
}

function isRawHeaders(headers: RequestHeaders): headers is readonly string[] {
  return Array.isArray(headers);
}
