/**
 * Mirrored clients (SPEC §10): a server that follows a hub registers each of its clients there as
 * `<serverId>.<clientId>` with `metadata.mdpProxy = {serverId, clientId, registeredAt}`.
 */
import type { ClientDescriptor } from './schemas.js';

/** `metadata.mdpProxy` of a mirrored client. */
export interface MdpProxyMetadata {
  readonly serverId: string;
  readonly clientId: string;
  /**
   * When the client registered on its member, ms since the epoch: of two principals' clients with
   * one id, the one registered first keeps it (core's ownership.ts). Absent from older members.
   */
  readonly registeredAt?: number;
}

export function mirroredId(serverId: string, clientId: string): string {
  return `${serverId}.${clientId}`;
}

/**
 * The proxy marker of a descriptor, when it is a mirror: a marker whose ids do not make up the
 * descriptor's own id is not one (any client may put anything in its metadata).
 */
export function proxyMarker(descriptor: Pick<ClientDescriptor, 'id' | 'metadata'>): MdpProxyMetadata | undefined {
  const marker = descriptor.metadata?.mdpProxy;
  if (typeof marker !== 'object' || marker === null) return undefined;
  const { serverId, clientId, registeredAt } = marker as Record<string, unknown>;
  if (typeof serverId !== 'string' || typeof clientId !== 'string') return undefined;
  if (descriptor.id !== mirroredId(serverId, clientId)) return undefined;
  return typeof registeredAt === 'number' && Number.isFinite(registeredAt) ? { serverId, clientId, registeredAt } : { serverId, clientId };
}
