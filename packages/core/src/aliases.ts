/**
 * Client ids that survive a failover (SPEC §12). A follower mirrors its clients into the hub as
 * `<serverId>.<clientId>`; when the hub changes, the same client comes back under another prefix,
 * or bare once its own server leads. An id an agent listed earlier keeps working:
 *
 *   asked for      registered now                 resolves to
 *   hello          127.0.0.1:47373.hello (mirror)  the mirror
 *   A.hello        hello (local)                   hello
 *   A.hello        B.hello (mirror)                B.hello
 *   hello          A.hello, B.hello (two mirrors)  nothing: not_found naming both
 *
 * Only server ids of this cluster make such a prefix (`isServerId`: this server's own and its
 * members'): without an auth policy any client may register a dotted id or claim to be a mirror in
 * its metadata, and must not receive the calls meant for another client. (Under a policy only a
 * member's proven mirror links register its mirrored ids: ownership.ts.) Without a cluster
 * there are no server ids, hence no aliases. An id that names a registered client always means
 * that client.
 */
import { proxyMarker, type ClientDescriptor } from '@mdp/protocol';

export type IdResolution =
  | { readonly kind: 'exact'; readonly id: string }
  | { readonly kind: 'alias'; readonly id: string }
  | { readonly kind: 'missing' }
  | { readonly kind: 'ambiguous'; readonly candidates: readonly string[] };

type Described = Pick<ClientDescriptor, 'id' | 'metadata'>;

/** Whether `id` is the id of a server of this cluster (this one or a member). */
export type IsServerId = (id: string) => boolean;

/** No server ids: no aliases (a server outside any cluster). */
export const NO_SERVER_IDS: IsServerId = () => false;

/** The id a client has on the server it is connected to: a trusted mirror's original, else its own. */
export function baseId(client: Described, isServerId: IsServerId): string {
  const marker = proxyMarker(client);
  return marker !== undefined && isServerId(marker.serverId) ? marker.clientId : client.id;
}

/** Whether `requested` names `client` under a server's prefix, or bare (`client` is a trusted mirror). */
function reaches(requested: string, client: Described, isServerId: IsServerId): boolean {
  const base = baseId(client, isServerId);
  if (requested === base) return true;
  return requested.endsWith(`.${base}`) && isServerId(requested.slice(0, requested.length - base.length - 1));
}

/** Resolve an id against the clients registered now (`clients` is only read when `requested` is not one of them). */
export function resolveClientId(
  requested: string,
  has: (id: string) => boolean,
  clients: () => Iterable<Described>,
  isServerId: IsServerId = NO_SERVER_IDS,
): IdResolution {
  if (has(requested)) return { kind: 'exact', id: requested };
  const candidates: string[] = [];
  for (const client of clients()) if (client.id !== requested && reaches(requested, client, isServerId)) candidates.push(client.id);
  if (candidates.length === 1) return { kind: 'alias', id: candidates[0] as string };
  return candidates.length === 0 ? { kind: 'missing' } : { kind: 'ambiguous', candidates: candidates.sort() };
}

/**
 * The other ids that reach each of `clients` unambiguously: a trusted mirror's bare id, when no
 * other client has it or mirrors it too.
 */
export function aliasFinder(clients: readonly Described[], isServerId: IsServerId = NO_SERVER_IDS): (client: Described) => string[] {
  const ids = new Set<string>();
  const bases = new Map<string, number>();
  for (const client of clients) {
    ids.add(client.id);
    const base = baseId(client, isServerId);
    bases.set(base, (bases.get(base) ?? 0) + 1);
  }
  return (client) => {
    const base = baseId(client, isServerId);
    return base !== client.id && !ids.has(base) && bases.get(base) === 1 ? [base] : [];
  };
}
