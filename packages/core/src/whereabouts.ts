/**
 * Where a client lives (SPEC §16): a session of this node, or another node of the fleet once a
 * directory is attached (remote.ts). The router's lookups that span the fleet, as `router.fleet`:
 * the ways in (host contract, skill routes) ask here and never know where a client lives. A client
 * of this node wins over a remote one of the same id.
 */
import { concretePathProblem, type EndpointMethod } from '@mdp/protocol';
import type { ClientInfo } from './client-registry.js';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import type { ResolvedTarget } from './path-index.js';
import type { CallRecord } from './call-table.js';
import { RemoteCallHandle, RemoteClients, remoteOrigin, type RemoteChange, type RemoteDirectory } from './remote.js';

/**
 * A client wherever it lives, without a remote one's catalog: what ownership, tenancy and the
 * readers' origin checks need. `descriptor` only for a client of this node; `node` only for another's.
 */
export interface LocatedClient {
  readonly id: string;
  readonly principal: string | undefined;
  readonly origin: string | undefined;
  readonly descriptor?: ClientInfo['descriptor'];
  readonly node?: string | undefined;
}

/** A value now, or later (a remote client's catalog is fetched from its node). */
export type Maybe<T> = T | Promise<T>;

/** What the fleet's lookups need of this node: its own clients (the router). */
export interface LocalClients {
  hasClient(clientId: string): boolean;
  getClient(clientId: string): ClientInfo | undefined;
  findTarget(clientId: string, method: EndpointMethod, path: string): ResolvedTarget | undefined;
  findSkillRead(clientId: string, name: string): ResolvedTarget | undefined;
}

export interface WhereaboutsOptions {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly invocationTimeoutMs: number;
  readonly onCallEnd?: ((record: CallRecord) => void) | undefined;
  /** Told of the client ids each fleet change names, as one batch (the router's change events). */
  readonly changed: (clientIds: readonly string[]) => void;
}

export class Whereabouts {
  private remoteClients: RemoteClients | undefined;

  constructor(
    private readonly local: LocalClients,
    private readonly options: WhereaboutsOptions,
  ) {}

  /**
   * Reach the clients of a fleet's other nodes through `directory` (remote.ts, SPEC §16). Returns
   * the detach, which ends the remote calls in flight. One directory at a time.
   */
  attach(directory: RemoteDirectory): () => void {
    if (this.remoteClients) throw new Error('A remote directory is attached already');
    const { clock, logger, invocationTimeoutMs, onCallEnd, changed } = this.options;
    const remote = new RemoteClients(directory, { clock, logger, invocationTimeoutMs, onCallEnd });
    this.remoteClients = remote;
    const off = directory.onChange((changes) => {
      const ids = changedIds(changes);
      if (ids.length > 0) changed(ids);
    });
    return () => {
      off();
      if (this.remoteClients !== remote) return;
      this.remoteClients = undefined;
      remote.close();
    };
  }

  /** Whether a fleet directory is attached. */
  get attached(): boolean {
    return this.remoteClients !== undefined;
  }

  /** Calls this node sent to clients of other nodes and still waits for. */
  get pendingCount(): number {
    return this.remoteClients?.pendingCount ?? 0;
  }

  /** The remote part, when `clientId` is no client of this node but another node's. */
  remoteOf(clientId: string): RemoteClients | undefined {
    const remote = this.remoteClients;
    return remote && !this.local.hasClient(clientId) && remote.get(clientId) !== undefined ? remote : undefined;
  }

  /** Who holds `clientId` on another node, for ownership (whatever this node holds). */
  remoteHolder(clientId: string): { principal: string | undefined; peer: undefined } | undefined {
    const held = this.remoteClients?.get(clientId);
    return held && { principal: held.principal, peer: undefined };
  }

  /** Why the fleet refuses `principal` the id `clientId`, or undefined (remote.ts). */
  registrationProblem(clientId: string, principal: string | undefined): string | undefined {
    return this.remoteClients?.registrationProblem(clientId, principal);
  }

  /** Who holds `clientId`: a session here, or another node of the fleet; undefined when none. */
  locate(clientId: string): LocatedClient | undefined {
    const info = this.local.getClient(clientId);
    if (info) return info;
    const remote = this.remoteClients?.get(clientId);
    return remote && { id: remote.id, principal: remote.principal, origin: remoteOrigin(remote), node: remote.node };
  }

  /**
   * A client and its catalog wherever it lives: now for one of this node, once its catalog is
   * fetched for one of another node. Rejects (MdpError `not_ready`, `transport_error`, `timeout`)
   * only when that node cannot be asked.
   */
  describe(clientId: string): Maybe<ClientInfo | undefined> {
    const local = this.local.getClient(clientId);
    if (local) return local;
    const remote = this.remoteOf(clientId);
    return remote ? remote.catalog(clientId).then((found) => found?.info) : undefined;
  }

  /** The router's `findTarget` wherever the client lives (see {@link describe}). */
  locateTarget(clientId: string, method: EndpointMethod, path: string): Maybe<ResolvedTarget | undefined> {
    if (this.local.hasClient(clientId)) return this.local.findTarget(clientId, method, path);
    const remote = this.remoteOf(clientId);
    if (!remote || concretePathProblem(path) !== undefined) return undefined;
    const index = remote.cachedIndex(clientId);
    if (index) return index.resolve(method, path);
    return remote.catalog(clientId).then((found) => found?.index.resolve(method, path));
  }

  /** The router's `findSkillRead` wherever the client lives (see {@link describe}). */
  locateSkillRead(clientId: string, name: string): Maybe<ResolvedTarget | undefined> {
    if (this.local.hasClient(clientId)) return this.local.findSkillRead(clientId, name);
    const remote = this.remoteOf(clientId);
    if (!remote) return undefined;
    const index = remote.cachedIndex(clientId);
    if (index) return index.resolveSkillRead(name);
    return remote.catalog(clientId).then((found) => found?.index.resolveSkillRead(name));
  }

  /** The clients of the fleet's other nodes (none outside a fleet), without those of this node. */
  *remoteClientIds(): Iterable<string> {
    const remote = this.remoteClients;
    if (!remote) return;
    for (const client of remote.list()) if (!this.local.hasClient(client.id)) yield client.id;
  }

  /**
   * A handle for a wait ahead of a call (a remote client's catalog being fetched) that the
   * router's `cancel` ends like a call: pass its `signal` to the call that follows.
   */
  waitHandle(): RemoteCallHandle {
    return new RemoteCallHandle();
  }

  /** Wait for the remote calls in flight (the router's drain); undefined outside a fleet. */
  drain(): Promise<void> | undefined {
    return this.remoteClients?.drain();
  }

  close(): void {
    this.remoteClients?.close();
  }
}

/** The client ids a batch of fleet changes names, in order (a node's change names all its clients). */
export function changedIds(changes: readonly RemoteChange[]): readonly string[] {
  const [only] = changes;
  if (changes.length === 1 && only && 'clientIds' in only) return only.clientIds;
  const ids: string[] = [];
  for (const change of changes) {
    if ('clientIds' in change) for (const id of change.clientIds) ids.push(id);
    else ids.push(change.clientId);
  }
  return ids;
}
