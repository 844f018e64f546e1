/**
 * Test helpers: a node:http server for `handleNode`. The loop client, the recording logger and the
 * session watch are the kit's (`@mdp/test-kit`).
 */
import { createServer, type Server } from 'node:http';
import type { Router } from '@mdp/core';
import { closeServer, listen } from '@mdp/test-kit';
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

/** Stop what a socket test started: the transport and the router, then the server and its connections. */
export async function stopServing(transport: HttpLoopTransport, router: Router, server: Server): Promise<void> {
  await transport.close();
  await router.close();
  server.closeAllConnections();
  await closeServer(server);
}
