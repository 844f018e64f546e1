/** Command-line flags of `mdp-server`, parsed and validated into MdpServerOptions. */
import { parseArgs } from 'node:util';
import { LOG_LEVELS, MAX_TIMER_MS, isLogLevel } from '@mdp/core';
import { MAX_WAIT_MS } from '@mdp/transport-http-loop';
import { wholeNumber } from './flag-values.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';
import { CLUSTER_ARG_OPTIONS, CLUSTER_HELP, parseClusterArgs } from './cluster-args.js';
import { LIMIT_ARG_OPTIONS, LIMIT_HELP, parseLimitArgs } from './limit-args.js';

export const HELP = `Usage: mdp-server [options]

Runs an MDP server: MDP clients connect over the websocket or the HTTP loop and publish paths;
their skills are readable at /skills/<clientId>/<path> and /<clientId>/skills/<path>.

Options:
  --host <addr>                    address to bind (default ${SERVER_DEFAULTS.host})
  --port <n>                       port, 0 for any free one (default ${SERVER_DEFAULTS.port})
  --server-id <id>                 id in /mdp/meta (default <host>:<port>)
  --invocation-timeout-ms <ms>     time a client has to answer a call (default ${SERVER_DEFAULTS.invocationTimeoutMs})
  --heartbeat-interval-ms <ms>     ping interval for every session (default ${SERVER_DEFAULTS.heartbeatIntervalMs})
  --heartbeat-timeout-ms <ms>      close sessions silent this long (default ${SERVER_DEFAULTS.heartbeatTimeoutMs})
  --max-message-bytes <n>          largest websocket frame / HTTP loop body (default ${SERVER_DEFAULTS.maxMessageBytes})
  --long-poll-timeout-ms <ms>      default HTTP loop poll wait, at most 60000 (default ${SERVER_DEFAULTS.longPollTimeoutMs})
  --cluster-id <id>                cluster id reported in /mdp/meta (default ${SERVER_DEFAULTS.clusterId})
  --auth-token <token>             accept only credentials carrying this token (repeatable); also
                                   MDP_AUTH_TOKENS (comma-separated). Off by default; with it, the
                                   websocket (close 4401), HTTP loop connect and skill reads (401)
                                   need a token and the mdp_auth cookie is signed
  --auth-tokens-file <path>        read accepted tokens from a file, one per line
  --log-level <level>              ${LOG_LEVELS.join(' | ')} (default ${SERVER_DEFAULTS.logLevel}); logs are JSON lines on stderr
  -h, --help                       show this help
  -v, --version                    print the version

${LIMIT_HELP}

${CLUSTER_HELP}

Stops gracefully on SIGINT or SIGTERM (pending calls fail, connections close, exit 0).`;

export type CliCommand =
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'run'; readonly options: MdpServerOptions; readonly authTokensFile?: string }
  | { readonly kind: 'error'; readonly message: string };

const INT_FLAGS = {
  'invocation-timeout-ms': 'invocationTimeoutMs',
  'heartbeat-interval-ms': 'heartbeatIntervalMs',
  'heartbeat-timeout-ms': 'heartbeatTimeoutMs',
  'max-message-bytes': 'maxMessageBytes',
  'long-poll-timeout-ms': 'longPollTimeoutMs',
} as const;

/** Upper bounds: node's longest timer, and SPEC §6's longest poll for the poll's default wait. */
const INT_FLAG_MAX: Record<keyof typeof INT_FLAGS, number> = {
  'invocation-timeout-ms': MAX_TIMER_MS,
  'heartbeat-interval-ms': MAX_TIMER_MS,
  'heartbeat-timeout-ms': MAX_TIMER_MS,
  'max-message-bytes': Number.MAX_SAFE_INTEGER,
  'long-poll-timeout-ms': MAX_WAIT_MS,
};

export function parseCliArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): CliCommand {
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        'server-id': { type: 'string' },
        'invocation-timeout-ms': { type: 'string' },
        'heartbeat-interval-ms': { type: 'string' },
        'heartbeat-timeout-ms': { type: 'string' },
        'max-message-bytes': { type: 'string' },
        'long-poll-timeout-ms': { type: 'string' },
        'cluster-id': { type: 'string' },
        'log-level': { type: 'string' },
        'auth-token': { type: 'string', multiple: true },
        'auth-tokens-file': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        ...CLUSTER_ARG_OPTIONS,
        ...LIMIT_ARG_OPTIONS,
      },
    }));
  } catch (error) {
    // node's messages can span lines; the CLI promises one.
    return { kind: 'error', message: (error as Error).message.replace(/\s*\n\s*/g, ' ') };
  }
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const limits = parseLimitArgs(values);
  if (typeof limits === 'string') return { kind: 'error', message: limits };
  const options: MdpServerOptions = { ...limits };
  if (typeof values.host === 'string') {
    if (values.host.trim() === '') return { kind: 'error', message: '--host must not be empty' };
    options.host = values.host;
  }
  if (typeof values.port === 'string') {
    const port = wholeNumber('port', values.port, 0, 65535);
    if (typeof port === 'string') return { kind: 'error', message: port };
    options.port = port;
  }
  if (typeof values['server-id'] === 'string') {
    if (values['server-id'] === '') return { kind: 'error', message: '--server-id must not be empty' };
    options.serverId = values['server-id'];
  }
  if (typeof values['cluster-id'] === 'string') {
    if (values['cluster-id'] === '') return { kind: 'error', message: '--cluster-id must not be empty' };
    options.clusterId = values['cluster-id'];
  }
  for (const [flag, key] of Object.entries(INT_FLAGS)) {
    const raw = values[flag];
    if (typeof raw !== 'string') continue;
    const parsed = wholeNumber(flag, raw, 1, INT_FLAG_MAX[flag as keyof typeof INT_FLAGS]);
    if (typeof parsed === 'string') return { kind: 'error', message: parsed };
    options[key] = parsed;
  }
  const level = values['log-level'];
  if (typeof level === 'string') {
    if (!isLogLevel(level)) return { kind: 'error', message: `--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}` };
    options.logLevel = level;
  }
  const tokens = [
    ...((values['auth-token'] as string[] | undefined) ?? []),
    ...(env.MDP_AUTH_TOKENS ?? '').split(','),
  ]
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if ((values['auth-token'] as string[] | undefined)?.some((t) => t.trim() === '')) {
    return { kind: 'error', message: '--auth-token must not be empty' };
  }
  if (tokens.length > 0) options.authTokens = tokens;
  const cluster = parseClusterArgs(values, env);
  if (typeof cluster === 'string') return { kind: 'error', message: cluster };
  if (cluster) options.cluster = cluster;
  const file = values['auth-tokens-file'];
  return typeof file === 'string' ? { kind: 'run', options, authTokensFile: file } : { kind: 'run', options };
}

/** Tokens from a tokens file: one per line; blank lines and `#` comments are skipped. */
export function parseTokensFile(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}
