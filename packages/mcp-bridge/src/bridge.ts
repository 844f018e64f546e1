/**
 * `createMcpBridge`: the host contract as an MCP server. One catalog (names, debounce, grace) is
 * shared by every session; each session is its own SDK `Server` on its own transport (stdio, or
 * one Streamable HTTP session). The catalog follows the host only while a session is open.
 *
 *   HostApi ──▶ catalog driver ──▶ surface ──▶ session servers ──▶ transports ──▶ agents
 *                     └── list_changed (debounced, per kind) ──────┘
 *
 * Under tenancy by principal (`perViewer`) each caller sees only its own clients: the sessions of
 * one viewer share one catalog, made from the host as that viewer sees it, and hear list_changed
 * for it alone; a session's calls name its viewer too, so another's client is an unknown one.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { AuthContext } from '@mdp/protocol';
import { silentLogger, viewedBy, type HostApi, type Logger, type Viewer } from '@mdp/core';
import type { CatalogKind, CatalogOptions } from './catalog.js';
import { createCatalogDriver } from './catalog-driver.js';
import { systemClock, type Clock } from './clock.js';
import { DEFAULT_MAX_CONTENT_BYTES } from './lite.js';
import { clientEventMessages } from './logging.js';
import { createSession, type BridgeSession } from './session.js';
import { TaskBook, type TaskLimits } from './tasks.js';

export interface McpBridgeOptions extends Partial<CatalogOptions> {
  /** Where clients are listed and called: a local router's host, or a follower's that asks its leader. */
  readonly host: HostApi;
  /**
   * What the bridge says of itself in `initialize` (MCP's `Implementation`: `title`, `icons` and
   * `websiteUrl` besides the name and version). Default `mdp-server` 0.0.0.
   */
  readonly serverInfo?: ServerInfo;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /**
   * The server's own guide (an MDP server's `GET /SKILL.md`), listed in `resources/list` as
   * `mdp:///SKILL.md` and read by `resources/read`; asked for on each read, for the session's
   * viewer (under tenancy by principal it speaks only of what that viewer sees). Default: none.
   */
  readonly guide?: ServerGuide;
  /**
   * Each viewer (`connect`'s) gets a catalog of its own, as the host shows it to that viewer: for a
   * host under tenancy by principal (`createTenancy` of `@mdp/core`), where callers see different
   * clients. Default false: one catalog, as the host shows it to itself, for every session.
   */
  readonly perViewer?: boolean;
  /**
   * Most bytes of text and decoded data in one tool result's content blocks (an image, audio, a
   * client's MCP content) or one skill's blob; past it the agent gets a `too_large` error, never a
   * truncated image. Default {@link DEFAULT_MAX_CONTENT_BYTES} (3 MiB).
   */
  readonly maxContentBytes?: number;
  /**
   * MCP tasks (`callPath` and the catalog tools called with `task`): their calls' time-out, and
   * the tasks a session and a principal hold. Defaults `MCP_TASK_DEFAULTS` (10 minutes; 32
   * per session, 128 per principal). A bad value throws a RangeError.
   */
  readonly tasks?: Partial<TaskLimits>;
}

export interface McpConnectOptions {
  /**
   * Who the session's agent is (the principal of its credential): its listings, calls and catalog
   * are the host's for that viewer. Default: none, the host itself (every client).
   */
  readonly viewer?: Viewer;
  /**
   * The transport answers each request with one JSON response, not a stream (the Streamable HTTP
   * handler's way): notifications about a request, such as progress, go on the session's GET stream.
   */
  readonly jsonAnswers?: boolean;
  /**
   * The `auth` the session's calls carry to clients, from what a call names itself (`callPath`'s
   * `auth` argument, else `undefined`) and what the transport said of the request that made the
   * call (`authInfo`, the SDK's: Streamable HTTP's `handleRequest` option): under a server that
   * signs teams in, who the agent is (its principal and scopes, never its token). Default: a call's
   * own `auth`, as given.
   */
  readonly forward?: (given: AuthContext | undefined, authInfo: AuthInfo | undefined) => AuthContext | undefined;
}

export interface ServerInfo {
  readonly name: string;
  readonly version: string;
  readonly title?: string;
  readonly websiteUrl?: string;
  readonly icons?: ReadonlyArray<{ readonly src: string; readonly mimeType?: string; readonly sizes?: readonly string[]; readonly theme?: 'light' | 'dark' }>;
}

/** `host` whose calls carry the auth `forward` makes of theirs. */
function forwardedBy(host: HostApi, forward: ((given: AuthContext | undefined) => AuthContext | undefined) | undefined): HostApi {
  if (forward === undefined) return host;
  const withAuth = <R extends { readonly auth?: AuthContext | undefined }>(request: R): R => {
    const auth = forward(request.auth);
    return auth === undefined ? request : { ...request, auth };
  };
  return {
    listClients: (request, options) => host.listClients(request, options),
    listPaths: (request, options) => host.listPaths(request, options),
    callPath: (request, options) => host.callPath(withAuth(request), options),
    callPaths: (request, options) => host.callPaths(withAuth(request), options),
    onChange: (listener, viewer) => host.onChange(listener, viewer),
  };
}

/** The text of the server's guide (Markdown), made when an agent reads it, for the session's `viewer` (`connect`'s). */
export type ServerGuide = (viewer: Viewer | undefined) => string | Promise<string>;

export interface McpSession {
  /** The session's SDK server (for its events; the bridge answers every request). */
  readonly server: Server;
  /** Resolves once the session has ended, from either side. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

export interface McpBridge {
  /** Serve one MCP session over `transport` until either side closes it. */
  connect(transport: Transport, options?: McpConnectOptions): Promise<McpSession>;
  /** Open sessions. */
  readonly sessions: number;
  /** End every session and stop following the host. Idempotent. */
  close(): Promise<void>;
}

const NOTIFY: Record<CatalogKind, (server: Server) => Promise<void>> = {
  tools: (server) => server.sendToolListChanged(),
  prompts: (server) => server.sendPromptListChanged(),
  resources: (server) => server.sendResourceListChanged(),
};

/** Catalogs kept, with their names, after their last session ended (per viewer): past this, the oldest idle goes. */
export const MAX_IDLE_CATALOGS = 64;

/** The sessions of one viewer and the catalog they share. */
interface Group {
  readonly driver: ReturnType<typeof createCatalogDriver>;
  /** Open sessions, and whether each has finished `initialize` (only those hear notifications). */
  readonly sessions: Map<Server, { initialized: boolean; readonly session: BridgeSession }>;
}

/** The group key of the host itself, and of a viewer without a principal. */
const ALL = Symbol('all');
const NOBODY = Symbol('nobody');

export function createMcpBridge(options: McpBridgeOptions): McpBridge {
  const { host, serverInfo = { name: 'mdp-server', version: '0.0.0' } } = options;
  const logger = (options.logger ?? silentLogger).child({ component: 'mcp' });
  const clock = options.clock ?? systemClock;
  const groups = new Map<string | symbol, Group>();
  // Every session's tasks, counted per principal (a session without one counts as the principal '').
  const taskBook = new TaskBook({ limits: options.tasks, clock, logger });
  let closed = false;

  const groupOf = (viewer: Viewer | undefined): Group => {
    const key = !options.perViewer || viewer === undefined ? ALL : (viewer.principal ?? NOBODY);
    let group = groups.get(key);
    if (group) return group;
    const sessions = new Map<Server, { initialized: boolean; readonly session: BridgeSession }>();
    const driver = createCatalogDriver({
      host: key === ALL ? host : viewedBy(host, viewer),
      catalog: options,
      clock,
      logger,
      notify(kinds) {
        for (const [server, session] of sessions) {
          if (!session.initialized) continue;
          for (const kind of kinds) {
            NOTIFY[kind](server).catch((error: unknown) => logger.debug('mcp.notify_failed', { kind, error: (error as Error).message }));
          }
        }
      },
      onClients(changes) {
        const messages = clientEventMessages(changes);
        for (const { initialized, session } of sessions.values()) {
          if (!initialized) continue;
          for (const message of messages) session.log(message);
          session.clientsChanged(changes);
        }
      },
    });
    group = { driver, sessions };
    groups.set(key, group);
    // Idle catalogs keep their names for a session that comes back; a few hundred viewers' at most.
    if (groups.size > MAX_IDLE_CATALOGS) {
      for (const [other, idle] of groups) {
        if (groups.size <= MAX_IDLE_CATALOGS) break;
        if (idle.sessions.size === 0 && other !== key) groups.delete(other);
      }
    }
    return group;
  };

  const leave = (group: Group, server: Server): boolean => {
    if (!group.sessions.delete(server)) return false;
    if (group.sessions.size === 0) group.driver.unfollow();
    return true;
  };

  return {
    async connect(transport, connectOptions = {}) {
      if (closed) throw new Error('The MCP bridge is closed');
      const { viewer, forward } = connectOptions;
      const { guide } = options;
      const group = groupOf(viewer);
      const tasks = taskBook.open(viewer?.principal ?? '');
      const { driver } = group;
      const surface = async () => {
        await driver.ready();
        return driver.surface();
      };
      const viewed = viewedBy(host, viewer);
      const bridgeSession = createSession({
        host: forwardedBy(viewed, forward && ((given) => forward(given, undefined))),
        // Each request's calls carry what its own credential says, not another request's of the session.
        hostFor: forward && ((authInfo) => forwardedBy(viewed, (given) => forward(given, authInfo))),
        logger,
        clock,
        serverInfo,
        surface,
        clients: () => driver.clients(),
        guide: guide && (() => guide(viewer)),
        maxContentBytes: options.maxContentBytes ?? DEFAULT_MAX_CONTENT_BYTES,
        jsonAnswers: connectOptions.jsonAnswers,
        tasks,
      });
      const { server } = bridgeSession;
      const session = { initialized: false, session: bridgeSession };
      let ended!: () => void;
      const done = new Promise<void>((resolve) => (ended = resolve));
      server.oninitialized = () => {
        session.initialized = true;
        logger.info('mcp.session_ready', { client: server.getClientVersion()?.name, sessionId: transport.sessionId });
      };
      server.onclose = () => {
        // Its tasks end with it: their calls end at once.
        tasks.close();
        if (!leave(group, server)) return;
        logger.info('mcp.session_closed', { sessionId: transport.sessionId });
        ended();
      };
      server.onerror = (error) => logger.debug('mcp.session_error', { error: error.message });
      group.sessions.set(server, session);
      driver.follow();
      try {
        await server.connect(transport);
      } catch (error) {
        tasks.close();
        leave(group, server);
        throw error;
      }
      return { server, closed: done, close: () => server.close() };
    },
    get sessions() {
      let open = 0;
      for (const group of groups.values()) open += group.sessions.size;
      return open;
    },
    async close() {
      closed = true;
      const servers = [...groups.values()].flatMap((group) => [...group.sessions.keys()]);
      await Promise.all(servers.map((server) => server.close().catch(() => undefined)));
      for (const group of groups.values()) {
        group.sessions.clear();
        group.driver.unfollow();
      }
    },
  };
}
