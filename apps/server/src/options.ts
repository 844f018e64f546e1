import { ROUTER_DEFAULTS, type AuthPolicy, type Logger, type LogLevel } from '@mdp/core';
import { HTTP_LOOP_DEFAULTS } from '@mdp/transport-http-loop';
import { WS_LIMIT_DEFAULTS } from '@mdp/transport-ws';
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

  // Limits (README "Security and limits"). Each refusal leaves the server answering everyone else.

  /** Most calls waiting for one client's answer; more are answered 503 with Retry-After, unsent. Default 1000. */
  maxPendingCalls?: number;
  /** Longest registered path, characters; a longer one refuses the catalog (1008 / 400). Default 1024. */
  maxPathLength?: number;
  /** Most segments in a registered path. Default 32. */
  maxPathSegments?: number;
  /** Most paths in one catalog. Default 10000. */
  maxCatalogPaths?: number;
  /** Most catalog changes per session and minute (a burst of that many, then at that rate); more close 1013 / answer 429. Default 120. */
  maxCatalogUpdatesPerMinute?: number;
  /** Most bytes waiting for one websocket peer; a peer over it is closed 1013 and its calls fail. Default 8 MiB. */
  maxWsBufferedBytes?: number;
  /** Time from a websocket's handshake to its first registerClient, ms; past it the socket closes 4408. Default 10000. */
  wsRegisterTimeoutMs?: number;
  /** Most websocket connections at once; more are answered 503 before the handshake. Default 10000. */
  maxWsConnections?: number;
  /** Most websocket connections from one remote address. Default 8000. */
  maxWsConnectionsPerAddress?: number;
  /** Most HTTP loop sessions at once; more connects answer 503. Default 10000. */
  maxHttpLoopSessions?: number;
  /** Most HTTP loop sessions from one remote address. Default 2000. */
  maxHttpLoopSessionsPerAddress?: number;
  /** Most messages queued for one HTTP loop session; past it the session ends. Default 10000. */
  httpLoopMaxQueuedMessages?: number;
  /** Most bytes of JSON queued for one HTTP loop session; past it the session ends. Default 8 MiB. */
  httpLoopMaxQueuedBytes?: number;
  /** Time to receive a request's headers, ms (node's headersTimeout); past it 408, also for a connection that sends nothing. Default 20000. */
  httpHeadersTimeoutMs?: number;
  /** Time to receive a whole request, ms (node's requestTimeout); at least the headers time-out. Default 60000. */
  httpRequestTimeoutMs?: number;
  /** An idle keep-alive connection is closed after this, ms. Default 5000. */
  httpKeepAliveTimeoutMs?: number;
  /**
   * A connection whose answer makes no progress for this long (its reader does not read) is closed,
   * ms. Long polls and calls still being answered are not concerned. Default 30000.
   */
  httpIdleTimeoutMs?: number;
  /** Most requests waiting behind the one being answered on a connection; more answer 503 and close it. Default 8. */
  maxPipelinedRequests?: number;
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
  maxPendingCalls: ROUTER_DEFAULTS.maxPendingCalls,
  maxPathLength: ROUTER_DEFAULTS.maxPathLength,
  maxPathSegments: ROUTER_DEFAULTS.maxPathSegments,
  maxCatalogPaths: ROUTER_DEFAULTS.maxCatalogPaths,
  maxCatalogUpdatesPerMinute: ROUTER_DEFAULTS.catalogUpdatesPerMinute,
  maxWsBufferedBytes: WS_LIMIT_DEFAULTS.maxBufferedBytes,
  wsRegisterTimeoutMs: WS_LIMIT_DEFAULTS.registerTimeoutMs,
  maxWsConnections: WS_LIMIT_DEFAULTS.maxConnections,
  maxWsConnectionsPerAddress: WS_LIMIT_DEFAULTS.maxConnectionsPerAddress,
  maxHttpLoopSessions: HTTP_LOOP_DEFAULTS.maxSessions,
  maxHttpLoopSessionsPerAddress: HTTP_LOOP_DEFAULTS.maxSessionsPerAddress,
  httpLoopMaxQueuedMessages: HTTP_LOOP_DEFAULTS.maxQueuedMessages,
  httpLoopMaxQueuedBytes: HTTP_LOOP_DEFAULTS.maxQueuedBytes,
  httpHeadersTimeoutMs: 20_000,
  httpRequestTimeoutMs: 60_000,
  httpKeepAliveTimeoutMs: 5_000,
  httpIdleTimeoutMs: 30_000,
  maxPipelinedRequests: 8,
  clusterId: 'mdp',
  logLevel: 'info' as LogLevel,
} as const;

/** The limits of `options` for each part of the server, defaults filled in. */
export function serverLimits(options: MdpServerOptions) {
  const d = SERVER_DEFAULTS;
  return {
    websocket: {
      maxBufferedBytes: options.maxWsBufferedBytes ?? d.maxWsBufferedBytes,
      registerTimeoutMs: options.wsRegisterTimeoutMs ?? d.wsRegisterTimeoutMs,
      maxConnections: options.maxWsConnections ?? d.maxWsConnections,
      maxConnectionsPerAddress: options.maxWsConnectionsPerAddress ?? d.maxWsConnectionsPerAddress,
    },
    httpLoop: {
      maxSessions: options.maxHttpLoopSessions ?? d.maxHttpLoopSessions,
      maxSessionsPerAddress: options.maxHttpLoopSessionsPerAddress ?? d.maxHttpLoopSessionsPerAddress,
      maxQueuedMessages: options.httpLoopMaxQueuedMessages ?? d.httpLoopMaxQueuedMessages,
      maxQueuedBytes: options.httpLoopMaxQueuedBytes ?? d.httpLoopMaxQueuedBytes,
    },
    http: {
      headersTimeoutMs: options.httpHeadersTimeoutMs ?? d.httpHeadersTimeoutMs,
      requestTimeoutMs: options.httpRequestTimeoutMs ?? d.httpRequestTimeoutMs,
      keepAliveTimeoutMs: options.httpKeepAliveTimeoutMs ?? d.httpKeepAliveTimeoutMs,
      idleTimeoutMs: options.httpIdleTimeoutMs ?? d.httpIdleTimeoutMs,
      maxPipelinedRequests: options.maxPipelinedRequests ?? d.maxPipelinedRequests,
    },
  } as const;
}
