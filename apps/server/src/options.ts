import type { AuthPolicy, Logger, LogLevel } from '@mdp/core';
import type { MdpClusterOptions } from './cluster.js';
import type { MdpMcpOptions } from './features/mcp-http.js';
import type { MdpTlsOptions } from './tls.js';

/** `SameSite` of the `mdp_auth` cookie; `none` lets pages of other sites use it, and needs TLS. */
export type CookieSameSite = 'lax' | 'strict' | 'none';
export const COOKIE_SAME_SITE: readonly CookieSameSite[] = ['lax', 'strict', 'none'];

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
   * Browser origins (`https://agent.example.com`) that may use the host API, the inspector and
   * /mcp, besides loopback origins and the server's own pages. Any other `Origin` gets 403.
   */
  allowedOrigins?: readonly string[];
  /**
   * Host names (no port) those routes answer besides loopback names, against DNS rebinding. On a
   * loopback server any other `Host` gets 403; on a server bound wider every name passes until
   * one is given here.
   */
  allowedHosts?: readonly string[];
  /**
   * *beyond* (SPEC §14): serve HTTPS and WSS on the port, with the key and certificate in these
   * files (read before listening; `reloadTls()` reads them again). Default: plain HTTP.
   */
  tls?: MdpTlsOptions;
  /**
   * `SameSite` of the `mdp_auth` cookie. Default `lax`. `none` (`SameSite=None; Secure`) lets a
   * page of another site open the websocket with the cookie; browsers drop such a cookie unless it
   * comes over TLS, so `none` needs `tls`. Over TLS every cookie is `Secure`.
   */
  cookieSameSite?: CookieSameSite;
  /**
   * Cluster control and upstream proxy (SPEC §10). Without it the server is standalone: leader of a
   * cluster of one, term 0. The CLI passes `{ mode: 'auto' }` by default.
   */
  cluster?: MdpClusterOptions;
  /** The MCP bridge (SPEC §13): Streamable HTTP at /mcp and the stdio session of `mdp-server mcp`. `false`: none. */
  mcp?: MdpMcpOptions | false;
  /**
   * *beyond* (SPEC §15): `GET /healthz`, `/readyz` and `/metrics` need `Authorization: Bearer
   * <metricsToken>`. Default: open (load balancers and scrapers on the same network).
   */
  metricsToken?: string;
  /** One `info` log line (`call`) per skill read, host call, MCP call and cluster call. Default off. */
  accessLog?: boolean;
  /**
   * The audit log: one JSON line per call (time, caller as auth scheme and token hash, route,
   * client, method, path, outcome, duration). A file path (appended to), `-` for stdout, or a
   * function given each line. Default: none.
   */
  auditLog?: string | ((line: string) => void);
  /** An HTTP loop session with no poll waiting and none started this long ends, ms. Default 10000. */
  httpLoopIdleTimeoutMs?: number;
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
  httpLoopIdleTimeoutMs: 10_000,
  drainTimeoutMs: 5_000,
  clusterId: 'mdp',
  logLevel: 'info' as LogLevel,
  cookieSameSite: 'lax' as CookieSameSite,
} as const;
