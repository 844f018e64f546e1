/** URLs the server advertises. Wildcard binds advertise the host the request came in on. */
import { hostname } from 'node:os';
import { isLoopbackHost, urlHost } from '@mdp/core';
import { metaEndpoints, type MetaEndpoints } from '@mdp/protocol';

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

/** Whether the server bound to `host` is reachable from this machine only (core's one loopback test). */
export function isLoopback(host: string): boolean {
  return isLoopbackHost(host);
}

/**
 * The server id when none is given: the bound `host:port`, or for a wildcard bind the machine's
 * host name and the port (`0.0.0.0:47372` would name every machine alike).
 */
export function defaultServerId(host: string, port: number): string {
  return `${WILDCARD_HOSTS.has(host) ? hostname() : urlHost(host)}:${port}`;
}

/** The endpoints of the metadata document, plus the HTTP base (`https` under TLS). */
export type ServerUrls = MetaEndpoints & { readonly http: string };

export function serverUrls(authority: string, secure = false): ServerUrls {
  return { http: `${secure ? 'https' : 'http'}://${authority}`, ...metaEndpoints(authority, secure) };
}

/** The `host:port` a client should use: the bound one, or the request's Host for wildcard binds. */
export function advertisedAuthority(boundHost: string, port: number, requestHost: string | undefined): string {
  if (WILDCARD_HOSTS.has(boundHost) && requestHost) return requestHost;
  const host = WILDCARD_HOSTS.has(boundHost) ? '127.0.0.1' : boundHost;
  return `${urlHost(host)}:${port}`;
}

/**
 * The `host:port` a reader of a page that lists URLs (`/mdp/meta`, `/SKILL.md`) should use: as
 * `advertisedAuthority`, and when the request came in on a second port (the default one, served
 * while leading) the server's own port, so that the URLs name this server and not whoever holds
 * that port next.
 */
export function readerAuthority(boundHost: string, port: number, hostHeader: string | undefined, localPort: number | undefined): string {
  const requestHost = localPort !== undefined && localPort !== port && hostHeader !== undefined ? withPort(hostHeader, port) : hostHeader;
  return advertisedAuthority(boundHost, port, requestHost);
}

/** A `host[:port]` authority (a Host header) with its port replaced; unchanged when it cannot be read. */
export function withPort(authority: string, port: number): string {
  try {
    return `${new URL(`http://${authority}`).hostname}:${port}`;
  } catch {
    return authority;
  }
}
