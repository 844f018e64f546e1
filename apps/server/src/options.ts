import type { AuthPolicy, Logger, LogLevel } from '@mdp/core';
import type { MdpClusterOptions } from './cluster.js';

/** Everything `createMdpServer` accepts. Every limit has a documented default. */
export interface MdpServerOptions {
  /** Address to bind. Default 127.0.0.1 (loopback only). */
  host?: string;
  /** Port; 0 picks a free one. Default 47372. */
  port?: number;
  /** Identity in /mdp/meta; default `<host>:<port>` of the bound address. */
  serverId?: string;
  /** Time a client has to answer a call, ms. Default 15000. */
  invocationTimeoutMs?: number;
  /** Ping interval for every session, ms. Default 30000. */
  heartbeatIntervalMs?: number;
  /** A session silent this long is closed, ms. Default 90000. */
  heartbeatTimeoutMs?: number;
  /** Largest websocket frame and HTTP loop body, bytes. Default 1 MiB. */
  maxMessageBytes?: number;
  /** Default long-poll wait of the HTTP loop, ms. Default 25000. */
  longPollTimeoutMs?: number;
  /**
   * Graceful shutdown: `close()` stops taking new calls at once and gives the calls in flight this
   * long to finish, counted from the moment it is called, before it ends them with
   * `transport_error`, ms. 0 ends them at once. Default 5000.
   */
  drainTimeoutMs?: number;
  /** Cluster id reported in /mdp/meta. Default `mdp`. */
  clusterId?: string;
  /**
   * *beyond* (SPEC §7): refuse websocket upgrades (close 4401), HTTP loop connects and skill
   * reads (401) without a credential the policy accepts, and sign the `mdp_auth` cookie. Default:
   * none. A cluster under it needs `cluster.secret` (and `cluster.upstreamHeaders` for the mirrors).
   */
  authPolicy?: AuthPolicy;
  /** Shorthand for a token policy: credentials whose `token` is one of these. */
  authTokens?: readonly string[];
  /**
   * Cluster control and upstream proxy (SPEC §10). Without it the server is standalone: leader of a
   * cluster of one, term 0. The CLI passes `{ mode: 'auto' }` by default.
   */
  cluster?: MdpClusterOptions;
  /** Log level when no logger is given. Default `info`. */
  logLevel?: LogLevel;
  logger?: Logger;
}

export const SERVER_DEFAULTS = {
  host: '127.0.0.1',
  port: 47372,
  invocationTimeoutMs: 15_000,
  heartbeatIntervalMs: 30_000,
  heartbeatTimeoutMs: 90_000,
  maxMessageBytes: 1024 * 1024,
  longPollTimeoutMs: 25_000,
  drainTimeoutMs: 5_000,
  clusterId: 'mdp',
  logLevel: 'info' as LogLevel,
} as const;
