import { metaEndpoints } from '@mdp/protocol';
/** URLs the server advertises. Wildcard binds advertise the host the request came in on. */

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

export function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export interface ServerUrls {
  readonly http: string;
  readonly ws: string;
  readonly httpLoop: string;
  readonly auth: string;
  readonly meta: string;
  readonly cluster: string;
}

export function serverUrls(authority: string): ServerUrls {
  return { http: `http://${authority}`, ...metaEndpoints(authority) };
}

/** The `host:port` a client should use: the bound one, or the request's Host for wildcard binds. */
export function advertisedAuthority(boundHost: string, port: number, requestHost: string | undefined): string {
  if (WILDCARD_HOSTS.has(boundHost) && requestHost) return requestHost;
  const host = WILDCARD_HOSTS.has(boundHost) ? '127.0.0.1' : boundHost;
  return `${formatHost(host)}:${port}`;
}
