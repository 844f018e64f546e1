/**
 * Who may register a client id (SPEC §4, extended to a cluster). An id belongs to the principal that
 * registered it first; in a cluster, a follower mirrors its clients into the leader as
 * `<serverId>.<clientId>` (aliases.ts), so the leader also keeps what it only sees mirrored:
 *
 *   registration of            from                              answer
 *   <member>.x (marked or not)  a session that proved it is        accepted; replaces whoever held
 *                               <member> (a mirror link)           the id (that member's to give)
 *   <member>.x (marked or not)  anyone else                        refused: the member's ids
 *   x                           another principal than x's holder  refused (SPEC §4)
 *   x                           another principal than the owner   refused: x was registered first,
 *                               of a mirror <member>.x             on that member
 *   <member>.x, a mirror of x   while another principal holds a    the earlier registration keeps
 *                               bare x here                        x ({@link mirrorOutranks})
 *
 * Owner-first: of two principals' clients with one id, the one registered first keeps it, wherever
 * each registered and whichever reaches the leader first. A mirror carries when its client
 * registered on its member (`mdpProxy.registeredAt`), so a bare `x` registered on the leader after
 * a follower's client `x` but before that client's mirror arrived loses `x` when the mirror comes
 * (its session is closed 4403), just as it would have been refused had the mirror been first. The
 * same principal's clients are one owner's: its bare `x` and its mirror `<member>.x` both stay, the
 * bare one answering for `x` (SPEC §4's "newest wins" across members would close clients at every
 * failover, when each member's mirrors register again); the router logs a bare id that shadows a
 * mirror (`client.mirror_shadowed`).
 *
 * A mirror link proves it is `<member>` with the cluster secret when it connects (the server's
 * cluster feature checks it), and carries the principal of the client it mirrors.
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
export function trustedMirror(
  descriptor: Pick<ClientDescriptor, 'id' | 'metadata'>,
  registrant: Registrant,
): { readonly serverId: string; readonly clientId: string; readonly registeredAt?: number } | undefined {
  if (registrant.peer === undefined) return undefined;
  const marker = proxyMarker(descriptor);
  return marker !== undefined && marker.serverId === registrant.peer ? marker : undefined;
}

/** A mirror's owner as the rules see it: the principal it belongs to. */
export interface MirrorOwner {
  readonly principal: string | undefined;
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
    if (registrant.peer !== member)
      return `Client id ${JSON.stringify(descriptor.id)} is a mirror of cluster member ${JSON.stringify(member)}: only that member registers it`;
    return undefined;
  }
  if (holder && holder.principal !== registrant.principal) return HELD;
  // Owner-first: a member's client registered the id before this registration.
  for (const mirror of facts.mirrors) if (mirror.principal !== registrant.principal) return HELD;
  return undefined;
}

/** An owner of an id: its principal and when its client registered (ms since the epoch). */
export interface IdOwner {
  readonly principal: string | undefined;
  readonly registeredAt: number;
}

/**
 * Whether a member's client `x`, arriving here as a trusted mirror, takes `x` from the bare holder
 * here (whose session is then closed 4403). Never between one principal's clients (both stay);
 * without a policy a local program's (no principal) takes a page's, never the reverse; otherwise
 * the client registered first keeps the id (owner-first), ties to the holder.
 */
export function mirrorOutranks(holder: IdOwner, mirror: IdOwner): boolean {
  if (holder.principal === mirror.principal) return false;
  if (mirror.principal === undefined) return true;
  if (holder.principal === undefined) return false;
  return mirror.registeredAt < holder.registeredAt;
}

/** SPEC §4's refusal. */
export const HELD = 'Client id held by another principal';
