/**
 * Host requests on a cluster member (SPEC §10): answered by the leader over cluster RPC when
 * another node leads and a link to it is up, from the local router otherwise.
 */
import { MdpError, type InvokeOutcome } from '@mdp/core';
import { ERROR_CODES, type ClusterRpcResponse, type ErrorCode, type SerializedError } from '@mdp/protocol';
import type { CallPathRequest, HostApi, HostClient, HostPath, RpcMethod } from './rpc.js';

export interface ForwardPorts {
  readonly local: HostApi;
  /** The leader to ask, or undefined to answer here (this node leads, or no linked leader). */
  leader(): string | undefined;
  /** One request to `leaderId`: its response, or the error that kept it from coming. */
  request(leaderId: string, method: RpcMethod, params: unknown): Promise<ClusterRpcResponse | SerializedError>;
}

type Forwarded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: SerializedError };

export function forwardingHost(ports: ForwardPorts): HostApi {
  const viaLeader = async <T>(method: RpcMethod, params: unknown, answerLocally: () => Promise<T>): Promise<Forwarded<T>> => {
    const leaderId = ports.leader();
    if (leaderId === undefined) return { ok: true, value: await answerLocally() };
    const response = await ports.request(leaderId, method, params);
    if (!('type' in response)) return { ok: false, error: response };
    if (!response.ok) return { ok: false, error: response.error ?? { code: 'handler_error', message: 'Leader reported a failure without details' } };
    return { ok: true, value: response.result as T };
  };

  const list = async <T>(method: 'listClients' | 'listPaths', answerLocally: () => Promise<T[]>): Promise<T[]> => {
    const result = await viaLeader(method, undefined, answerLocally);
    if (!result.ok) throw new MdpError(knownCode(result.error.code), result.error.message);
    if (!Array.isArray(result.value)) throw new MdpError('handler_error', `Leader answered ${method} with a non-list`);
    return result.value;
  };

  return {
    listClients: () => list<HostClient>('listClients', () => ports.local.listClients()),
    listPaths: () => list<HostPath>('listPaths', () => ports.local.listPaths()),
    async callPath(request: CallPathRequest): Promise<InvokeOutcome> {
      const result = await viaLeader<InvokeOutcome>('callPath', request, () => ports.local.callPath(request));
      if (!result.ok) return { ok: false, source: 'server', error: result.error };
      const value: unknown = result.value;
      if (typeof value !== 'object' || value === null || typeof (value as { ok?: unknown }).ok !== 'boolean') {
        return { ok: false, source: 'server', error: { code: 'handler_error', message: 'Leader answered callPath with a malformed outcome' } };
      }
      return value as InvokeOutcome;
    },
  };
}

function knownCode(code: string): ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : 'handler_error';
}
