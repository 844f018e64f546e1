/**
 * Who may use the server's privileged HTTP surfaces (the host API, the inspector, MCP) from a
 * browser. Two attacks come through a user's browser:
 *
 *   - a page of another site calls the server (cross-origin): its requests carry that site's
 *     `Origin`, so the Origin must be a loopback origin, this server's own, or one configured;
 *   - DNS rebinding: a page on `evil.example` whose name is made to resolve to 127.0.0.1 reaches a
 *     loopback server as its own origin; its requests still carry `Host: evil.example`. So on a
 *     loopback server the Host must be a loopback name (localhost, 127.x.x.x, [::1]) or one
 *     configured; on a server bound wider, any Host passes unless hosts are configured.
 *
 * Callers that are not browsers (scripts, agents, curl) send no Origin and a Host they were given.
 */
import { urlHost } from './url-host.js';

export interface OriginPolicy {
  /** Host names (no port) the Host header may name besides loopback names; `undefined`: any. */
  readonly allowedHosts: readonly string[] | undefined;
  /** Origins allowed besides loopback ones and the server's own, e.g. `https://agent.example.com`. */
  readonly allowedOrigins: readonly string[];
}

/** Loopback names in their canonical spelling (IPv4-mapped 127.x.x.x included). */
const LOOPBACK_NAME = /^(?:localhost|.+\.localhost|\[::1\]|127(?:\.\d{1,3}){3}|\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\])$/;
/** An IP address in a spelling the URL parser may rewrite (`127.1`, `0x7f.0.0.1`, `[0:0::1]`). */
const IP_SPELLING = /^(?:[0-9a-fx.]+|\[[0-9a-f:.]+\])$/;

/**
 * Whether `hostname` (no port; IPv6 in brackets) names this machine, however an address is spelt:
 * addresses are read as the URL parser (and so a browser, and node's `listen`) reads them, so
 * `127.1`, `2130706433` and `[0:0:0:0:0:0:0:1]` are loopback too.
 */
export function isLoopbackHostname(hostname: string): boolean {
  const name = hostname.toLowerCase();
  if (LOOPBACK_NAME.test(name)) return true;
  if (!IP_SPELLING.test(name)) return false;
  try {
    return LOOPBACK_NAME.test(new URL(`http://${name}/`).hostname);
  } catch {
    return false;
  }
}

/**
 * Whether a host to bind or dial (IPv6 with or without brackets) is a loopback address or name: the
 * one test for "this server is only reachable from this machine".
 */
export function isLoopbackHost(host: string): boolean {
  return isLoopbackHostname(urlHost(host));
}

/** Whether `hostname` is an IP address (IPv6 in brackets) rather than a DNS name. */
function isIpLiteral(hostname: string): boolean {
  return hostname.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}

/** The host name of a Host header value, without the port; undefined when malformed. */
export function hostnameOf(host: string): string | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^\s:/@[\]]+)(?::\d{1,5})?$/i.exec(host.trim());
  return match?.[1]?.toLowerCase();
}

function normalOrigin(origin: string): URL | undefined {
  try {
    const url = new URL(origin);
    return url.origin === 'null' ? undefined : url;
  } catch {
    return undefined;
  }
}

/** The policy of a server bound to `bindHost`, with what configuration adds. */
export function originPolicyFor(bindHost: string, extra: { allowedHosts?: readonly string[]; allowedOrigins?: readonly string[] } = {}): OriginPolicy {
  const hosts = (extra.allowedHosts ?? []).map((h) => h.toLowerCase());
  return {
    allowedHosts: isLoopbackHost(bindHost) || hosts.length > 0 ? hosts : undefined,
    allowedOrigins: (extra.allowedOrigins ?? []).map((o) => normalOrigin(o)?.origin ?? o),
  };
}

/**
 * Why a request is one a page of another site made without saying so, or undefined. A browser
 * sends no `Origin` with a GET it makes for a `<script>`, `<img>` or `<link>` element or a no-cors
 * fetch, but it marks every request with Fetch Metadata, which pages cannot set: such a request from
 * another site (`Sec-Fetch-Site: cross-site` or `same-site`) is refused unless it is the user's own
 * top-level navigation (a link they followed: the page gets nothing of it). Without this, any site
 * could have the server call a local client, and learn from the element's load or error event
 * whether it exists. Programs send no Fetch Metadata; older browsers neither (then only Origin helps).
 */
export function crossSiteWithoutOrigin(headers: Readonly<Record<string, string | undefined>>): string | undefined {
  if (headers['origin'] !== undefined) return undefined;
  const site = headers['sec-fetch-site'];
  if (site !== 'cross-site' && site !== 'same-site') return undefined;
  if (headers['sec-fetch-mode'] === 'navigate' && headers['sec-fetch-dest'] === 'document') return undefined;
  return `Forbidden: a ${site} request without Origin (Sec-Fetch-Mode ${JSON.stringify(headers['sec-fetch-mode'] ?? '')})`;
}

/** Why a request with these headers is refused, or undefined when it may go on. */
export function originProblem(
  headers: { readonly host?: string | null | undefined; readonly origin?: string | null | undefined },
  policy: OriginPolicy,
): string | undefined {
  const hostname = typeof headers.host === 'string' ? hostnameOf(headers.host) : undefined;
  if (policy.allowedHosts) {
    if (hostname === undefined) return 'Forbidden: missing or malformed Host header';
    // A rebound name always arrives in Host; a loopback name never is one.
    if (!isLoopbackHostname(hostname) && !policy.allowedHosts.includes(hostname)) return `Forbidden: Host ${JSON.stringify(headers.host)} is not allowed`;
  }
  if (headers.origin === null || headers.origin === undefined) return undefined;
  const origin = normalOrigin(headers.origin);
  if (origin !== undefined) {
    const originHost = hostnameOf(origin.host);
    if (originHost !== undefined && isLoopbackHostname(originHost)) return undefined;
    if (policy.allowedOrigins.includes(origin.origin)) return undefined;
    // A page this server served itself (the inspector on a LAN address): same authority as the
    // request. Only where that cannot be a rebound name: the Host was checked, or it is an address.
    const checked = policy.allowedHosts !== undefined || (hostname !== undefined && isIpLiteral(hostname));
    if (checked && typeof headers.host === 'string' && origin.host === headers.host.trim().toLowerCase()) return undefined;
  }
  return `Forbidden: Origin ${JSON.stringify(headers.origin)} is not allowed`;
}

/**
 * Why a browser's own credential (the `mdp_auth` cookie, which it sends by itself) must not count on
 * a request with these headers, or undefined when it may. It counts on requests without `Origin`
 * (not a browser, or a same-origin GET) and from pages of this server's own site: a loopback origin
 * (any port), the server's own origin (the request's Host: a page it served, on any name it is
 * reached by), or an `allowedOrigins` one. Any other origin — other sites, `null` (sandboxed
 * frames, files) — is a page of another site: with `SameSite=None` (or on a site that shares the
 * server's registrable domain) the browser would attach the cookie to its requests too.
 *
 * Without `Origin`, a request whose Fetch Metadata says another site's page made it (an `<img>`,
 * `<script>` or `<link>` of its own, a no-cors fetch: {@link crossSiteWithoutOrigin}) is another
 * site's too: with `SameSite=None`, or from a sibling name of the same site, the browser attaches
 * the cookie to those as well. The user's own top-level navigation (a link they followed) counts.
 *
 * The Host itself is not checked: browsers file cookies under the name a request goes to, so a page
 * on a rebound DNS name is sent that name's cookies, never this server's.
 */
export function credentialedOriginProblem(headers: CredentialedHeaders, policy: OriginPolicy): string | undefined {
  const raw = headers.origin;
  if (raw === null || raw === undefined) {
    const metadata = {
      'sec-fetch-site': single(headers['sec-fetch-site']),
      'sec-fetch-mode': single(headers['sec-fetch-mode']),
      'sec-fetch-dest': single(headers['sec-fetch-dest']),
    };
    if (crossSiteWithoutOrigin(metadata) === undefined) return undefined;
    return `A ${metadata['sec-fetch-site']} request without Origin (Sec-Fetch-Mode ${JSON.stringify(metadata['sec-fetch-mode'] ?? '')}): ${OWN_PAGES_ONLY}`;
  }
  const origin = typeof raw === 'string' ? normalOrigin(raw) : undefined;
  if (origin !== undefined) {
    const originHost = hostnameOf(origin.host);
    if (originHost !== undefined && isLoopbackHostname(originHost)) return undefined;
    if (policy.allowedOrigins.includes(origin.origin)) return undefined;
    if (typeof headers.host === 'string' && origin.host === headers.host.trim().toLowerCase()) return undefined;
  }
  return `Origin ${JSON.stringify(typeof raw === 'string' ? raw : raw.join(', '))} is another site's: ${OWN_PAGES_ONLY}`;
}

/** What {@link credentialedOriginProblem} reads of a request. */
export interface CredentialedHeaders {
  readonly host?: string | readonly string[] | null | undefined;
  readonly origin?: string | readonly string[] | null | undefined;
  readonly 'sec-fetch-site'?: string | readonly string[] | null | undefined;
  readonly 'sec-fetch-mode'?: string | readonly string[] | null | undefined;
  readonly 'sec-fetch-dest'?: string | readonly string[] | null | undefined;
}

const OWN_PAGES_ONLY = "the mdp_auth cookie counts only for this server's own pages, loopback pages and allowed origins";

/** A header's one value (a repeated one as joined, which matches no Fetch Metadata value). */
function single(value: string | readonly string[] | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  return typeof value === 'string' ? value : value.join(', ');
}
