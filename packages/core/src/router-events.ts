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
  private readonly changeListeners = new Set<(clientId: string) => void>();

  constructor(private readonly logger: Logger) {}

  onClient(listener: (event: ClientEvent) => void): () => void {
    this.clientListeners.add(listener);
    return () => this.clientListeners.delete(listener);
  }

  onSession(listener: (event: SessionEvent) => void): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  /** Any client id whose holder or catalog changed, here or on another node. */
  onChange(listener: (clientId: string) => void): () => void {
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
    if (this.changeListeners.size > 0) this.emitChange(event.type === 'unregistered' ? event.clientId : event.client.id);
  }

  emitChange(clientId: string): void {
    for (const listener of [...this.changeListeners]) {
      try {
        listener(clientId);
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
