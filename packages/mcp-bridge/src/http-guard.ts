/**
 * DNS-rebinding guard of the Streamable HTTP endpoint. A page on `evil.example` whose name is made
 * to resolve to 127.0.0.1 can reach a loopback server from the user's browser; its requests still
 * carry `Host: evil.example` and `Origin: http://evil.example`. So:
 *
 *   - Host: loopback names (localhost, 127.x.x.x, [::1]) always; other names on a loopback server
 *     only when configured; on a server bound wider, any unless hosts are configured.
 *   - Origin (sent by browsers): absent, a loopback origin, or one allowed by configuration.
 */

export interface OriginPolicy {
  /** Host names (no port) the Host header may name besides loopback names; `undefined`: any. */
  readonly allowedHosts: readonly string[] | undefined;
  /** Origins allowed besides loopback ones, e.g. `https://agent.example.com`. */
  readonly allowedOrigins: readonly string[];
}

/** Whether `hostname` (no port; IPv6 in brackets) names this machine. */
export function isLoopbackHostname(hostname: string): boolean {
  const name = hostname.toLowerCase();
  return name === 'localhost' || name.endsWith('.localhost') || name === '[::1]' || /^127(\.\d{1,3}){3}$/.test(name);
}

/** The host name of a Host header value, without the port; undefined when malformed. */
export function hostnameOf(host: string): string | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^\s:/@[\]]+)(?::\d{1,5})?$/i.exec(host.trim());
  return match?.[1]?.toLowerCase();
}

function normalOrigin(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.origin === 'null' ? undefined : url.origin;
  } catch {
    return undefined;
  }
}

/** The policy of a server bound to `bindHost`, with what configuration adds. */
export function originPolicyFor(bindHost: string, extra: { allowedHosts?: readonly string[]; allowedOrigins?: readonly string[] } = {}): OriginPolicy {
  const hosts = (extra.allowedHosts ?? []).map((h) => h.toLowerCase());
  const bound = bindHost === '::1' ? '[::1]' : bindHost;
  return {
    allowedHosts: isLoopbackHostname(bound) || hosts.length > 0 ? hosts : undefined,
    allowedOrigins: (extra.allowedOrigins ?? []).map((o) => normalOrigin(o) ?? o),
  };
}

/** Why a request with these headers is refused, or undefined when it may go on. */
export function originProblem(headers: { readonly host: string | null; readonly origin: string | null }, policy: OriginPolicy): string | undefined {
  if (policy.allowedHosts) {
    const hostname = headers.host === null ? undefined : hostnameOf(headers.host);
    if (hostname === undefined) return 'Forbidden: missing or malformed Host header';
    // A rebound name always arrives in Host; a loopback name never is one.
    if (!isLoopbackHostname(hostname) && !policy.allowedHosts.includes(hostname)) return `Forbidden: Host ${JSON.stringify(headers.host)} is not allowed`;
  }
  if (headers.origin === null) return undefined;
  const origin = normalOrigin(headers.origin);
  if (origin !== undefined) {
    const hostname = hostnameOf(new URL(origin).host);
    if ((hostname !== undefined && isLoopbackHostname(hostname)) || policy.allowedOrigins.includes(origin)) return undefined;
  }
  return `Forbidden: Origin ${JSON.stringify(headers.origin)} is not allowed`;
}
