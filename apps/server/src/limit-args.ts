/**
 * The limit flags of `mdp-server` (README "Security and limits"), one table: flag, option, bounds,
 * help. Every flag is a whole number; `parseLimitArgs` fills the MdpServerOptions of those given.
 */
import { MAX_TIMER_MS } from '@mdp/core';
import { wholeNumber } from './flag-values.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';

/** Options that hold a number and have a default. */
type LimitKey = Extract<
  { [K in keyof MdpServerOptions]-?: NonNullable<MdpServerOptions[K]> extends number ? K : never }[keyof MdpServerOptions],
  keyof typeof SERVER_DEFAULTS
>;

interface LimitFlag {
  readonly flag: string;
  readonly key: LimitKey;
  readonly min: number;
  readonly max: number;
  /** One help line; the default is appended. */
  readonly help: string;
}

const MAX = Number.MAX_SAFE_INTEGER;

export const LIMIT_FLAGS: readonly LimitFlag[] = [
  { flag: 'max-pending-calls', key: 'maxPendingCalls', min: 1, max: MAX, help: 'calls waiting for one client; more answer 503 + Retry-After' },
  { flag: 'max-path-length', key: 'maxPathLength', min: 1, max: MAX, help: 'characters in a registered path' },
  { flag: 'max-path-segments', key: 'maxPathSegments', min: 1, max: MAX, help: 'segments in a registered path' },
  { flag: 'max-catalog-paths', key: 'maxCatalogPaths', min: 1, max: MAX, help: 'paths in one catalog' },
  { flag: 'max-catalog-updates-per-minute', key: 'maxCatalogUpdatesPerMinute', min: 1, max: MAX, help: 'catalog changes per session (burst, then this rate)' },
  { flag: 'max-ws-buffered-bytes', key: 'maxWsBufferedBytes', min: 1, max: MAX, help: 'bytes waiting for a websocket peer; over: close 1013' },
  { flag: 'ws-register-timeout-ms', key: 'wsRegisterTimeoutMs', min: 1, max: MAX_TIMER_MS, help: 'handshake to first registerClient; past: close 4408' },
  { flag: 'max-ws-connections', key: 'maxWsConnections', min: 1, max: MAX, help: 'websocket connections; more answer 503' },
  { flag: 'max-ws-connections-per-address', key: 'maxWsConnectionsPerAddress', min: 1, max: MAX, help: 'websocket connections from one address' },
  { flag: 'max-http-loop-sessions', key: 'maxHttpLoopSessions', min: 1, max: MAX, help: 'HTTP loop sessions; more connects answer 503' },
  { flag: 'max-http-loop-sessions-per-address', key: 'maxHttpLoopSessionsPerAddress', min: 1, max: MAX, help: 'HTTP loop sessions from one address' },
  { flag: 'http-loop-max-queued-messages', key: 'httpLoopMaxQueuedMessages', min: 1, max: MAX, help: 'messages queued for one HTTP loop session' },
  { flag: 'http-loop-max-queued-bytes', key: 'httpLoopMaxQueuedBytes', min: 1, max: MAX, help: 'bytes queued for one HTTP loop session' },
  { flag: 'http-headers-timeout-ms', key: 'httpHeadersTimeoutMs', min: 1, max: MAX_TIMER_MS, help: "time to receive a request's headers (or any byte); past: 408" },
  { flag: 'http-request-timeout-ms', key: 'httpRequestTimeoutMs', min: 1, max: MAX_TIMER_MS, help: 'time to receive a whole request; past: 408' },
  { flag: 'http-keep-alive-timeout-ms', key: 'httpKeepAliveTimeoutMs', min: 1, max: MAX_TIMER_MS, help: 'idle keep-alive connections are closed after' },
  { flag: 'http-idle-timeout-ms', key: 'httpIdleTimeoutMs', min: 1, max: MAX_TIMER_MS, help: "close a connection whose answer its reader does not take" },
  { flag: 'max-pipelined-requests', key: 'maxPipelinedRequests', min: 1, max: MAX, help: 'requests waiting on one connection; more: 503, close' },
];

export const LIMIT_ARG_OPTIONS = Object.fromEntries(LIMIT_FLAGS.map(({ flag }) => [flag, { type: 'string' as const }])) as Record<
  string,
  { type: 'string' }
>;

export const LIMIT_HELP = `Limits (each refusal leaves the server answering everyone else; see README "Security and limits"):
${LIMIT_FLAGS.map(({ flag, key, help }) => `  ${`--${flag} <n>`.padEnd(43)}${help} (default ${SERVER_DEFAULTS[key]})`).join('\n')}`;

type Values = Readonly<Record<string, string | boolean | string[] | undefined>>;

/** The limit options of the flags given, or the one-line error to print. */
export function parseLimitArgs(values: Values): Partial<MdpServerOptions> | string {
  const options: Partial<Record<LimitKey, number>> = {};
  for (const { flag, key, min, max } of LIMIT_FLAGS) {
    const raw = values[flag];
    if (typeof raw !== 'string') continue;
    const value = wholeNumber(flag, raw, min, max);
    if (typeof value === 'string') return value;
    options[key] = value;
  }
  const headers = options.httpHeadersTimeoutMs ?? SERVER_DEFAULTS.httpHeadersTimeoutMs;
  const request = options.httpRequestTimeoutMs ?? SERVER_DEFAULTS.httpRequestTimeoutMs;
  if (request < headers) return `--http-request-timeout-ms (${request}) must not be below --http-headers-timeout-ms (${headers})`;
  return options;
}
