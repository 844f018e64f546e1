/**
 * JSON text of server-to-client messages. A callClient carries its params, query and headers twice
 * (the path form and the named form's `args`, SPEC §3); they are serialised once and spliced into
 * both places, which matters on the hot path where headers are the bulk of the message.
 */
import type { SerializedError, ServerToClientMessage } from './schemas.js';

/**
 * The error that stands for a client's result that cannot be serialised again. A client's data was
 * parsed from JSON, so this happens only when it nests deeper than `JSON.stringify` can go (about
 * 10,000 levels in V8). Whoever relays the result answers with this error instead of failing silently.
 */
export const UNSENDABLE_DATA_ERROR: SerializedError = Object.freeze({
  code: 'handler_error',
  message: 'The client answered with data that cannot be sent on as JSON (nested too deeply)',
});

const field = (name: string, value: unknown): string => (value === undefined ? '' : `,"${name}":${JSON.stringify(value)}`);

export function stringifyServerMessage(message: ServerToClientMessage): string {
  if (message.type !== 'callClient' || message.args === undefined) return JSON.stringify(message);
  const { args } = message;
  // Only splice when args holds exactly the path form's values; anything else takes the slow path.
  if (args.params !== message.params || args.query !== message.query || args.headers !== message.headers || args.body !== message.body) {
    return JSON.stringify(message);
  }
  const params = field('params', message.params);
  const query = field('query', message.query);
  const body = field('body', message.body);
  const headers = field('headers', message.headers);
  const shared = `${params}${query}${body}${headers}`;
  return (
    `{"type":"callClient","requestId":${JSON.stringify(message.requestId)},"clientId":${JSON.stringify(message.clientId)}` +
    `,"method":${JSON.stringify(message.method)},"path":${JSON.stringify(message.path)}${shared}` +
    `${field('auth', message.auth)}${field('kind', message.kind)}${field('name', message.name)}` +
    `,"args":{${shared.slice(1)}}}`
  );
}
