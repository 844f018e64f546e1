/** Loopback ports for tests: listen on port 0, a port nothing listens on, runs of consecutive free ports. */
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';

/** Any server with node's `listen`/`address`/`close` (net, http, https). */
export interface Listener {
  listen(port: number, host: string, callback: () => void): unknown;
  once(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
  address(): AddressInfo | string | null;
  close(callback?: (error?: Error) => void): unknown;
}

/** Listen on `host` (default 127.0.0.1) at `port` (default 0: any free one); resolves with the port. */
export async function listen(server: Listener, port = 0, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Close `server`; resolves once it is closed (at once when it was not listening). */
export function closeServer(server: Listener): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A loopback port nothing listens on: bound, then released. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await closeServer(server);
  return port;
}

/**
 * Bind `count` consecutive loopback ports with `bind(port, index)` and resolve with the first. The
 * first port is picked at random below the OS's ephemeral range (32768 and up on Linux), where a
 * busy machine's outgoing connections do not take ports; when one of them is taken, what was bound
 * is closed and another run is tried.
 */
export async function bindConsecutive<S extends Listener>(
  count: number,
  bind: (port: number, index: number) => Promise<S>,
): Promise<{ first: number; servers: S[] }> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const first = 20_000 + Math.floor(Math.random() * 12_000);
    const servers: S[] = [];
    try {
      for (let i = 0; i < count; i += 1) servers.push(await bind(first + i, i));
      return { first, servers };
    } catch {
      await Promise.all(servers.map(closeServer));
    }
  }
  throw new Error(`no run of ${count} consecutive free ports found`);
}

/** `count` consecutive free loopback ports (bound, then released), for servers that must know their ports before they listen. */
export async function freePorts(count: number): Promise<number[]> {
  const { first, servers } = await bindConsecutive(count, async (port) => {
    const server: Server = createServer();
    await listen(server, port);
    return server;
  });
  await Promise.all(servers.map(closeServer));
  return Array.from({ length: count }, (_, i) => first + i);
}
