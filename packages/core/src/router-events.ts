/** The router's two event streams, clients and sessions, with listeners that may throw (logged). */
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

  constructor(private readonly logger: Logger) {}

  onClient(listener: (event: ClientEvent) => void): () => void {
    this.clientListeners.add(listener);
    return () => this.clientListeners.delete(listener);
  }

  onSession(listener: (event: SessionEvent) => void): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  emitClient(event: ClientEvent): void {
    for (const listener of this.clientListeners) {
      try {
        listener(event);
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
