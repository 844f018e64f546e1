/**
 * `createMcpBridge`: the host contract as an MCP server. One catalog (names, debounce, grace) is
 * shared by every session; each session is its own SDK `Server` on its own transport (stdio, or
 * one Streamable HTTP session). The catalog follows the host only while a session is open.
 *
 *   HostApi ──▶ catalog driver ──▶ surface ──▶ session servers ──▶ transports ──▶ agents
 *                     └── list_changed (debounced, per kind) ──────┘
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { silentLogger, type HostApi, type Logger } from '@mdp/core';
import type { CatalogKind, CatalogOptions } from './catalog.js';
import { createCatalogDriver } from './catalog-driver.js';
import { systemClock, type Clock } from './clock.js';
import { createSessionServer } from './session.js';

export interface McpBridgeOptions extends Partial<CatalogOptions> {
  /** Where clients are listed and called: a local router's host, or a follower's that asks its leader. */
  readonly host: HostApi;
  /** Name and version the bridge gives in `initialize`. Default `mdp-server` 0.0.0. */
  readonly serverInfo?: { readonly name: string; readonly version: string };
  readonly logger?: Logger;
  readonly clock?: Clock;
  /**
   * The server's own guide (an MDP server's `GET /SKILL.md`), listed in `resources/list` as
   * `mdp:///SKILL.md` and read by `resources/read`; asked for on each read. Default: none.
   */
  readonly guide?: ServerGuide;
}

/** The text of the server's guide (Markdown), made when an agent reads it. */
export type ServerGuide = () => string | Promise<string>;

export interface McpSession {
  /** The session's SDK server (for its events; the bridge answers every request). */
  readonly server: Server;
  /** Resolves once the session has ended, from either side. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

export interface McpBridge {
  /** Serve one MCP session over `transport` until either side closes it. */
  connect(transport: Transport): Promise<McpSession>;
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

export function createMcpBridge(options: McpBridgeOptions): McpBridge {
  const { host, serverInfo = { name: 'mdp-server', version: '0.0.0' } } = options;
  const logger = (options.logger ?? silentLogger).child({ component: 'mcp' });
  const clock = options.clock ?? systemClock;
  /** Open sessions, and whether each has finished `initialize` (only those hear notifications). */
  const sessions = new Map<Server, { initialized: boolean }>();
  let closed = false;

  const driver = createCatalogDriver({
    host,
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
  });

  const surface = async () => {
    await driver.ready();
    return driver.surface();
  };

  return {
    async connect(transport) {
      if (closed) throw new Error('The MCP bridge is closed');
      const server = createSessionServer({ host, logger, clock, serverInfo, surface, guide: options.guide });
      const session = { initialized: false };
      let ended!: () => void;
      const done = new Promise<void>((resolve) => (ended = resolve));
      server.oninitialized = () => {
        session.initialized = true;
        logger.info('mcp.session_ready', { client: server.getClientVersion()?.name, sessionId: transport.sessionId });
      };
      server.onclose = () => {
        if (!sessions.delete(server)) return;
        logger.info('mcp.session_closed', { sessionId: transport.sessionId });
        if (sessions.size === 0) driver.unfollow();
        ended();
      };
      server.onerror = (error) => logger.debug('mcp.session_error', { error: error.message });
      sessions.set(server, session);
      driver.follow();
      try {
        await server.connect(transport);
      } catch (error) {
        sessions.delete(server);
        if (sessions.size === 0) driver.unfollow();
        throw error;
      }
      return { server, closed: done, close: () => server.close() };
    },
    get sessions() {
      return sessions.size;
    },
    async close() {
      closed = true;
      await Promise.all([...sessions.keys()].map((server) => server.close().catch(() => undefined)));
      sessions.clear();
      driver.unfollow();
    },
  };
}
