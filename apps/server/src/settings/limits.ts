/**
 * The limit settings of `mdp-server` (README "Security and limits"): every limit on peers, calls,
 * catalogs and HTTP connections, each a whole number with its default. A group of the settings
 * table; each sets the option of its own name, or the one limitOption names.
 */
import { MAX_TIMER_MS } from '@mdp/core';
import { wholeNumber } from './values.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';
import { settingGroup } from './table.js';

const count = wholeNumber(1);
const ms = wholeNumber(1, MAX_TIMER_MS);

export const LIMIT_SETTINGS = settingGroup({
  title: 'Limits (a refused peer is told why; everyone else is served as before)',
  settings: {
    maxPendingCalls: {
      flag: 'max-pending-calls',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxPendingCalls,
      help: 'calls waiting for one client; more are answered 503 with Retry-After, unsent',
    },
    maxPathLength: {
      flag: 'max-path-length',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxPathLength,
      help: 'characters in a registered path',
    },
    maxPathSegments: {
      flag: 'max-path-segments',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxPathSegments,
      help: 'segments in a registered path',
    },
    maxCatalogPaths: { flag: 'max-catalog-paths', placeholder: '<n>', schema: count, default: SERVER_DEFAULTS.maxCatalogPaths, help: 'paths in one catalog' },
    maxTotalPaths: {
      flag: 'max-total-paths',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxTotalPaths,
      help: 'paths in all catalogs together; a catalog past it closes 1013 / answers 503 with Retry-After',
    },
    maxDescriptionLength: {
      flag: 'max-description-length',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxDescriptionLength,
      help: 'characters in one description (or other text a client registers: name, contentType…); a longer one closes 1009 / answers 413',
    },
    maxSchemaLength: {
      flag: 'max-schema-length',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxSchemaLength,
      help: 'characters of one inputSchema or outputSchema as JSON (or metadata, other objects); a longer one closes 1009 / answers 413',
    },
    maxCatalogBytes: {
      flag: 'max-catalog-bytes',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxCatalogBytes,
      help: "bytes of one client's descriptor as JSON, paths included; a larger one closes 1009 / answers 413",
    },
    maxTotalCatalogBytes: {
      flag: 'max-total-catalog-bytes',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxTotalCatalogBytes,
      help: 'bytes of all catalogs together (at most ~21 bytes of heap each, 2-5 for most); past it closes 1013 / answers 503 with Retry-After',
    },
    maxClientsPerAddress: {
      flag: 'max-clients-per-address',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxClientsPerAddress,
      help: 'clients registered from one remote address (loopback: every local process); one more closes 4429 / answers 429',
    },
    maxCatalogUpdatesPerMinute: {
      flag: 'max-catalog-updates-per-minute',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxCatalogUpdatesPerMinute,
      help: 'catalog changes per session (a burst of that many, then at that rate); more close 1013 / answer 429',
    },
    maxWsBufferedBytes: {
      flag: 'max-ws-buffered-bytes',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.wsMaxBufferedBytes,
      help: 'bytes a websocket peer may leave unread; a call past it is answered 503 with Retry-After, unsent',
    },
    wsStallTimeoutMs: {
      flag: 'ws-stall-timeout-ms',
      placeholder: '<ms>',
      schema: ms,
      default: SERVER_DEFAULTS.wsStallTimeoutMs,
      help: 'time a websocket peer over --max-ws-buffered-bytes may go without reading; then it is closed 1013 and its calls fail',
    },
    wsRegisterTimeoutMs: {
      flag: 'ws-register-timeout-ms',
      placeholder: '<ms>',
      schema: ms,
      default: SERVER_DEFAULTS.wsRegisterTimeoutMs,
      help: 'time from a websocket handshake to its first registerClient; past it the socket closes 4408',
    },
    maxWsConnections: {
      flag: 'max-ws-connections',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.wsMaxConnections,
      help: 'websocket connections; more upgrades are answered 503',
    },
    maxWsConnectionsPerAddress: {
      flag: 'max-ws-connections-per-address',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.wsMaxConnectionsPerAddress,
      help: 'websocket connections from one remote address',
    },
    maxHttpLoopSessions: {
      flag: 'max-http-loop-sessions',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.httpLoopMaxSessions,
      help: 'HTTP loop sessions; more connects are answered 503',
    },
    maxHttpLoopSessionsPerAddress: {
      flag: 'max-http-loop-sessions-per-address',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.httpLoopMaxSessionsPerAddress,
      help: 'HTTP loop sessions from one remote address',
    },
    httpLoopMaxQueuedMessages: {
      flag: 'http-loop-max-queued-messages',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.httpLoopMaxQueuedMessages,
      help: 'messages queued for one HTTP loop session; a call past it is answered 503 with Retry-After, unsent',
    },
    httpLoopMaxQueuedBytes: {
      flag: 'http-loop-max-queued-bytes',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.httpLoopMaxQueuedBytes,
      help: 'bytes of JSON queued for one HTTP loop session; a call past it is answered 503 with Retry-After, unsent',
    },
    httpHeadersTimeoutMs: {
      flag: 'http-headers-timeout-ms',
      placeholder: '<ms>',
      schema: ms,
      default: SERVER_DEFAULTS.httpHeadersTimeoutMs,
      help: "time to receive a request's headers (or any byte at all); past it 408",
    },
    httpRequestTimeoutMs: {
      flag: 'http-request-timeout-ms',
      placeholder: '<ms>',
      schema: ms,
      default: SERVER_DEFAULTS.httpRequestTimeoutMs,
      help: 'time to receive a whole request; past it 408',
    },
    httpKeepAliveTimeoutMs: {
      flag: 'http-keep-alive-timeout-ms',
      placeholder: '<ms>',
      schema: ms,
      default: SERVER_DEFAULTS.httpKeepAliveTimeoutMs,
      help: 'an idle kept-alive connection is closed after this',
    },
    httpWriteTimeoutMs: {
      flag: 'http-write-timeout-ms',
      placeholder: '<ms>',
      schema: ms,
      default: SERVER_DEFAULTS.httpWriteTimeoutMs,
      help: 'a connection whose answer its reader does not take (no write progress) is closed after this',
    },
    maxPipelinedRequests: {
      flag: 'max-pipelined-requests',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.httpMaxPipelinedRequests,
      help: 'requests waiting behind the one being answered on a connection; more: 503, the connection closes',
    },
    maxHttpConnections: {
      flag: 'max-http-connections',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.httpMaxConnections,
      help: 'TCP connections open at once per port, websockets included; more are closed as soon as accepted',
    },
    maxInflightBytes: {
      flag: 'max-inflight-bytes',
      placeholder: '<n>',
      schema: count,
      default: SERVER_DEFAULTS.maxInflightBytes,
      help: 'bytes held of messages still arriving (websocket frames, HTTP bodies being read; +1 KiB per chunk held), all connections together, at least twice --max-message-bytes; past it the oldest unfinished one is closed 1013 / answered 503 with Retry-After',
    },
  },
  checks: [
    { keys: ['httpRequestTimeoutMs', 'httpHeadersTimeoutMs'], holds: (request, headers) => request >= headers, message: '{0} must not be below {1}' },
    // Else the largest catalog allowed could never be registered.
    { keys: ['maxTotalCatalogBytes', 'maxCatalogBytes'], holds: (total, one) => total >= one, message: '{0} must not be below {1}' },
    // Else the largest message allowed, arriving in chunks (each charged beyond its bytes), might never fit.
    { keys: ['maxInflightBytes', 'maxMessageBytes'], holds: (inflight, message) => inflight >= 2 * message, message: '{0} must be at least twice {1}' },
  ],
});

/** The limit settings, by key (the flag in camelCase). */
export type LimitKey = keyof typeof LIMIT_SETTINGS.settings;

/**
 * The option of each limit whose flag was named before the rule of option names (options.ts): the
 * area first, then `max…`. The flags keep their names; every other limit sets the option of its own
 * name.
 */
const OPTION_NAMES = {
  maxWsBufferedBytes: 'wsMaxBufferedBytes',
  maxWsConnections: 'wsMaxConnections',
  maxWsConnectionsPerAddress: 'wsMaxConnectionsPerAddress',
  maxHttpLoopSessions: 'httpLoopMaxSessions',
  maxHttpLoopSessionsPerAddress: 'httpLoopMaxSessionsPerAddress',
  maxPipelinedRequests: 'httpMaxPipelinedRequests',
  maxHttpConnections: 'httpMaxConnections',
} as const satisfies Partial<Record<LimitKey, keyof MdpServerOptions>>;

/** The option a limit setting sets. */
export type LimitOption<K extends LimitKey = LimitKey> = K extends keyof typeof OPTION_NAMES ? (typeof OPTION_NAMES)[K] : K;

export function limitOption<K extends LimitKey>(key: K): LimitOption<K> {
  return ((OPTION_NAMES as Partial<Record<LimitKey, string>>)[key] ?? key) as LimitOption<K>;
}

/** The options of the settings' values. */
export function limitOptions(values: { readonly [K in LimitKey]: number }): Pick<MdpServerOptions, LimitOption> {
  const options: Partial<Record<LimitOption, number>> = {};
  for (const key of Object.keys(LIMIT_SETTINGS.settings) as LimitKey[]) options[limitOption(key)] = values[key];
  return options as Pick<MdpServerOptions, LimitOption>;
}
