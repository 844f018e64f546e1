/**
 * The flags for operating the server (SPEC §15): health and metrics access, the access and audit
 * logs, and the HTTP loop's idle time-out. Kept apart from cli-args.ts so that each flag is one row
 * that can move into a shared flag table as it stands.
 */
import { MAX_TIMER_MS } from '@mdp/core';
import { wholeNumber } from './flag-values.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';

export const OBSERVE_HELP = `Operating it (SPEC §15):
  --metrics-token <token>          /healthz, /readyz and /metrics need "Authorization: Bearer <token>";
                                   also MDP_METRICS_TOKEN. Default: open
  --access-log                     one info log line ("call") per skill read, host call, MCP call
  --audit-log <file|->             one JSON line per call (caller as auth scheme and token hash, never
                                   the token; route, client, method, path, outcome, duration),
                                   appended to <file>, or to stdout for -
  --http-loop-idle-timeout-ms <ms> end an HTTP loop session with no poll waiting and none started
                                   this long (a page closed without disconnect) (default ${SERVER_DEFAULTS.httpLoopIdleTimeoutMs})`;

export const OBSERVE_ARG_OPTIONS = {
  'metrics-token': { type: 'string' },
  'access-log': { type: 'boolean' },
  'audit-log': { type: 'string' },
  'http-loop-idle-timeout-ms': { type: 'string' },
} as const;

type ObserveOptions = Pick<MdpServerOptions, 'metricsToken' | 'accessLog' | 'auditLog' | 'httpLoopIdleTimeoutMs'>;

/** The options these flags set, or the one-line error to print. */
export function parseObserveArgs(
  values: Readonly<Record<string, string | boolean | string[] | undefined>>,
  env: Readonly<Record<string, string | undefined>>,
): ObserveOptions | string {
  const options: ObserveOptions = {};
  const token = values['metrics-token'] ?? env.MDP_METRICS_TOKEN;
  if (typeof token === 'string') {
    if (token.trim() === '') return '--metrics-token must not be empty';
    options.metricsToken = token.trim();
  }
  if (values['access-log'] === true) options.accessLog = true;
  const audit = values['audit-log'];
  if (typeof audit === 'string') {
    if (audit.trim() === '') return '--audit-log must be a file path or -';
    options.auditLog = audit;
  }
  const idle = values['http-loop-idle-timeout-ms'];
  if (typeof idle === 'string') {
    const parsed = wholeNumber('http-loop-idle-timeout-ms', idle, 1, MAX_TIMER_MS);
    if (typeof parsed === 'string') return parsed;
    options.httpLoopIdleTimeoutMs = parsed;
  }
  return options;
}
