/**
 * The server is assembled from features, which compose like hono sub-apps (docs/spec/style.md).
 * Each feature owns its routes, its upgrade paths, what it starts once the port is known and what
 * it releases on close; `createMdpServer` only lists them. A request goes, in list order, to each
 * feature's node fast path (`handle`), then to the Hono app that holds every feature's `routes`;
 * an upgrade goes to the first feature whose `upgrade` takes it.
 *
 *   request ─▶ handle? (hot paths, no Fetch objects) ─▶ Hono app (routes of every feature) ─▶ 404
 *   upgrade ─▶ upgrade? of each feature, in order ─────────────────────────────────────────▶ 404
 *   connection ─▶ connection? of every feature (a TCP connection, before its first request)
 *   call ends ─▶ the observers features added with ctx.observeCalls (metrics, access, audit)
 *
 * Lifecycle: `start` runs in list order once the server listens, then every `started` is awaited
 * (together) before `listen()` resolves. Shutdown: the listener stops
 * accepting, every feature's `stopping` runs (reverse list order; nothing awaited), then each
 * `close` in reverse list order (the last feature listed closes first), one after the other.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Hono } from 'hono';
import type { AuthContext } from '@mdp/protocol';
import type { AuthGate, CallRecord, HeaderMap, InflightBudget, Logger, OriginPolicy, Router, ScopeGuard, Tenancy, Viewer } from '@mdp/core';
import type { AccessTokens } from './access-tokens.js';
import type { ServerUrls } from './urls.js';

/** Where the server listens; known once it does. */
export interface ListeningInfo {
  readonly host: string;
  readonly port: number;
  readonly serverId: string;
  /** Serving HTTPS and WSS (TLS). */
  readonly secure: boolean;
  readonly urls: ServerUrls;
}

/** What every feature may use: the router, the auth gate, the logger and the listening info. */
export interface ServerContext {
  readonly router: Router;
  readonly logger: Logger;
  readonly gate: AuthGate;
  /** Reads the transport auth of a request (the signed cookie is checked under a policy). */
  readonly extractAuth: (headers: HeaderMap) => AuthContext | undefined;
  /** Whether a credential may connect or read; `undefined` when there is no auth policy. */
  readonly authorize: ((auth: AuthContext | undefined) => boolean) | undefined;
  /**
   * Who an accepted credential is (`AuthGate.principalOf`): client ids belong to the principal that
   * registered them, HTTP loop requests must come from the one that connected. Always `undefined`
   * without an auth policy.
   */
  readonly principalOf: (auth: AuthContext | undefined) => string | undefined;
  /**
   * Under an auth policy: holds callers to their scopes (SPEC §17; `gate.missingScope`) and says how
   * to sign in (`WWW-Authenticate` of 401 and 403). Every way in asks it after `authorize`.
   */
  readonly scopeGuard: ScopeGuard | undefined;
  /** The server's canonical URL (RFC 8707): the public URL, or its base URL once listening. */
  readonly canonicalUrl: () => string | undefined;
  /**
   * The URL of its protected resource metadata (RFC 9728), when it takes access tokens: of the whole
   * server, or of the resource at `resourcePath` (`/mcp`: the document an MCP client derives from
   * the `/mcp` URL, RFC 9728 §3.1).
   */
  readonly resourceMetadata: (resourcePath?: string) => string | undefined;
  /** Access tokens of an identity provider, when the server takes them (SPEC §17): their key set's status. */
  readonly accessTokens: AccessTokens | undefined;
  /** Who sees which clients (`--tenancy`, `tenancy.ts` of `@mdp/core`). */
  readonly tenancy: Tenancy;
  /**
   * The caller a credential names, for the tenancy: under an auth policy `{principal}`, without
   * one `undefined` (the tenancy is then `shared`: everyone sees every client).
   */
  readonly viewerOf: (auth: AuthContext | undefined) => Viewer | undefined;
  /** CORS headers of an answer to `request` (SPEC §6): the MDP routes browser clients use. */
  readonly corsFor: (request: IncomingMessage) => Readonly<Record<string, string>>;
  /**
   * Which browsers may use the routes that reach every client (host API, inspector, /mcp): other
   * sites' pages and rebound DNS names are refused (403).
   */
  readonly originPolicy: OriginPolicy;
  /** CORS headers on those routes: the Origin echoed only when the policy allows it. */
  readonly guardedCorsFor: (request: IncomingMessage) => Readonly<Record<string, string>>;
  /** Largest websocket frame and HTTP body, bytes. */
  readonly maxMessageBytes: number;
  /**
   * The node's budget on bytes received but not yet a whole message: every edge that reads
   * messages (websocket frames, HTTP bodies) counts what it holds of an unfinished one here.
   */
  readonly inflight: InflightBudget;
  /** Set once the server listens. */
  info(): ListeningInfo | undefined;
  /**
   * Be told of every call as it ends (metrics, access and audit logs). Observers run on the call
   * path, in the order added: keep them cheap.
   */
  observeCalls(observer: (record: CallRecord) => void): void;
}

export interface ServerFeature {
  /** For logs and errors. */
  readonly name: string;
  /** Mount this feature's Hono routes (the paths that are not hot). */
  routes?(app: Hono): void;
  /**
   * Node fast path: answer `request` and return true, or return false to let the next feature (and
   * finally the Hono app) have it. `url` is the origin form of the request target. Never called for
   * OPTIONS (CORS preflights belong to the Hono app).
   */
  handle?(request: IncomingMessage, response: ServerResponse, url: string): boolean;
  /** A TCP connection was accepted (before any request on it). */
  connection?(socket: Socket): void;
  /** Take a websocket upgrade of `path` (no query) and return true, or return false. */
  upgrade?(request: IncomingMessage, socket: Duplex, head: Buffer, path: string): boolean;
  /**
   * Before the server binds: load what `start` needs that the server does not import up front (a
   * module only some options use). Rejecting makes `listen()` reject, with nothing bound.
   */
  prepare?(): Promise<void>;
  /** The server listens. Throwing aborts `listen()` (nothing half-started is left serving). */
  start?(info: ListeningInfo): void;
  /**
   * After every `start`: work the server must finish before it counts as started (the fleet bus
   * connecting). `listen()` resolves once every one has; one that rejects closes the server, and
   * `listen()` rejects with its error.
   */
  started?(): Promise<void>;
  /**
   * Shutdown began: stop taking new work, and start what may run while the features listed after
   * this one close (e.g. a drain whose deadline counts from now). Called once, before any `close`.
   */
  stopping?(): void;
  /** Release everything; idempotent. */
  close?(): Promise<void> | void;
}
