import type { CallPathRequest, CallPathsRequest, CallResult, ListedClient, PathDescriptor } from '@mdp/protocol';
import { MdpError, type CallOptions, type HostApi } from '@mdp/core';
import type { Clock } from '../src/clock.js';

export function listed(id: string, paths: PathDescriptor[], extra: Partial<ListedClient> = {}): ListedClient {
  return {
    id,
    name: `Client ${id}`,
    paths,
    status: 'online',
    connectedAt: '2025-01-01T00:00:00.000Z',
    lastSeenAt: '2025-01-01T00:00:00.000Z',
    connection: { mode: 'ws', secure: false, authSource: 'none' },
    aliases: [],
    ...extra,
  } as ListedClient;
}

/** A host contract held in memory: set the clients, script the answers, see the calls. */
export class FakeHost implements HostApi {
  clients: ListedClient[] = [];
  readonly calls: Array<{ request: CallPathRequest; options: CallOptions }> = [];
  answer: (request: CallPathRequest) => CallResult | Promise<CallResult> = () => ({ ok: true, data: 'done' });
  failListing = false;
  private readonly listeners = new Set<() => void>();

  set(clients: ListedClient[]): void {
    this.clients = clients;
    for (const listener of this.listeners) listener();
  }

  get listening(): number {
    return this.listeners.size;
  }

  async listClients() {
    if (this.failListing) throw new MdpError('not_ready', 'No leader');
    return { clients: this.clients };
  }

  async listPaths(request: { clientId?: string } = {}) {
    if (request.clientId !== undefined && !this.clients.some((c) => c.id === request.clientId)) {
      throw new MdpError('not_found', `No client "${request.clientId}" is connected`);
    }
    return {
      paths: this.clients
        .filter((c) => request.clientId === undefined || c.id === request.clientId)
        .flatMap((c) => c.paths.map((p) => ({ ...p, clientId: c.id, clientName: c.name }))),
    };
  }

  async callPath(request: CallPathRequest, options: CallOptions = {}): Promise<CallResult> {
    this.calls.push({ request, options });
    return this.answer(request);
  }

  async callPaths(request: CallPathsRequest, options: CallOptions = {}) {
    const ids = request.clientIds ?? this.clients.filter((c) => c.paths.some((p) => p.path === request.path)).map((c) => c.id);
    if (ids.length === 0) throw new MdpError('not_found', `No connected client has ${request.method} ${request.path}`);
    return { results: await Promise.all(ids.map(async (clientId) => ({ clientId, ...(await this.callPath({ ...request, clientId }, options)) }))) };
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** A clock that moves only when told; `advance` runs what falls due, letting promises settle between timers. */
export class FakeClock implements Clock {
  private time = 0;
  private readonly timers = new Map<number, { at: number; run: () => void }>();
  private nextId = 1;

  now(): number {
    return this.time;
  }
  wallNow(): number {
    return this.time;
  }
  setTimeout(run: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + ms, run });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  get pending(): number {
    return this.timers.size;
  }
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await settle();
      const due = [...this.timers].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.time = Math.max(this.time, due[1].at);
      due[1].run();
    }
    this.time = end;
    await settle();
  }
}

/** Let pending promise callbacks (and the in-memory transport's hops) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
