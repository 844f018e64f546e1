/**
 * Test helpers: a log watcher to wait on server-side events, an HTTP loop client over any fetch,
 * and a server on a real socket for each adapter (`handleNode` on node:http, the Hono routes on
 * @hono/node-server).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { Router, createLogger, type Logger, type Session, type SessionTransport } from '@mdp/core';
import type { AuthContext, ClientDescriptor } from '@mdp/protocol';
import { createHttpLoopRoutes } from '../src/hono.js';
import type { HttpLoopTransport } from '../src/index.js';

/** Where the servers of these tests mount the transport. */
export const MOUNT = '/mdp/http-loop';

/**
 * A node:http server on 127.0.0.1, port 0, that hands `${MOUNT}/*` to `transport.handleNode` and
 * answers every other path with `otherStatus` and an empty body.
 */
export async function serveHandleNode(transport: HttpLoopTransport, otherStatus = 404): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark < 0 ? url : url.slice(0, mark);
    if (path.startsWith(`${MOUNT}/`)) return transport.handleNode(req, res, path.slice(MOUNT.length));
    res.writeHead(otherStatus, { 'content-length': 0 });
    res.end();
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  return { server, port };
}

/** The Hono routes mounted at MOUNT of an app on @hono/node-server (127.0.0.1, port 0); other paths get `otherStatus`. */
export async function serveHonoRoutes(transport: HttpLoopTransport, otherStatus = 404): Promise<{ server: Server; port: number }> {
  const app = new Hono();
  app.route(MOUNT, createHttpLoopRoutes(transport));
  app.all('*', (c) => c.body(null, otherStatus as 404));
  let server: Server | undefined;
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(info.port)) as Server;
  });
  return { server: server!, port };
}

/** Both adapters, each serving a transport on a real socket: the table of the shared suites. */
export const ADAPTERS: ReadonlyArray<readonly [string, (transport: HttpLoopTransport, otherStatus?: number) => Promise<{ server: Server; port: number }>]> = [
  ['handleNode on node:http', serveHandleNode],
  ['Hono routes on @hono/node-server', serveHonoRoutes],
];

/** Stop what a socket test started: the transport and the router, then the server and its connections. */
export async function stopServing(transport: HttpLoopTransport, router: Router, server: Server): Promise<void> {
  await transport.close();
  await router.close();
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
}

export const CLIENT: ClientDescriptor = {
  id: 'c1',
  name: 'Client one',
  paths: [
    { type: 'endpoint', method: 'GET', path: '/hello' },
    { type: 'skill', path: '/docs/skill.md' },
  ],
};

export type LogRecord = Record<string, unknown> & { event: string };

export interface LogWatcher {
  readonly logger: Logger;
  readonly records: LogRecord[];
  /** Resolves at the next record of `event` logged after this call. */
  next(event: string): Promise<LogRecord>;
}

/** A debug logger whose lines tests can wait on, so they wait on events rather than sleep. */
export function watchLogs(): LogWatcher {
  const records: LogRecord[] = [];
  const waiters: { event: string; resolve: (record: LogRecord) => void }[] = [];
  const logger = createLogger({
    level: 'debug',
    write: (line) => {
      const record = JSON.parse(line) as LogRecord;
      records.push(record);
      for (const waiter of [...waiters]) {
        if (waiter.event !== record.event) continue;
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(record);
      }
    },
  });
  return {
    logger,
    records,
    next: (event) => new Promise((resolve) => waiters.push({ event, resolve })),
  };
}

export type FetchLike = (path: string, init?: RequestInit) => Response | Promise<Response>;

/** An HTTP loop client speaking to `fetchFn` (in-process `app.request` or a real socket). */
export function loopClient(fetchLike: FetchLike) {
  const fetchFn = async (path: string, init?: RequestInit): Promise<Response> => fetchLike(path, init);
  const json = (body: unknown): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    fetch: fetchFn,
    async connect(init: RequestInit = {}): Promise<string> {
      const response = await fetchFn('/connect', { method: 'POST', ...init });
      if (response.status !== 200) throw new Error(`connect answered ${response.status}`);
      return ((await response.json()) as { sessionId: string }).sessionId;
    },
    send(sessionId: string, message: unknown, headers: Record<string, string> = {}): Promise<Response> {
      const init = json({ message });
      return fetchFn('/send', { ...init, headers: { ...(init.headers as Record<string, string>), 'x-mdp-session-id': sessionId, ...headers } });
    },
    poll(sessionId: string, waitMs?: number, init: RequestInit = {}): Promise<Response> {
      const query = new URLSearchParams({ sessionId });
      if (waitMs !== undefined) query.set('waitMs', String(waitMs));
      return fetchFn(`/poll?${query}`, init);
    },
    disconnect(sessionId: string): Promise<Response> {
      return fetchFn('/disconnect', { method: 'POST', headers: { 'x-mdp-session-id': sessionId } });
    },
    /** Connect and register CLIENT (or `client`); returns the session id. */
    async register(client: ClientDescriptor = CLIENT): Promise<string> {
      const sessionId = await this.connect();
      const response = await this.send(sessionId, { type: 'registerClient', client });
      if (response.status !== 202) throw new Error(`registerClient answered ${response.status}: ${await response.text()}`);
      return sessionId;
    },
  };
}

export type LoopClient = ReturnType<typeof loopClient>;

/** The message of a 200 poll. */
export async function polledMessage(response: Response): Promise<Record<string, unknown>> {
  if (response.status !== 200) throw new Error(`poll answered ${response.status}`);
  return ((await response.json()) as { message: Record<string, unknown> }).message;
}

/** A Router that keeps the core sessions it opens, so tests can read their auth and last-seen time. */
export class SpyRouter extends Router {
  readonly opened: Session[] = [];

  override openSession(transport: SessionTransport, transportAuth?: AuthContext, principal?: string): Session {
    const session = super.openSession(transport, transportAuth, principal);
    this.opened.push(session);
    return session;
  }

  session(id: string): Session {
    const session = this.opened.find((candidate) => candidate.id === id);
    if (!session) throw new Error(`no session ${id}`);
    return session;
  }
}
