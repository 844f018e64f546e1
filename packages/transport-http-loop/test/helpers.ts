/**
 * Test helpers: a server on a real socket for each adapter (`handleNode` on node:http, the Hono
 * routes on @hono/node-server). The loop client, the recording logger and the session watch are
 * the kit's (`@mdp/test-kit`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { Router } from '@mdp/core';
import { closeServer, listen } from '@mdp/test-kit';
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
  return { server, port: await listen(server) };
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
  await closeServer(server);
}
