/** The settings of the server itself: where it listens, its clock, its logs. A group of the settings table. */
import { LOG_LEVELS, MAX_TIMER_MS } from '@mdp/core';
import { MAX_WAIT_MS } from '@mdp/transport-http-loop';
import { SERVER_DEFAULTS } from './options.js';
import { settingGroup } from './table.js';
import { oneOf, text, wholeNumber } from './values.js';

export const SERVER_SETTINGS = settingGroup({
  title: 'Server',
  settings: {
    host: { flag: 'host', placeholder: '<addr>', schema: text(), default: SERVER_DEFAULTS.host, help: 'address to bind; 0.0.0.0 or :: for every interface' },
    port: { flag: 'port', placeholder: '<n>', schema: wholeNumber(0, 65535), default: SERVER_DEFAULTS.port, help: 'port, 0 for any free one' },
    serverId: {
      flag: 'server-id',
      placeholder: '<id>',
      schema: text(),
      defaultText: '<host>:<port>, with the host name for 0.0.0.0 or ::',
      help: 'id in /mdp/meta and in the cluster',
    },
    invocationTimeoutMs: {
      flag: 'invocation-timeout-ms',
      placeholder: '<ms>',
      schema: wholeNumber(1, MAX_TIMER_MS),
      default: SERVER_DEFAULTS.invocationTimeoutMs,
      help: 'time a client has to answer a call',
    },
    heartbeatIntervalMs: {
      flag: 'heartbeat-interval-ms',
      placeholder: '<ms>',
      schema: wholeNumber(1, MAX_TIMER_MS),
      default: SERVER_DEFAULTS.heartbeatIntervalMs,
      help: 'ping interval for every session',
    },
    heartbeatTimeoutMs: {
      flag: 'heartbeat-timeout-ms',
      placeholder: '<ms>',
      schema: wholeNumber(1, MAX_TIMER_MS),
      default: SERVER_DEFAULTS.heartbeatTimeoutMs,
      help: 'close sessions silent this long',
    },
    maxMessageBytes: {
      flag: 'max-message-bytes',
      placeholder: '<n>',
      schema: wholeNumber(1),
      default: SERVER_DEFAULTS.maxMessageBytes,
      help: 'largest websocket frame, HTTP body (loop, host API, MCP, /mdp/auth) and cluster link frame',
    },
    longPollTimeoutMs: {
      flag: 'long-poll-timeout-ms',
      placeholder: '<ms>',
      schema: wholeNumber(1, MAX_WAIT_MS),
      default: SERVER_DEFAULTS.httpLoopLongPollTimeoutMs,
      help: `default HTTP loop poll wait, at most ${MAX_WAIT_MS}`,
    },
    drainTimeoutMs: {
      flag: 'drain-timeout-ms',
      placeholder: '<ms>',
      schema: wholeNumber(0, MAX_TIMER_MS),
      default: SERVER_DEFAULTS.drainTimeoutMs,
      help: `on SIGTERM or SIGINT, time the calls in flight get to finish (new ones are refused)
        before they end with transport_error; the process exits within this plus one second`,
    },
    logLevel: {
      flag: 'log-level',
      placeholder: '<level>',
      schema: oneOf(LOG_LEVELS),
      default: SERVER_DEFAULTS.logLevel,
      help: `${LOG_LEVELS.join(' | ')}; logs are JSON lines on stderr`,
    },
  },
});
