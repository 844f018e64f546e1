/**
 * What each message a client sends does (SPEC §3, §4): answers go to the call table, registrations
 * and catalog changes to the registry, pings are answered. The router hands every parsed message of
 * an open session here.
 */
import type { ClientToServerMessage } from '@mdp/protocol';
import type { CallTable } from './call-table.js';
import type { ClientRegistry } from './client-registry.js';
import type { Clock } from './clock.js';
import { MdpError } from './errors.js';
import type { Logger } from './logger.js';
import { deliver, type Session } from './session.js';

export interface MessageParts {
  readonly calls: CallTable;
  readonly registry: ClientRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** Act on one message of `session`; throws MdpError (the transport answers it) for a closed session or a refused change. */
export function handleClientMessage({ calls, registry, clock, logger }: MessageParts, session: Session, message: ClientToServerMessage): void {
  if (session.closed) throw new MdpError('transport_error', 'Session is closed');
  session.touch();
  switch (message.type) {
    case 'callClientResult':
      calls.answer(session, message);
      return;
    case 'registerClient':
      registry.register(session, message.client, message.auth);
      return;
    case 'updateClientCatalog':
      registry.updateCatalog(session, message.clientId, message.paths);
      return;
    case 'unregisterClient':
      if (session.client && session.client.id === message.clientId) registry.remove(session.client, 'client unregistered');
      return;
    case 'ping':
      deliver(session, { type: 'pong', timestamp: message.timestamp ?? clock.wallNow() }, logger);
      return;
    case 'pong':
      return;
  }
}
