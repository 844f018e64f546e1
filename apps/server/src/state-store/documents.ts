/**
 * What the state store's four files hold (README "State store" documents each field): made from
 * what the server knows at the moment of a write, without I/O. Lists hold one entry per line, so
 * that a large catalog stays readable with `grep` and costs no indentation.
 *
 *   clients.json   one entry per registered client: a summary of its descriptor, its connection
 *   routes.json    one entry per path: client, type, method, path
 *   services.json  what this server serves, and where (absolute URLs)
 *   snapshot.json  server, cluster view and counts; written last
 */
import type { ClientInfo } from '@mdp/core';
import { methodOf, proxyMarker, type ClusterView } from '@mdp/protocol';
import type { ServerUrls } from '../urls.js';
import type { StoreFile } from './files.js';

/** Version of the files' format: a field is only ever added within one version. */
export const STORE_FORMAT = 1;

export const STORE_FILE_NAMES = ['clients.json', 'routes.json', 'services.json', 'snapshot.json'] as const;

export interface StoreFacts {
  /** Wall clock of the write, ms since the epoch. */
  readonly now: number;
  /** Number of this write (the first is 1). */
  readonly generation: number;
  /** `stopped`: the last write, made while the server closes. */
  readonly status: 'running' | 'stopped';
  readonly server: {
    readonly serverId: string;
    readonly clusterId: string;
    /** `auto`, `proxy-required` or `standalone`. */
    readonly clusterMode: string;
    readonly protocolVersion: string;
    readonly pid: number;
    /** The directory the server started in. */
    readonly cwd: string;
    readonly storeDir: string;
    /** When the server started listening, ms since the epoch. */
    readonly startedAt: number;
  };
  readonly urls: ServerUrls;
  readonly secure: boolean;
  readonly cluster: ClusterView;
  /** The upstream proxy's state (a follower mirroring its clients); `undefined` standalone. */
  readonly upstreamProxy: unknown;
  /** Whether `/mcp` is served. */
  readonly mcp: boolean;
  readonly clients: readonly ClientInfo[];
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The string fields of a descriptor worth a summary (clients may send anything: strings only). */
function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function clientEntry(client: ClientInfo): Record<string, unknown> {
  const { descriptor } = client;
  const mirror = proxyMarker(descriptor);
  return {
    id: client.id,
    name: text(descriptor.name),
    description: text(descriptor.description),
    version: text(descriptor.version),
    platform: text(descriptor.platform),
    connectedAt: iso(client.registeredAt),
    lastSeenAt: iso(client.lastSeen),
    connection: { mode: client.transportKind, secure: client.secure, authSource: client.authSource },
    paths: client.paths.length,
    ...(mirror ? { mirrorOf: mirror } : {}),
  };
}

function* routeEntries(clients: readonly ClientInfo[]): Generator<Record<string, unknown>> {
  for (const client of clients) {
    const clientName = text(client.descriptor.name);
    for (const path of client.paths) {
      yield {
        clientId: client.id,
        clientName,
        type: path.type,
        method: methodOf(path),
        path: path.path,
        description: text(path.description),
        contentType: 'contentType' in path ? text(path.contentType) : undefined,
      };
    }
  }
}

function* map<T, U>(items: Iterable<T>, f: (item: T) => U): Generator<U> {
  for (const item of items) yield f(item);
}

function services(f: StoreFacts): Record<string, unknown> {
  const http = f.urls.http;
  return {
    status: f.status === 'running' ? 'listening' : 'stopped',
    secure: f.secure,
    endpoints: { http, ws: f.urls.ws, httpLoop: f.urls.httpLoop, auth: f.urls.auth, meta: f.urls.meta, cluster: f.urls.cluster },
    skillRoutes: { direct: `${http}/skills/{clientId}/{path}`, nested: `${http}/{clientId}/skills/{path}` },
    hostApi: { clients: `${http}/mdp/clients`, paths: `${http}/mdp/paths`, call: `${http}/mdp/call`, callMany: `${http}/mdp/call-many` },
    mcp: f.mcp ? `${http}/mcp` : null,
    guide: `${http}/SKILL.md`,
    inspector: `${http}/mdp/inspector`,
    probes: { healthz: `${http}/healthz`, readyz: `${http}/readyz`, metrics: `${http}/metrics` },
    upstreamProxy: f.upstreamProxy ?? null,
  };
}

function counts(clients: readonly ClientInfo[]): Record<string, unknown> {
  const byType: Record<string, number> = { endpoint: 0, prompt: 0, skill: 0 };
  const byTransport: Record<string, number> = {};
  let paths = 0;
  let mirrored = 0;
  for (const client of clients) {
    byTransport[client.transportKind] = (byTransport[client.transportKind] ?? 0) + 1;
    if (proxyMarker(client.descriptor)) mirrored++;
    paths += client.paths.length;
    for (const path of client.paths) byType[path.type] = (byType[path.type] ?? 0) + 1;
  }
  return { clients: clients.length, mirroredClients: mirrored, paths, pathsByType: byType, clientsByTransport: byTransport };
}

function snapshot(f: StoreFacts): Record<string, unknown> {
  const { server } = f;
  return {
    scope: 'node-local',
    format: STORE_FORMAT,
    generation: f.generation,
    updatedAt: iso(f.now),
    status: f.status,
    server: { ...server, startedAt: iso(server.startedAt), url: f.urls.http },
    cluster: f.cluster,
    counts: counts(f.clients),
  };
}

/**
 * An array with one compact JSON entry per line, in pieces made as they are taken (a piece per
 * entry), so that a writer can take a large one a slice at a time.
 */
function* lines(entries: Iterable<unknown>): Generator<string> {
  let first = true;
  for (const entry of entries) {
    yield `${first ? '[\n' : ',\n'}${JSON.stringify(entry)}`;
    first = false;
  }
  yield first ? '[]\n' : '\n]\n';
}

const pretty = (value: unknown): string[] => [`${JSON.stringify(value, null, 2)}\n`];

/**
 * The four files, in the order they are written (snapshot.json last). The lists are made as they
 * are written, from `f` as it was given: the clients' descriptors are replaced, never changed, when
 * a client changes, so they show the moment the write started.
 */
export function storeFiles(f: StoreFacts): StoreFile[] {
  return [
    ['clients.json', { [Symbol.iterator]: () => lines(map(f.clients, clientEntry)) }],
    ['routes.json', { [Symbol.iterator]: () => lines(routeEntries(f.clients)) }],
    ['services.json', pretty(services(f))],
    ['snapshot.json', pretty(snapshot(f))],
  ];
}
