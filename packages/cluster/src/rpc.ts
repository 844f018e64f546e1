/**
 * Host-level requests (SPEC §10): list clients, list paths, call a path. The leader answers from its
 * own router, which holds every mirrored client; a follower forwards them to the leader over the
 * control link as `clusterRpcRequest` and waits for the `clusterRpcResponse`.
 */
import { randomUUID } from 'node:crypto';
import type { ClientInfo, InvokeOutcome, Logger, Router } from '@mdp/core';
import {
  ENDPOINT_METHODS,
  type AuthContext,
  type ClusterRpcRequest,
  type ClusterRpcResponse,
  type EndpointMethod,
  type SerializedError,
} from '@mdp/protocol';
import type { TimerSet } from './clock.js';

/** A registered client as host requests list it. */
export interface HostClient {
  readonly id: string;
  readonly name: string;
  readonly description?: string;
  readonly version?: string;
  readonly platform?: string;
  readonly metadata?: Record<string, unknown>;
  readonly paths: ClientInfo['paths'];
  readonly transportKind: string;
  readonly authSource: ClientInfo['authSource'];
}

export interface HostPath {
  readonly clientId: string;
  readonly type: 'endpoint' | 'prompt' | 'skill';
  readonly method: EndpointMethod;
  readonly path: string;
  readonly description?: string;
}

export interface CallPathRequest {
  readonly clientId: string;
  readonly method: EndpointMethod;
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly auth?: AuthContext;
}

export interface HostApi {
  listClients(): Promise<HostClient[]>;
  listPaths(): Promise<HostPath[]>;
  callPath(request: CallPathRequest): Promise<InvokeOutcome>;
}

export const RPC_METHODS = ['listClients', 'listPaths', 'callPath'] as const;
export type RpcMethod = (typeof RPC_METHODS)[number];

export function hostClientOf(info: ClientInfo): HostClient {
  const d = info.descriptor;
  return {
    id: info.id,
    name: d.name,
    ...(d.description !== undefined ? { description: d.description } : {}),
    ...(d.version !== undefined ? { version: d.version } : {}),
    ...(d.platform !== undefined ? { platform: d.platform } : {}),
    ...(d.metadata !== undefined ? { metadata: d.metadata } : {}),
    paths: info.paths,
    transportKind: info.transportKind,
    authSource: info.authSource,
  };
}

/** The host API answered from this process' router. */
export function localHost(router: Router): HostApi {
  return {
    listClients: async () => router.listClients().map(hostClientOf),
    listPaths: async () =>
      router.listClients().flatMap((client) =>
        client.paths.map((p) => ({
          clientId: client.id,
          type: p.type,
          method: p.type === 'endpoint' ? p.method : 'GET',
          path: p.path,
          ...(p.description !== undefined ? { description: p.description } : {}),
        })),
      ),
    callPath: (request) =>
      router.invoke(request.clientId, request.method, request.path, {
        query: request.query,
        body: request.body,
        headers: request.headers,
        auth: request.auth,
        route: 'cluster',
      }),
  };
}

/** Parse the params of a `callPath` request; a string is the reason it is malformed. */
export function parseCallPath(params: unknown): CallPathRequest | string {
  if (typeof params !== 'object' || params === null) return 'params must be an object';
  const p = params as Record<string, unknown>;
  if (typeof p.clientId !== 'string' || p.clientId === '') return 'clientId must be a non-empty string';
  if (typeof p.method !== 'string' || !(ENDPOINT_METHODS as readonly string[]).includes(p.method)) return 'method must be an HTTP-like method';
  if (typeof p.path !== 'string') return 'path must be a string';
  const record = (value: unknown): Record<string, string> | undefined | false => {
    if (value === undefined) return undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    return Object.values(value).every((v) => typeof v === 'string') ? (value as Record<string, string>) : false;
  };
  const query = record(p.query);
  const headers = record(p.headers);
  if (query === false || headers === false) return 'query and headers must map strings to strings';
  return {
    clientId: p.clientId,
    method: p.method as EndpointMethod,
    path: p.path,
    query,
    headers,
    body: p.body,
    auth: typeof p.auth === 'object' && p.auth !== null ? (p.auth as AuthContext) : undefined,
  };
}

/** Serve one RPC request from `host`; never rejects. */
export async function serveRpc(host: HostApi, request: Pick<ClusterRpcRequest, 'method' | 'params'>): Promise<
  { ok: true; result: unknown } | { ok: false; error: SerializedError }
> {
  try {
    switch (request.method) {
      case 'listClients':
        return { ok: true, result: await host.listClients() };
      case 'listPaths':
        return { ok: true, result: await host.listPaths() };
      case 'callPath': {
        const call = parseCallPath(request.params);
        if (typeof call === 'string') return { ok: false, error: { code: 'bad_request', message: call } };
        return { ok: true, result: await host.callPath(call) };
      }
      default:
        return { ok: false, error: { code: 'bad_request', message: `Unknown cluster RPC method ${JSON.stringify(request.method)}` } };
    }
  } catch {
    return { ok: false, error: { code: 'handler_error', message: 'Internal error' } };
  }
}

interface Pending {
  readonly resolve: (response: ClusterRpcResponse | SerializedError) => void;
  readonly cancel: () => void;
  readonly peerId: string;
}

/** Requests this follower sent to a leader, waiting for their answers. */
export class RpcClient {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly timers: TimerSet,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  /**
   * Send one request through `send` (false when it could not be sent) and resolve with the
   * response, or with an error: `not_ready` when unsent, `timeout`, or `transport_error` when the
   * link to that peer went down first.
   */
  request(
    peerId: string,
    method: RpcMethod,
    params: unknown,
    send: (requestId: string) => boolean,
  ): Promise<ClusterRpcResponse | SerializedError> {
    const requestId = randomUUID();
    return new Promise((resolve) => {
      const cancel = this.timers.after(this.timeoutMs, () => {
        this.pending.delete(requestId);
        resolve({ code: 'timeout', message: `Leader did not answer ${method} within ${this.timeoutMs} ms` });
      });
      this.pending.set(requestId, { resolve, cancel, peerId });
      if (!send(requestId)) {
        this.finish(requestId, { code: 'not_ready', message: 'No link to the leader' });
      }
      this.logger.debug('cluster.rpc_sent', { requestId, method, peerId });
    });
  }

  /** A response arrived from `peerId`. Responses to unknown ids, or from another peer, are ignored. */
  settle(peerId: string, response: ClusterRpcResponse): void {
    const pending = this.pending.get(response.requestId);
    if (!pending || pending.peerId !== peerId) return;
    this.finish(response.requestId, response);
  }

  /** The link to `peerId` is gone: its requests fail now rather than at their time-out. */
  failPeer(peerId: string): void {
    for (const [requestId, pending] of [...this.pending]) {
      if (pending.peerId === peerId) this.finish(requestId, { code: 'transport_error', message: 'Link to the leader closed' });
    }
  }

  close(): void {
    for (const requestId of [...this.pending.keys()]) this.finish(requestId, { code: 'not_ready', message: 'Cluster node closed' });
  }

  private finish(requestId: string, value: ClusterRpcResponse | SerializedError): void {
    const pending = this.pending.get(requestId);
    if (!pending) return;
    this.pending.delete(requestId);
    pending.cancel();
    pending.resolve(value);
  }
}
