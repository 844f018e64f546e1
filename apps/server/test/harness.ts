/**
 * End-to-end harness: a real server on an ephemeral loopback port, and the kit's MDP clients
 * (`@mdp/test-kit`) registered on it. Everything started here is stopped by the kit's `stopAll()`.
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ClientDescriptor } from '@mdp/protocol';
import { LoopTestClient, TestClient, freePorts, loopFetch, track, until } from '@mdp/test-kit';
import { createMdpServer, type MdpServer } from '../src/index.js';
import type { MdpClusterOptions } from '../src/cluster.js';
import type { MdpServerOptions } from '../src/settings/options.js';

export interface TestServer {
  server: MdpServer;
  http: string;
  ws: string;
  port: number;
  /** Under TLS with a CA file: the CA the test's clients trust. */
  ca?: Buffer;
  /** `fetch`, or under TLS one that trusts `ca`. */
  fetch: Fetch;
}

export type Fetch = (url: string, init?: RequestInit) => Promise<Response>;

export async function startServer(options: MdpServerOptions = {}): Promise<TestServer> {
  const server = createMdpServer({ host: '127.0.0.1', port: 0, logLevel: 'silent', ...options });
  const info = await server.listen();
  track(server);
  const caFile = options.tls?.caFile;
  const ca = caFile === undefined ? undefined : readFileSync(caFile);
  return { server, http: info.urls.http, ws: info.urls.ws, port: info.port, ...(ca ? { ca } : {}), fetch: ca ? tlsFetch(ca) : fetch };
}

/**
 * A small `fetch` over node's HTTPS client that trusts `ca` (the global fetch trusts only node's
 * CAs). One connection per request, so that nothing is left open.
 */
export function tlsFetch(ca: Buffer): Fetch {
  return (url, init = {}) =>
    new Promise((resolve, reject) => {
      const headers = Object.fromEntries(new Headers(init.headers).entries());
      const request = httpsRequest(url, { method: init.method ?? 'GET', headers, ca, agent: false, ...(init.signal ? { signal: init.signal } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const answer = new Headers();
          for (const [name, value] of Object.entries(res.headers)) for (const one of [value ?? []].flat()) answer.append(name, one);
          resolve(new Response([204, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: answer }));
        });
      });
      request.on('error', reject);
      request.end(typeof init.body === 'string' ? init.body : undefined);
    });
}

/** Wait until the router lists (or no longer lists) `clientId`: checked on the router's client events. */
export async function clientChange(server: MdpServer, clientId: string, present: boolean): Promise<void> {
  await until(
    (change) => server.router.onClientEvent(change),
    () => server.router.hasClient(clientId) === present,
  );
}

/** Connect a websocket client, register it and wait until the server lists it. */
export async function registeredClient(t: TestServer, desc: ClientDescriptor, headers?: Record<string, string>): Promise<TestClient> {
  const client = await TestClient.connect(t.ws, { ...(headers ? { headers } : {}), ...(t.ca ? { ca: t.ca } : {}) });
  const listed = clientChange(t.server, desc.id, true);
  client.send({ type: 'registerClient', client: desc });
  await listed;
  return client;
}

/** Connect an HTTP loop client, register it (the server lists it once the send is answered) and keep it polling. */
export function registeredLoopClient(t: TestServer, desc: ClientDescriptor, headers: Record<string, string> = {}): Promise<LoopTestClient> {
  return LoopTestClient.register(loopFetch(`${t.http}/mdp/http-loop`, t.fetch), desc, { headers });
}

/** A GET with the path sent exactly as given (fetch would normalise dot segments). */
export function rawRequest(
  base: string,
  path: string,
  method = 'GET',
  /** Extra headers in the `rawHeaders` form, `[name, value, name, value, …]`, sent as given (repeats too). */
  extraHeaders?: string[],
): Promise<{ status: number; headers: import('node:http').IncomingHttpHeaders; body: string }> {
  const url = new URL(base);
  // node sends an array of headers as it is, without adding Host.
  const headers = extraHeaders && ['Host', url.host, ...extraHeaders];
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Cluster timings for in-process tests that are not about the defaults: short enough that an
 * election takes about a second, long enough (an 800 ms lease, heartbeats every 100 ms) that a
 * machine busy with the other test files in parallel does not move the lead by starving a leader.
 * The process tests use the same figures (processes.ts).
 */
export const TEST_CLUSTER_TIMING = {
  heartbeatIntervalMs: 100,
  leaseDurationMs: 800,
  electionTimeoutMinMs: 1000,
  electionTimeoutMaxMs: 1500,
} as const;

/**
 * Two in-process servers on loopback that find each other (discovery over their two ports) and
 * agree on a leader; both are stopped by `stopAll`. `cluster` should hold a lease long enough that
 * the leader stays for a whole test on a loaded machine.
 */
export async function startTwoServerCluster(options: MdpServerOptions, cluster: MdpClusterOptions): Promise<{ leader: MdpServer; follower: MdpServer }> {
  const ports = await freePorts(2);
  const group = ports.map((port) =>
    createMdpServer({
      host: '127.0.0.1',
      port,
      logLevel: 'silent',
      ...options,
      cluster: { ...cluster, discovery: { startPort: ports[0] as number, attempts: 2, intervalMs: 150, probeTimeoutMs: 200 } },
    }),
  );
  for (const server of group) track(server);
  await Promise.all(group.map((s) => s.listen()));
  const leader = await until(
    group.map((s) => (listener: () => void) => (s.cluster as NonNullable<MdpServer['cluster']>).onLeaderChange(listener)),
    () => {
      const leaders = group.filter((s) => s.cluster?.meta().role === 'leader');
      const only = leaders[0];
      return leaders.length === 1 && only !== undefined && group.every((s) => s.cluster?.meta().leaderId === only.info?.serverId) ? only : undefined;
    },
    { timeoutMs: 15_000, what: 'an agreed leader' },
  );
  return { leader, follower: group.find((s) => s !== leader) as MdpServer };
}
