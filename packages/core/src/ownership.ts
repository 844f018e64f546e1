/**
 * Who may register a client id under an auth policy (SPEC §4, extended to a cluster). An id belongs
 * to the principal that registered it; in a cluster, a follower mirrors its clients into the leader
 * as `<serverId>.<clientId>` (aliases.ts), so the leader must also keep what it only sees mirrored:
 *
 *   registration of            from                              answer
 *   <member>.x (marked or not)  a session that proved it is        accepted; replaces whoever held
 *                               <member> (a mirror link)           the id (that member's to give)
 *   <member>.x (marked or not)  anyone else                        refused: the member's ids
 *   x                           another principal than x's holder  refused (SPEC §4)
 *   x                           anyone, while a mirror <member>.x  accepted: owner-first (below)
 *                               is registered
 *
 * Owner-first: a bare id registered on this server always answers for `x` (an id that names a
 * registered client means that client, aliases.ts), and a member's client `x` stays reachable as
 * `<member>.x`, which nobody else can take. Whichever arrives first, the two end the same: both
 * listed, `x` reaching the bare one. Refusing another principal's bare `x` while a mirror of it is
 * registered would not protect the mirror: registered first (before the mirror, or in the moments
 * after a failover, before the members' mirrors come back) that `x` would keep the id all the same,
 * and the outcome would hang on arrival order. A rule that closed the bare holder when a mirror arrived would let any principal of any member
 * take `x` from whoever holds it here, which SPEC §4 forbids on one server; SPEC §4's "newest wins"
 * across members would close clients on every failover (each member's mirrors register again). So
 * the id each member's client keeps for certain is its prefixed one; the router logs a bare id that
 * shadows a mirror (`client.mirror_shadowed`, at warn when the two principals differ).
 *
 * A mirror link proves it is `<member>` with the cluster secret when it connects (the server's
 * cluster feature checks it), and carries the principal of the client it mirrors.
 *
 * Without a policy the principal is where a connection comes from ({@link originPrincipal}): a web
 * page's `Origin`, or nothing for a program on this machine (no `Origin`). A page may replace only
 * ids its own origin holds; a local program replaces any id, as on the servers in use today. So a
 * page of another site can neither take a local app's id nor another site's (SPEC §4).
 */
import { proxyMarker, type ClientDescriptor } from '@mdp/protocol';
import type { IsServerId } from './aliases.js';

/**
 * The principal of a connection without an auth policy: its web page's origin, or `undefined` for a
 * program that sends no `Origin` (the local machine, which may replace any id).
 */
export function originPrincipal(origin: string | undefined): string | undefined {
  return origin === undefined ? undefined : `origin:${origin}`;
}

/** What the rules need of a session. */
export interface Registrant {
  /**
   * Under an auth policy, who opened it; without one, its page's origin ({@link originPrincipal}),
   * `undefined` for a local program.
   */
  readonly principal: string | undefined;
  /** The cluster member it proved it is a mirror link of, if any. */
  readonly peer: string | undefined;
}

/** The id of the member whose mirrors `id` is named like (`<member>.<clientId>`), if any. */
export function memberPrefixOf(id: string, isServerId: IsServerId): string | undefined {
  for (let dot = id.indexOf('.'); dot > 0; dot = id.indexOf('.', dot + 1)) {
    const prefix = id.slice(0, dot);
    if (dot < id.length - 1 && isServerId(prefix)) return prefix;
  }
  return undefined;
}

/**
 * The member a trusted mirror registered by `registrant` lives on, and the id it mirrors: only a
 * proven link's registration naming its own member in its proxy marker.
 */
export function trustedMirror(descriptor: Pick<ClientDescriptor, 'id' | 'metadata'>, registrant: Registrant): { readonly serverId: string; readonly clientId: string } | undefined {
  if (registrant.peer === undefined) return undefined;
  const marker = proxyMarker(descriptor);
  return marker !== undefined && marker.serverId === registrant.peer ? marker : undefined;
}

export interface RegistrationFacts {
  readonly descriptor: Pick<ClientDescriptor, 'id' | 'metadata'>;
  readonly registrant: Registrant;
  /** The session holding the id now, when it is another one. */
  readonly holder: Registrant | undefined;
  readonly isServerId: IsServerId;
}

/** Why the registration is refused, or `undefined` when it may go on (replacing the holder). */
export function registrationRefusal(facts: RegistrationFacts): string | undefined {
  const { descriptor, registrant, holder } = facts;
  if (registrant.principal === undefined) return undefined;
  const member = memberPrefixOf(descriptor.id, facts.isServerId);
  if (member !== undefined) {
    if (registrant.peer !== member) return `Client id ${JSON.stringify(descriptor.id)} is a mirror of cluster member ${JSON.stringify(member)}: only that member registers it`;
    return undefined;
  }
  // Owner-first: trusted mirrors of this id (`<member>.<id>`) are no holders of it here.
  if (holder && holder.principal !== registrant.principal) return HELD;
  return undefined;
}

/** SPEC §4's refusal. */
export const HELD = 'Client id held by another principal';
