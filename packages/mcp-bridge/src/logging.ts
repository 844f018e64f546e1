/**
 * MCP logging (`logging/setLevel`, `notifications/message`): the server's own events, for the
 * sessions that asked. A session hears nothing until it sets a level, then every event at or above
 * it (MCP's eight syslog levels). Events:
 *
 *   logger `mdp.clients`: a client came (info), left (info), changed its catalog or registered
 *     again (debug); more than CLIENT_EVENTS_MAX in one listing are summed up in one message;
 *   logger `mdp.calls`: a call this session made failed (warning): only to that session, since
 *     another agent (maybe another principal) has no business seeing it.
 *
 * Client names are the clients' words: cleaned and capped like every label.
 */
import { ErrorCode, LoggingLevelSchema, McpError, type LoggingLevel, type LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import type { SerializedError } from '@mdp/protocol';
import type { ClientChanges } from './client-changes.js';
import type { CatalogClient } from './surface.js';
import { LABEL_PART_MAX_CHARS, capLine } from './text.js';

export const LOG_LEVELS = LoggingLevelSchema.options;
export type LogLevel = LoggingLevel;

/** Clients named one by one per listing and kind; past it, one message counts them. */
export const CLIENT_EVENTS_MAX = 20;

export type LogMessage = LoggingMessageNotification['params'];

/** Whether a message at `level` reaches a session whose threshold is `threshold` (none set: nothing does). */
export function audible(level: LogLevel, threshold: LogLevel | undefined): boolean {
  return threshold !== undefined && LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}

/** The level a `logging/setLevel` asks for, or an invalid-params error naming the valid ones. */
export function parseLevel(value: unknown): LogLevel {
  const parsed = LoggingLevelSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new McpError(ErrorCode.InvalidParams, `Invalid log level ${JSON.stringify(value)}: one of ${LOG_LEVELS.join(', ')}`);
}

const who = (client: CatalogClient) => ({ clientId: capLine(client.id, LABEL_PART_MAX_CHARS), name: capLine(client.name, LABEL_PART_MAX_CHARS) });

function clientMessages(clients: readonly CatalogClient[], level: LogLevel, event: string, summary: string): LogMessage[] {
  if (clients.length === 0) return [];
  if (clients.length > CLIENT_EVENTS_MAX) {
    const ids = clients.slice(0, CLIENT_EVENTS_MAX).map((client) => capLine(client.id, LABEL_PART_MAX_CHARS));
    return [{ level, logger: 'mdp.clients', data: { event: summary, count: clients.length, clientIds: ids } }];
  }
  return clients.map((client) => ({ level, logger: 'mdp.clients', data: { event, ...who(client) } }));
}

/** The messages one listing's changes make, for every session. */
export function clientEventMessages(changes: ClientChanges): LogMessage[] {
  return [
    ...clientMessages(changes.came, 'info', 'client_connected', 'clients_connected'),
    ...clientMessages(changes.left, 'info', 'client_disconnected', 'clients_disconnected'),
    ...clientMessages(changes.changed, 'debug', 'client_changed', 'clients_changed'),
  ];
}

/** The message of a failed call (a tool, a prompt, a resource read), for the session that made it. */
export function callFailedMessage(what: string, error: Pick<SerializedError, 'code' | 'message'>): LogMessage {
  return { level: 'warning', logger: 'mdp.calls', data: { event: 'call_failed', what, error: { code: error.code, message: error.message } } };
}
