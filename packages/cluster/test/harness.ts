/**
 * In-process clusters for tests: each node is a real `node:http` server on 127.0.0.1, port 0, that
 * serves GET /mdp/meta from `node.meta()`, hands /mdp/cluster upgrades to `node.handleUpgrade`, and
 * speaks plain MDP on every other websocket path (enough for mirrors to register into it).
 */
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import { Router, systemClock, type Session } from '@mdp/core';
import {
  PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_RANGES,
  parseClientMessage,
  type ClientDescriptor,
  type MetaDocument,
  type ServerToClientMessage,
} from '@mdp/protocol';
import {
  descriptor,
  fakeClient,
  listen as listenOn,
  observedClock,
  recordingLogger,
  skill,
  until as untilChange,
  type FakeClient,
  type LogRecord,
  type Reply,
  type Subscribe,
} from '@mdp/test-kit';
import { MIRROR_PROOF_HEADER, type ClusterNode, type ClusterNodeOptions, type MirrorPeer } from '../src/index.js';
import type { LinkFaults } from '../src/links.js';
import { createNode } from '../src/node.js';

/** Short timings: heartbeats every 30 ms, a 300 ms lease. */
export const FAST = {
  heartbeatIntervalMs: 30,
  leaseDurationMs: 300,
  electionTimeoutMinMs: 350,
  electionTimeoutMaxMs: 600,
  // In one process all nodes share an event loop, so survivors' pre-votes need a wider stagger.
  failoverStepMs: 40,
} as const;

export const FAST_DISCOVERY = { attempts: 0, intervalMs: 150, probeTimeoutMs: 200 } as const;

/** Pairs of nodes whose links are cut. */
export class Faults implements LinkFaults {
  private readonly blocked = new Set<string>();
  private readonly listeners = new Set<() => void>();

  isBlocked(from: string, to: string): boolean {
    return this.blocked.has(key(from, to)) || this.blocked.has(`*|${from}`) || this.blocked.has(`*|${to}`);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  cut(a: string, b: string): void {
    this.blocked.add(key(a, b));
    this.changed();
  }

  restore(a: string, b: string): void {
    this.blocked.delete(key(a, b));
    this.changed();
  }

  /** Cut every link of `id`, as its process dying would. */
  isolate(id: string): void {
    this.blocked.add(`*|${id}`);
    this.changed();
  }

  /** Undo `isolate`: a new process with the same id starts with working links. */
  revive(id: string): void {
    this.blocked.delete(`*|${id}`);
    this.changed();
  }

  isCut(a: string, b: string): boolean {
    return this.blocked.has(key(a, b));
  }

  healAll(): void {
    for (const k of [...this.blocked]) if (!k.startsWith('*|')) this.blocked.delete(k);
    this.changed();
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

function key(a: string, b: string): string {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

export interface TestNode {
  readonly id: string;
  readonly port: number;
  /** What the node was started with (to start it again). */
  readonly options: Omit<ClusterNodeOptions, 'router' | 'logger'>;
  readonly baseUrl: string;
  readonly router: Router;
  readonly node: ClusterNode;
  readonly logs: LogRecord[];
  /** Fires after each timer of the node ran, each line it logged, each leader and client change. */
  readonly changes: Subscribe;
  /** Fires after each timer of the node ran. */
  readonly ticks: Subscribe;
  /** Graceful: the node resigns, then its server closes. */
  stop(): Promise<void>;
  /** As if the process died: every link cut without a resign, the server gone. */
  kill(): Promise<void>;
  /** Cut every MDP websocket (not the control links) abruptly. */
  dropMdpSockets(): void;
  /**
   * Every MDP websocket upgrade: its mirror proof header, and the member `node.mirrorPeer` said it
   * proves (asked once per upgrade, as the server does under an auth policy).
   */
  readonly mdpUpgrades: Array<{ readonly proof: string | undefined; readonly peer: MirrorPeer | undefined }>;
  readonly stopped: boolean;
}

interface Listening {
  server: Server;
  port: number;
  sockets: Set<Socket>;
}

async function listen(port = 0): Promise<Listening> {
  const server = createServer();
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return { server, port: await listenOn(server, port), sockets };
}

export function metaDocumentOf(serverId: string, port: number, node: ClusterNode): MetaDocument {
  const base = `http://127.0.0.1:${port}`;
  return {
    protocol: 'mdp',
    protocolVersion: PROTOCOL_VERSION,
    supportedProtocolRanges: [...SUPPORTED_PROTOCOL_RANGES],
    serverId,
    endpoints: {
      ws: `ws://127.0.0.1:${port}`,
      httpLoop: `${base}/mdp/http-loop`,
      auth: `${base}/mdp/auth`,
      meta: `${base}/mdp/meta`,
      cluster: `ws://127.0.0.1:${port}/mdp/cluster`,
    },
    features: node.features(),
    cluster: node.meta(),
  };
}

export type NodeOverrides = Partial<Omit<ClusterNodeOptions, 'router' | 'logger'>>;

/** Start `count` nodes that seed each other; `overrides(i, ports)` adjusts each one's options. */
export async function startCluster(
  count: number,
  overrides: (index: number, ports: number[]) => NodeOverrides = () => ({}),
  faults: Faults = new Faults(),
): Promise<TestNode[]> {
  const listening = await Promise.all(Array.from({ length: count }, () => listen()));
  const ports = listening.map((l) => l.port);
  const seeds = ports.map((p) => `http://127.0.0.1:${p}`);
  const nodes = listening.map((l, i) => {
    const extra = overrides(i, ports);
    return attach(l, faults, {
      serverId: `127.0.0.1:${l.port}`,
      clusterId: 'test',
      ...FAST,
      ...extra,
      discovery: { ...FAST_DISCOVERY, seedUrls: seeds, ...extra.discovery },
    });
  });
  for (const n of nodes) n.start();
  return nodes.map((n) => n.test);
}

/**
 * A new process for a node that was stopped or killed: same id, port and options (a state file
 * included), with working links again.
 */
export async function restartNode(old: TestNode, faults: Faults): Promise<TestNode> {
  if (!old.stopped) throw new Error(`${old.id} is still running`);
  faults.revive(old.id);
  const n = attach(await listen(old.port), faults, old.options);
  n.start();
  return n.test;
}

/** One node on its own port (its discovery options decide whom it finds). */
export async function startNode(options: NodeOverrides & { serverId?: string }): Promise<TestNode> {
  const l = await listen();
  const n = attach(l, new Faults(), {
    serverId: options.serverId ?? `127.0.0.1:${l.port}`,
    clusterId: 'test',
    ...FAST,
    ...options,
    discovery: { ...FAST_DISCOVERY, ...options.discovery },
  });
  n.start();
  return n.test;
}

/** The changes of every node started in this test file (see {@link until}). */
const running = new Set<Subscribe>();

function attach(l: Listening, faults: Faults, options: Omit<ClusterNodeOptions, 'router' | 'logger'>): { test: TestNode; start(): void } {
  const { logger, records: logs, lines } = recordingLogger({ fields: { node: options.serverId } });
  const router = new Router({ logger, invocationTimeoutMs: 3000 });
  // The node's own timers, reported: a condition on it is checked after each of them.
  const { clock, ticks } = observedClock(options.clock ?? systemClock);
  const node = createNode({ ...options, clock, router, logger }, { faults });
  const changes: Subscribe = (listener) => {
    const offs = [ticks(listener), lines.subscribe(listener), node.onLeaderChange(listener), router.onClientEvent(listener), router.onSessionEvent(listener)];
    return () => {
      for (const off of offs) off();
    };
  };
  running.add(changes);
  const { server, port, sockets } = l;
  const mdp = new WebSocketServer({ noServer: true });
  mdp.on('connection', (ws) => {
    const session: Session = router.openSession({
      kind: 'ws',
      send: (message: ServerToClientMessage) => {
        if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
      },
      close: (code: number, reason: string) => ws.close(code, reason),
    });
    ws.on('message', (data) => {
      let json: unknown;
      try {
        json = JSON.parse(String(data));
      } catch {
        return ws.close(1008, 'not JSON');
      }
      const parsed = parseClientMessage(json);
      if (!parsed.ok) return ws.close(1008, parsed.error.slice(0, 100));
      try {
        session.handle(parsed.value);
      } catch (error) {
        ws.close(1008, String((error as Error).message).slice(0, 100));
      }
    });
    ws.on('close', () => session.end());
  });
  server.on('request', (req, res) => {
    if (req.url === '/mdp/meta' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(metaDocumentOf(options.serverId, port, node)));
      return;
    }
    res.writeHead(404).end();
  });
  const mdpUpgrades: TestNode['mdpUpgrades'] = [];
  server.on('upgrade', (req, socket, head) => {
    if ((req.url ?? '').split('?')[0] === '/mdp/cluster') return node.handleUpgrade(req, socket, head);
    const proof = req.headers[MIRROR_PROOF_HEADER];
    mdpUpgrades.push({ proof: typeof proof === 'string' ? proof : undefined, peer: node.mirrorPeer(req.headers) });
    mdp.handleUpgrade(req, socket, head, (ws) => mdp.emit('connection', ws, req));
  });

  let stopped = false;
  const shutdown = async (graceful: boolean): Promise<void> => {
    if (stopped) return;
    stopped = true;
    running.delete(changes);
    if (!graceful) faults.isolate(options.serverId);
    await node.close();
    await router.close();
    for (const client of mdp.clients) client.terminate();
    mdp.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  };
  const test: TestNode = {
    id: options.serverId,
    port,
    options,
    baseUrl: `http://127.0.0.1:${port}`,
    router,
    node,
    logs,
    changes,
    ticks,
    stop: () => shutdown(true),
    kill: () => shutdown(false),
    dropMdpSockets: () => {
      for (const client of mdp.clients) client.terminate();
    },
    mdpUpgrades,
    get stopped() {
      return stopped;
    },
  };
  return {
    test,
    start: () => node.start({ wsUrl: `ws://127.0.0.1:${port}`, clusterUrl: `ws://127.0.0.1:${port}/mdp/cluster`, metaUrl: `${test.baseUrl}/mdp/meta` }),
  };
}

/**
 * Resolve once `condition()` holds; rejects with `what` after `timeoutMs`. It is checked whenever
 * any running node of this file changes: a timer of its own ran (member counts follow heartbeats,
 * which arrive between a leader's ticks), it logged, its leader or a client of its router changed;
 * and on the changes of `also` (a fake client's calls, a listener of the test's).
 */
export async function until(condition: () => boolean, timeoutMs: number, what: string, also: readonly Subscribe[] = []): Promise<void> {
  const everyNode: Subscribe = (listener) => {
    const offs = [...running].map((changes) => changes(listener));
    return () => {
      for (const off of offs) off();
    };
  };
  await untilChange([everyNode, ...also], () => condition() || undefined, { timeoutMs, what });
}

/**
 * Resolves after `count` timers of `nodes` ran in all: the cluster's own time, for a schedule that
 * needs some of it to pass (a chaos test between two rounds of faults), never a sleep of the test's.
 */
export async function ticks(nodes: readonly TestNode[], count: number): Promise<void> {
  let seen = 0;
  const counted = nodes.map(
    (n): Subscribe =>
      (listener) =>
        n.ticks(() => ((seen += 1), listener())),
  );
  await untilChange(counted, () => seen >= count || undefined);
}

export function live(nodes: readonly TestNode[]): TestNode[] {
  return nodes.filter((n) => !n.stopped);
}

/** The single leader all live nodes agree on (same term, same leader id), or undefined. */
export function agreedLeader(nodes: readonly TestNode[]): TestNode | undefined {
  const alive = live(nodes);
  const leaders = alive.filter((n) => n.node.meta().role === 'leader');
  if (leaders.length !== 1) return undefined;
  const leader = leaders[0] as TestNode;
  const term = leader.node.meta().term;
  return alive.every((n) => n.node.meta().leaderId === leader.id && n.node.meta().term === term) ? leader : undefined;
}

/** Records every (term, leader) any node ever claimed; `violations` lists terms with two leaders. */
export class LeaderHistory {
  readonly leaders = new Map<number, string>();
  readonly violations: string[] = [];

  watch(nodes: readonly TestNode[]): void {
    for (const n of nodes) {
      n.node.onLeaderChange((change) => {
        if (change.role === 'leader') this.record(change.term, n.id);
      });
    }
  }

  /** Also sample every live node's meta (catches a leader that never emitted a change). */
  sample(nodes: readonly TestNode[]): void {
    for (const n of live(nodes)) {
      const meta = n.node.meta();
      if (meta.role === 'leader') this.record(meta.term, n.id);
    }
  }

  private record(term: number, id: string): void {
    const other = this.leaders.get(term);
    if (other !== undefined && other !== id) this.violations.push(`term ${term}: ${other} and ${id}`);
    else this.leaders.set(term, id);
  }
}

/**
 * A local client registered straight on `router` (the kit's fake client): each call is answered
 * with `reply(path)` on a later turn of the event loop, as a client across a socket would.
 */
export function scriptedClient(router: Router, client: ClientDescriptor, reply: (path: string) => Reply): FakeClient {
  return fakeClient(router, client, { kind: 'test', later: true, reply: (call) => reply(call.path) });
}

/** A client that answers every call with `answer(path)`. */
export function attachClient(router: Router, client: ClientDescriptor, answer: (path: string) => unknown = (p) => `content of ${p}`): FakeClient {
  return scriptedClient(router, client, (path) => ({ ok: true, data: answer(path) }));
}

export function skillClient(id: string): ClientDescriptor {
  return descriptor(id, [skill('/docs/review/skill.md', { description: 'review' })], { name: `client ${id}` });
}
