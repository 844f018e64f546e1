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
 *   x                           another principal than the owner   refused: x lives on that member
 *                               of a mirror `<member>.x`
 *
 * A mirror link proves it is `<member>` with the cluster secret when it connects (the server's
 * cluster feature checks it); it carries the principal of the client it mirrors, so that principal
 * (reconnecting here after a failover) may still register x.
 *
 * Without a policy the principal is where a connection comes from ({@link originPrincipal}): a web
 * page's `Origin`, or nothing for a program on this machine (no `Origin`). A page may replace only
 * ids its own origin holds; a local program replaces any id, as on the servers in use today. So a
 * page of another site can neither take a local app's id nor another site's (SPEC §4). A proven
 * mirror link is its member's peer without a policy too, under the principal of the client it
 * mirrors, so the rows above keep a follower's ids for their owner on the hub as well.
 */
import { proxyMarker, type ClientDescriptor } from '@mdp/protocol';
import type { IsServerId } from './aliases.js';
import { randomUuid } from './uuid.js';

/**
 * Whether `origin` (an `Origin` header) is the opaque origin `null`, which browsers send for pages
 * of sandboxed iframes, `file:` and `data:` URLs, and after some redirects. Any site can make one
 * (a sandboxed iframe of its own), and it is same-origin with nothing, not even another `null`.
 */
export function isOpaqueOrigin(origin: string | undefined): boolean {
  return origin === 'null';
}

/**
 * The principal of a connection without an auth policy: its web page's origin, or `undefined` for a
 * program that sends no `Origin` (the local machine, which may replace any id). A page of the
 * opaque origin is a principal of its own, one per connection: two `null` pages share nothing.
 */
export function originPrincipal(origin: string | undefined): string | undefined {
  if (origin === undefined) return undefined;
  return isOpaqueOrigin(origin) ? `origin:null#${randomUuid()}` : `origin:${origin}`;
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

/** A mirror's owner as the rules see it: the member it lives on and the principal it belongs to. */
export interface MirrorOwner {
  readonly serverId: string;
  readonly principal: string | undefined;
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
  /** Owners of the trusted mirrors of this id held by other sessions (`<member>.<id>`). */
  readonly mirrors: Iterable<MirrorOwner>;
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
  if (holder && holder.principal !== registrant.principal) return HELD;
  for (const mirror of facts.mirrors) {
    if (mirror.principal !== registrant.principal) return HELD;
  }
  return undefined;
}

/** SPEC §4's refusal, also when the holder is on another member of the cluster. */
export const HELD = 'Client id held by another principal';
