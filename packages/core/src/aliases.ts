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
 * An id that names a registered client always means that client.
 */
import { proxyMarker, type ClientDescriptor } from '@mdp/protocol';

export type IdResolution =
  | { readonly kind: 'exact'; readonly id: string }
  | { readonly kind: 'alias'; readonly id: string }
  | { readonly kind: 'missing' }
  | { readonly kind: 'ambiguous'; readonly candidates: readonly string[] };

type Described = Pick<ClientDescriptor, 'id' | 'metadata'>;

/** The id a client has on the server it is connected to: its own, or the mirrored one's original. */
export function baseId(client: Described): string {
  return proxyMarker(client)?.clientId ?? client.id;
}

/** Whether `requested` names `client` under some other prefix, or bare. */
function reaches(requested: string, client: Described): boolean {
  const base = baseId(client);
  return requested === base || requested.endsWith(`.${base}`);
}

/** Resolve an id against the clients registered now (`clients` is only read when `requested` is not one of them). */
export function resolveClientId(requested: string, has: (id: string) => boolean, clients: () => Iterable<Described>): IdResolution {
  if (has(requested)) return { kind: 'exact', id: requested };
  const candidates: string[] = [];
  for (const client of clients()) if (client.id !== requested && reaches(requested, client)) candidates.push(client.id);
  if (candidates.length === 1) return { kind: 'alias', id: candidates[0] as string };
  return candidates.length === 0 ? { kind: 'missing' } : { kind: 'ambiguous', candidates: candidates.sort() };
}

/**
 * The other ids that reach each of `clients` unambiguously: a mirror's bare id, when no other client
 * has it or mirrors it too.
 */
export function aliasFinder(clients: readonly Described[]): (client: Described) => string[] {
  const ids = new Set<string>();
  const bases = new Map<string, number>();
  for (const client of clients) {
    ids.add(client.id);
    const base = baseId(client);
    bases.set(base, (bases.get(base) ?? 0) + 1);
  }
  return (client) => {
    const base = baseId(client);
    return base !== client.id && !ids.has(base) && bases.get(base) === 1 ? [base] : [];
  };
}
