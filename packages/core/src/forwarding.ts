/**
 * What of a caller's request goes on to the client it calls (SPEC §7: a skill read forwards its
 * request headers and transport auth as `callClient.headers` and `callClient.auth`; a host API call
 * forwards the caller's transport auth when its body names none).
 *
 * Without an auth policy everything goes on as it came, as on the servers in use today: the
 * transport auth is the client's to judge. Under a policy the credential the server verified is
 * the caller's key to this server, and a client (another principal, or anyone who registered a
 * client id) must never hold it: it could act as the caller. So the `Authorization` header and the
 * `mdp_auth` cookie are left out, with all that came out of them (scheme, token, and whatever the
 * sealed cookie held); what the caller sent for clients stays: its other cookies and its
 * `x-mdp-auth-*` headers.
 */
import type { AuthContext } from '@mdp/protocol';
import { AUTH_COOKIE_NAME, extractTransportAuth, type HeaderMap } from './auth.js';

/** Whether one `name=value` part of a Cookie header is the `mdp_auth` cookie. */
function isAuthCookie(part: string): boolean {
  const eq = part.indexOf('=');
  return eq >= 0 && part.slice(0, eq).trim() === AUTH_COOKIE_NAME;
}

/**
 * A Cookie header without the `mdp_auth` cookie (`undefined` when nothing else is left). Repeated
 * Cookie headers joined with ", " (as skill reads join every repeated header) are split there too.
 */
export function withoutAuthCookie(cookie: string): string | undefined {
  if (!cookie.includes(AUTH_COOKIE_NAME)) return cookie;
  const kept: string[] = [];
  for (const part of cookie.split(';')) {
    const rest = part.split(',').filter((piece) => !isAuthCookie(piece));
    if (rest.length > 0 && rest.join(',').trim() !== '') kept.push(rest.join(',').trim());
  }
  return kept.length > 0 ? kept.join('; ') : undefined;
}

/** Request headers without the server's credential: no `authorization`, no `mdp_auth` cookie (others stay). */
export function withoutCredentialHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const { authorization: _authorization, cookie, ...rest } = headers;
  const kept = cookie === undefined ? undefined : withoutAuthCookie(cookie);
  return kept === undefined ? rest : { ...rest, cookie: kept };
}

/** {@link withoutCredentialHeaders} for a node-style header map (values may be arrays). */
function credentialFree(headers: HeaderMap): HeaderMap {
  const { authorization: _authorization, cookie, ...rest } = headers;
  if (cookie === undefined) return rest;
  const kept = withoutAuthCookie(typeof cookie === 'string' ? cookie : cookie.join('; '));
  return kept === undefined ? rest : { ...rest, cookie: kept };
}

/** How a server forwards a caller's credentials to the clients it calls. */
export interface CredentialForwarding {
  /** The transport auth a call carries to the client: from the request's `headers` and the `auth` extracted from them. */
  forwardableAuth(headers: HeaderMap, auth: AuthContext | undefined): AuthContext | undefined;
  /** The request headers a call carries to the client. */
  forwardableHeaders(headers: Record<string, string>): Record<string, string>;
  /**
   * The auth a call carries when the caller named one itself (`given`, e.g. the host API's body
   * `auth`), from the caller's own transport auth `auth`. Default: `given` as it is.
   */
  namedAuth?(given: AuthContext, auth: AuthContext | undefined): AuthContext;
}

/** Without a policy: everything as it came (SPEC §7). */
export const FORWARD_AS_IS: CredentialForwarding = Object.freeze({
  forwardableAuth: (_headers: HeaderMap, auth: AuthContext | undefined) => auth,
  forwardableHeaders: (headers: Record<string, string>) => headers,
});

/**
 * Under a policy: without the credential. The auth is the request's own transport auth read again
 * without it, so nothing of the sealed cookie (opened by the server) reaches a client.
 */
export const FORWARD_WITHOUT_CREDENTIAL: CredentialForwarding = Object.freeze({
  forwardableAuth: (headers: HeaderMap) => extractTransportAuth(credentialFree(headers)),
  forwardableHeaders: withoutCredentialHeaders,
});
