/** URLs the server advertises. Wildcard binds advertise the host the request came in on. */
import { metaEndpoints, type MetaEndpoints } from '@mdp/protocol';

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

export function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** The endpoints of the metadata document, plus the plain HTTP base. */
export type ServerUrls = MetaEndpoints & { readonly http: string };

export function serverUrls(authority: string): ServerUrls {
  return { http: `http://${authority}`, ...metaEndpoints(authority) };
}

/** The `host:port` a client should use: the bound one, or the request's Host for wildcard binds. */
export function advertisedAuthority(boundHost: string, port: number, requestHost: string | undefined): string {
  if (WILDCARD_HOSTS.has(boundHost) && requestHost) return requestHost;
  const host = WILDCARD_HOSTS.has(boundHost) ? '127.0.0.1' : boundHost;
  return `${formatHost(host)}:${port}`;
}
