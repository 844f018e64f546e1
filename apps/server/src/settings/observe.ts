/**
 * The settings for operating the server (SPEC §15): health and metrics access, the access and
 * audit logs, and the HTTP loop's idle time-out. A group of the settings table.
 */
import { MAX_TIMER_MS } from '@mdp/core';
import { text, toggle, wholeNumber } from './values.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';
import { settingGroup } from './table.js';

export const OBSERVE_SETTINGS = settingGroup({
  title: 'Operating it',
  settings: {
    metricsToken: {
      flag: 'metrics-token',
      placeholder: '<token>',
      schema: text(),
      secret: true,
      defaultText: 'open',
      help: '/healthz, /readyz and /metrics need "Authorization: Bearer <token>"',
    },
    accessLog: {
      flag: 'access-log',
      arity: 'switch',
      schema: toggle(),
      default: false,
      help: 'one info log line ("call") per skill read, host call, MCP call',
    },
    auditLog: {
      flag: 'audit-log',
      placeholder: '<file|->',
      schema: text(),
      help: `one JSON line per call (caller as auth scheme and token hash, never the token; route,
        client, method, path, outcome, duration), appended to <file>, or to stdout for - (not with
        "mdp-server mcp", whose stdout carries MCP)`,
    },
    httpLoopIdleTimeoutMs: {
      flag: 'http-loop-idle-timeout-ms',
      placeholder: '<ms>',
      schema: wholeNumber(1, MAX_TIMER_MS),
      default: SERVER_DEFAULTS.httpLoopIdleTimeoutMs,
      help: 'end an HTTP loop session with no poll waiting and none started this long (a page closed without disconnect)',
    },
  },
});

type ObserveOptions = Pick<MdpServerOptions, 'metricsToken' | 'accessLog' | 'auditLog' | 'httpLoopIdleTimeoutMs'>;

/** The options of the settings' values. */
export function observeOptions(values: {
  readonly metricsToken?: string | undefined;
  readonly accessLog: boolean;
  readonly auditLog?: string | undefined;
  readonly httpLoopIdleTimeoutMs: number;
}): ObserveOptions {
  return {
    ...(values.metricsToken !== undefined ? { metricsToken: values.metricsToken } : {}),
    ...(values.accessLog ? { accessLog: true } : {}),
    ...(values.auditLog !== undefined ? { auditLog: values.auditLog } : {}),
    httpLoopIdleTimeoutMs: values.httpLoopIdleTimeoutMs,
  };
}
