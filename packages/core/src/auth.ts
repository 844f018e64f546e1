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

/** Turn a Fetch `Headers` into the lower-case map {@link extractTransportAuth} takes. */
export function headersToMap(headers: { forEach(cb: (value: string, name: string) => void): void }): Record<string, string> {
  const map: Record<string, string> = {};
  headers.forEach((value, name) => setOwn(map, name.toLowerCase(), value));
  return map;
}
