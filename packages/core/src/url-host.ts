/**
 * A host as it is written in a URL or an authority (`host:port`): an IPv6 address in brackets
 * (`::1` → `[::1]`); names, IPv4 addresses and hosts already in brackets unchanged.
 */
export function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
