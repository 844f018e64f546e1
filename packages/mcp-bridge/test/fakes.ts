import type { CallPathRequest, CallPathsRequest, CallResult, ListedClient, PathDescriptor } from '@mdp/protocol';
import { MdpError, type CallOptions, type HostApi } from '@mdp/core';

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
    return {
      results: await Promise.all(
        ids.map(async (clientId) => {
          const result = { clientId, ...(await this.callPath({ ...request, clientId }, options)) };
          options.onResult?.(result, ids.length);
          return result;
        }),
      ),
    };
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
