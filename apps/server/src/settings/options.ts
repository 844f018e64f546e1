import {
  DEFAULT_MAX_INFLIGHT_BYTES,
  DEFAULT_MAX_MESSAGE_BYTES,
  ROUTER_DEFAULTS,
  type AuthPolicy,
  type Logger,
  type LogLevel,
  type RouterOptions,
  type ScopeNames,
  type TenancyMode,
  type TenantClient,
} from '@mdp/core';
import { DEFAULT_PORT } from '@mdp/protocol';
import { HTTP_LOOP_DEFAULTS } from '@mdp/transport-http-loop';
import { WS_LIMIT_DEFAULTS } from '@mdp/transport-ws';
import type { MdpClusterOptions } from '../cluster.js';
import type { MdpBusOptions } from '../features/bus.js';
import type { MdpMcpOptions } from '../features/mcp-http.js';
import type { MdpStateStoreOptions } from '../features/state-store.js';
import type { MdpTlsOptions } from '../tls.js';

/** `SameSite` of the `mdp_auth` cookie; `none` lets pages of other sites use it, and needs TLS. */
export type CookieSameSite = 'lax' | 'strict' | 'none';
export const COOKIE_SAME_SITE: readonly CookieSameSite[] = ['lax', 'strict', 'none'];

/**
 * Everything `createMdpServer` accepts. Every limit has a documented default.
 *
 * One rule names them: `max…` for a cap, `…Ms` for a time, and the area first for what belongs to
 * one part of the server: `ws…` (websocket), `httpLoop…`, `http…` (every HTTP connection), as the
 * nested `mcp`, `cluster` and `accessTokens` options and the `mcp-*`, `cluster-*` and `auth-*` flags
 * do, e.g. `wsMaxConnections`, `httpLoopIdleTimeoutMs`. The router's times and caps, shared by every
 * transport, have no area and keep the router's own names (`maxPendingCalls`). The flags keep the
 * names users type (`--max-ws-connections`); limits.ts says which option each sets.
 */
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
  /** Largest websocket frame, HTTP body (HTTP loop, host API, MCP, /mdp/auth) and cluster link frame, bytes. Default 1 MiB. */
  maxMessageBytes?: number;
  /** Default long-poll wait of the HTTP loop, ms. Default 25000. */
  httpLoopLongPollTimeoutMs?: number;
  /**
   * Graceful shutdown: `close()` stops taking new calls at once and gives the calls in flight this
   * long to finish, counted from the moment it is called, before it ends them with
   * `transport_error`, ms. 0 ends them at once. Default 5000.
   */
  drainTimeoutMs?: number;

  // Limits (README "Security and limits"). Each refusal leaves the server answering everyone else.

  /** Most calls waiting for one client's answer; more are answered 503 with Retry-After, unsent. Default 1000. */
  maxPendingCalls?: number;
  /** Longest registered path, characters; a longer one refuses the catalog (1008 / 400). Default 1024. */
  maxPathLength?: number;
  /** Most segments in a registered path. Default 32. */
  maxPathSegments?: number;
  /** Most paths in one catalog. Default 10000. */
  maxCatalogPaths?: number;
  /**
   * Most paths in all catalogs together; a catalog that would pass it is refused (close 1013 / send
   * 503 with Retry-After), and the registry's memory stays bounded. Default 250000.
   */
  maxTotalPaths?: number;
  /**
   * Longest text a client registers, characters: a client's or a path's description, and its name,
   * version, platform, contentType and other string fields (not the path). A catalog with a longer
   * one is refused: close 1009 / send 413 naming the field and the limit. Default 16384.
   */
  maxDescriptionLength?: number;
  /**
   * Longest `inputSchema` or `outputSchema` (or `metadata`, or any other object field), characters
   * of its JSON; refused like a long description. Default 65536.
   */
  maxSchemaLength?: number;
  /** Largest catalog, bytes of the client descriptor's JSON; refused like a long description. Default 1 MiB. */
  maxCatalogBytes?: number;
  /**
   * Most bytes of all catalogs together (as `maxCatalogBytes` counts them); a catalog that would pass
   * it is refused like one past `maxTotalPaths` (close 1013 / send 503 with Retry-After). Bounds the
   * registry's memory: about 21 bytes of heap per byte at worst, 2 to 5 for most catalogs. Default 32 MiB.
   */
  maxTotalCatalogBytes?: number;
  /**
   * Most clients registered at once from one remote address (websocket and HTTP loop together; on
   * loopback every local process shares one); one more `registerClient` is refused: close 4429 /
   * send 429. Proven mirror links of cluster members are not counted. Default 1000.
   */
  maxClientsPerAddress?: number;
  /** Most catalog changes per session and minute (a burst of that many, then at that rate); more close 1013 / answer 429. Default 120. */
  maxCatalogUpdatesPerMinute?: number;
  /**
   * Most bytes waiting for one websocket peer; a call past it is answered 503 with Retry-After,
   * unsent, while the peer still reads. Default 8 MiB.
   */
  wsMaxBufferedBytes?: number;
  /**
   * How long a websocket peer over `wsMaxBufferedBytes` may go without reading (no answer to one of
   * its pending calls, no write drained), ms; then it is closed 1013, its calls fail, and its socket
   * is reset a second later. Default 5000.
   */
  wsStallTimeoutMs?: number;
  /** Time from a websocket's handshake to its first registerClient, ms; past it the socket closes 4408. Default 10000. */
  wsRegisterTimeoutMs?: number;
  /** Most websocket connections at once; more are answered 503 before the handshake. Default 10000. */
  wsMaxConnections?: number;
  /** Most websocket connections from one remote address. Default 8000. */
  wsMaxConnectionsPerAddress?: number;
  /** Most HTTP loop sessions at once; more connects answer 503. Default 10000. */
  httpLoopMaxSessions?: number;
  /** Most HTTP loop sessions from one remote address. Default 2000. */
  httpLoopMaxSessionsPerAddress?: number;
  /** Most messages queued for one HTTP loop session; a call past it is answered 503 with Retry-After, unsent. Default 10000. */
  httpLoopMaxQueuedMessages?: number;
  /** Most bytes of JSON queued for one HTTP loop session; a call past it is answered 503 with Retry-After, unsent. Default 8 MiB. */
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
  httpWriteTimeoutMs?: number;
  /** Most requests waiting behind the one being answered on a connection; more answer 503 and close it. Default 8. */
  httpMaxPipelinedRequests?: number;
  /**
   * Most TCP connections open at once on each listening port, websockets included; a connection
   * past it is closed as soon as it is accepted, before a byte is read. Default 15000.
   */
  httpMaxConnections?: number;
  /**
   * Most bytes the node holds of messages still arriving: websocket frames (clients' and accepted
   * cluster links') and HTTP bodies being read (HTTP loop, host API, /mcp, /mdp/auth), each chunk
   * held counted with 1 KiB more for what it costs beyond its bytes. Past it, the connection whose
   * unfinished message began first is closed (websocket 1013 / 503 `{error}` with Retry-After and
   * the connection closed), whoever is receiving. At least twice `maxMessageBytes`. Default 64 MiB.
   */
  maxInflightBytes?: number;
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
   * *beyond* (SPEC §17): accept signed access tokens (JWT) of an identity provider beside
   * `authTokens`, hold every caller to scopes per action, and publish the protected resource
   * metadata MCP agents sign in with. Ignored when `authPolicy` is given.
   */
  accessTokens?: MdpAccessTokenOptions;
  /**
   * The URL this server is reached at (`https://mdp.example.com`, behind a proxy or load balancer):
   * the default audience of access tokens (RFC 8707) and the `resource` of its protected resource
   * metadata. Default: `http(s)://<bound host>:<port>`.
   */
  publicUrl?: string;
  /**
   * Who sees which clients (issue 36, `tenancy.ts` of `@mdp/core`). `shared` (default): every
   * caller lists, reads and calls every client. `principal`: a caller reaches only the clients of
   * its own principal (those registered with its credential) and the `sharedClients`; any other
   * looks exactly like an unknown client on every route (skill reads, host API, MCP, inspector,
   * cluster forwarding). Needs an auth policy (refused at start-up without one).
   */
  tenancy?: TenancyMode;
  /** Under `tenancy: 'principal'`, ids or globs (`*`, `?`) of the clients every principal reaches. */
  sharedClients?: readonly string[];
  /**
   * Under `tenancy: 'principal'`, a client shared by what it is rather than by its id (a seam for
   * a shared scope of the credential that registered it, once credentials carry scopes).
   */
  isSharedClient?: (client: TenantClient) => boolean;
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
   * Under an auth policy: the file of the keys that seal the `mdp_auth` cookie (cookie-keys.ts),
   * made on first use (mode 0600, its directory 0700), so that cookies outlive a restart and every
   * server reading the file accepts them; `mdp-server rotate-cookie-key` rotates it. The CLI uses
   * `<state dir>/cookie-keys`. Default: none, the policy's `cookieSecret` (for `authTokens`, a random
   * key per server: cookies end with it). When the file cannot be made (no writable directory) the
   * server warns and does the same; a file it must not trust or cannot read stops it.
   */
  cookieKeyFile?: string;
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
  /**
   * *beyond* (SPEC §14, the reference server's `--state-store`): a node-local diagnostic snapshot in
   * four JSON files (`snapshot.json`, `clients.json`, `routes.json`, `services.json`), each replaced
   * whole on every change, at most four times a second. The directory (default `.mdp/store` under
   * the current directory) is made, for the owner only, when the server is created: one that
   * cannot be used throws `StateStoreDirError`. Default: none.
   */
  stateStore?: MdpStateStoreOptions;
  /**
   * Join a fleet on NATS (SPEC §16): every node lists, reads and calls the clients of every other,
   * and takes HTTP loop requests for their sessions. Excludes the cluster's discovery and election:
   * `cluster` must be absent or `standalone`. `listen()` rejects when the bus cannot start. Default: none.
   */
  bus?: MdpBusOptions;
  /** Log level when no logger is given. Default `info`. */
  logLevel?: LogLevel;
  logger?: Logger;
}

/** `MdpServerOptions.accessTokens`. */
export interface MdpAccessTokenOptions {
  /** The issuer tokens must name (`iss`); its OIDC discovery document names the key set. */
  readonly issuer: string;
  /** The key set's URL, for an issuer without discovery. */
  readonly jwksUrl?: string;
  /** What `aud` must name (one of). Default: `publicUrl`, or the server's base URL, and that with `/mcp`. */
  readonly audiences?: readonly string[];
  /** Clock skew allowed on `exp` and `nbf`, s. Default 60. */
  readonly clockSkewS?: number;
  /** Scope names per action. Default `mdp:read`, `mdp:call`, `mdp:register`, `mdp:admin`. */
  readonly scopeNames?: Partial<ScopeNames>;
  /**
   * Forward the caller's token to the clients it calls too (`Authorization`, `auth.token`), for
   * clients that call on with it. Default false: a client holding it could act as the caller here.
   */
  readonly forwardToken?: boolean;
  /** Scopes of the static tokens (`authTokens`). Default: every scope. */
  readonly staticTokenScopes?: readonly string[];
  /** Fetch the key set again in the background this often, ms. Default 10 minutes. */
  readonly refreshIntervalMs?: number;
  /** Least time between two fetches of the key set for unknown `kid`s, ms. Default 30 s. */
  readonly cooldownMs?: number;
}

/**
 * The default of every option, each taken from the package that owns the setting (the router's from
 * `ROUTER_DEFAULTS`, the transports' from theirs) or stated here when the server owns it.
 */
export const SERVER_DEFAULTS = {
  host: '127.0.0.1',
  port: DEFAULT_PORT,
  // The router's times and limits, under the router's own names.
  ...ROUTER_DEFAULTS,
  maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
  httpLoopLongPollTimeoutMs: HTTP_LOOP_DEFAULTS.longPollTimeoutMs,
  httpLoopIdleTimeoutMs: HTTP_LOOP_DEFAULTS.idleTimeoutMs,
  drainTimeoutMs: 5_000,
  wsMaxBufferedBytes: WS_LIMIT_DEFAULTS.maxBufferedBytes,
  wsStallTimeoutMs: WS_LIMIT_DEFAULTS.stallTimeoutMs,
  wsRegisterTimeoutMs: WS_LIMIT_DEFAULTS.registerTimeoutMs,
  wsMaxConnections: WS_LIMIT_DEFAULTS.maxConnections,
  wsMaxConnectionsPerAddress: WS_LIMIT_DEFAULTS.maxConnectionsPerAddress,
  httpLoopMaxSessions: HTTP_LOOP_DEFAULTS.maxSessions,
  httpLoopMaxSessionsPerAddress: HTTP_LOOP_DEFAULTS.maxSessionsPerAddress,
  httpLoopMaxQueuedMessages: HTTP_LOOP_DEFAULTS.maxQueuedMessages,
  httpLoopMaxQueuedBytes: HTTP_LOOP_DEFAULTS.maxQueuedBytes,
  httpHeadersTimeoutMs: 20_000,
  httpRequestTimeoutMs: 60_000,
  httpKeepAliveTimeoutMs: 5_000,
  httpWriteTimeoutMs: 30_000,
  httpMaxPipelinedRequests: 8,
  httpMaxConnections: 15_000,
  maxInflightBytes: DEFAULT_MAX_INFLIGHT_BYTES,
  clusterId: 'mdp',
  tenancy: 'shared' as TenancyMode,
  logLevel: 'info' as LogLevel,
  cookieSameSite: 'lax' as CookieSameSite,
} as const;

/** The router's times and limits: its options of the same name (the router fills in its own defaults). */
export type RouterSettingKey = keyof typeof ROUTER_DEFAULTS;
const ROUTER_KEYS = Object.keys(ROUTER_DEFAULTS) as RouterSettingKey[];

/** The limits of `options` for each part of the server, defaults filled in (the router's by the router). */
export function serverLimits(options: MdpServerOptions) {
  const d = SERVER_DEFAULTS;
  const router: Partial<Record<RouterSettingKey, number>> = {};
  for (const key of ROUTER_KEYS) if (options[key] !== undefined) router[key] = options[key];
  return {
    router: router as Pick<RouterOptions, RouterSettingKey>,
    websocket: {
      maxBufferedBytes: options.wsMaxBufferedBytes ?? d.wsMaxBufferedBytes,
      stallTimeoutMs: options.wsStallTimeoutMs ?? d.wsStallTimeoutMs,
      registerTimeoutMs: options.wsRegisterTimeoutMs ?? d.wsRegisterTimeoutMs,
      maxConnections: options.wsMaxConnections ?? d.wsMaxConnections,
      maxConnectionsPerAddress: options.wsMaxConnectionsPerAddress ?? d.wsMaxConnectionsPerAddress,
    },
    httpLoop: {
      maxSessions: options.httpLoopMaxSessions ?? d.httpLoopMaxSessions,
      maxSessionsPerAddress: options.httpLoopMaxSessionsPerAddress ?? d.httpLoopMaxSessionsPerAddress,
      maxQueuedMessages: options.httpLoopMaxQueuedMessages ?? d.httpLoopMaxQueuedMessages,
      maxQueuedBytes: options.httpLoopMaxQueuedBytes ?? d.httpLoopMaxQueuedBytes,
    },
    http: {
      headersTimeoutMs: options.httpHeadersTimeoutMs ?? d.httpHeadersTimeoutMs,
      requestTimeoutMs: options.httpRequestTimeoutMs ?? d.httpRequestTimeoutMs,
      keepAliveTimeoutMs: options.httpKeepAliveTimeoutMs ?? d.httpKeepAliveTimeoutMs,
      writeTimeoutMs: options.httpWriteTimeoutMs ?? d.httpWriteTimeoutMs,
      maxPipelinedRequests: options.httpMaxPipelinedRequests ?? d.httpMaxPipelinedRequests,
      maxConnections: options.httpMaxConnections ?? d.httpMaxConnections,
    },
  } as const;
}
