/**
 * The router's event streams, with listeners that may throw (logged): clients of this node,
 * sessions, and client changes by id wherever the client lives (this node's events and those of the
 * fleet's other nodes, remote.ts).
 */
import type { ClientEvent } from './client-registry.js';
import type { Logger } from './logger.js';
import type { Session } from './session.js';

/**
 * A session opened or ended, as `Router.onSessionEvent` reports it: `end` comes once per session,
 * after its client was removed and its pending calls failed, with the reason it ended.
 */
export type SessionEvent = { readonly type: 'open'; readonly session: Session } | { readonly type: 'end'; readonly session: Session; readonly reason: string };

export class RouterEvents {
  private readonly clientListeners = new Set<(event: ClientEvent) => void>();
  private readonly sessionListeners = new Set<(event: SessionEvent) => void>();
  /** Batch listeners: each call names the ids of one change (one client, or a whole node's). */
  private readonly changeListeners = new Set<(clientIds: readonly string[]) => void>();

  constructor(private readonly logger: Logger) {}

  onClient(listener: (event: ClientEvent) => void): () => void {
    this.clientListeners.add(listener);
    return () => this.clientListeners.delete(listener);
  }

  onSession(listener: (event: SessionEvent) => void): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  /** Any client id whose holder or catalog changed, here or on another node, one id at a time. */
  onChange(listener: (clientId: string) => void): () => void {
    return this.onChanges((clientIds) => {
      for (const id of clientIds) listener(id);
    });
  }

  /**
   * The same changes in batches: one call for the ids of one change, which names every client of a
   * node of the fleet that came up or died (thousands of ids) as one.
   */
  onChanges(listener: (clientIds: readonly string[]) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  emitClient(event: ClientEvent): void {
    for (const listener of this.clientListeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.error('client_event.listener_failed', { error });
      }
    }
    if (this.changeListeners.size > 0) this.emitChanges([event.type === 'unregistered' ? event.clientId : event.client.id]);
  }

  emitChanges(clientIds: readonly string[]): void {
    if (clientIds.length === 0) return;
    for (const listener of [...this.changeListeners]) {
      try {
        listener(clientIds);
      } catch (error) {
        this.logger.error('client_event.listener_failed', { error });
      }
    }
  }

  emitSession(event: SessionEvent): void {
    if (this.sessionListeners.size === 0) return;
    for (const listener of [...this.sessionListeners]) {
      try {
        listener(event);
      } catch (error) {
        this.logger.error('session_event.listener_failed', { error });
      }
    }
  }
}
