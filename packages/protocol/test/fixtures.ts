/**
 * Valid wire values shared by the tests. Each builder returns a fresh object so a test can break one
 * field without affecting the others.
 */
import { PROTOCOL_NAME, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_RANGES } from '../src/index.js';

export function endpointDescriptor(): Record<string, unknown> {
  return {
    type: 'endpoint',
    path: '/orders/:id',
    method: 'GET',
    description: 'Read one order',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object', properties: { id: { type: 'string' } } },
    contentType: 'application/json',
  };
}

export function promptDescriptor(): Record<string, unknown> {
  return {
    type: 'prompt',
    path: '/prompts/summarize.prompt.md',
    description: 'Summarize a document',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object' },
  };
}

export function skillDescriptor(): Record<string, unknown> {
  return {
    type: 'skill',
    path: '/docs/review/skill.md',
    description: 'How to review',
    contentType: 'text/markdown; charset=utf-8',
  };
}

export function clientDescriptor(): Record<string, unknown> {
  return {
    id: 'client-1',
    name: 'Test client',
    description: 'A client used in tests',
    version: '1.2.3',
    platform: 'node',
    metadata: { team: 'qa' },
    paths: [endpointDescriptor(), promptDescriptor(), skillDescriptor()],
  };
}

/** One valid message of every client-to-server type. */
export function clientMessages(): Record<string, Record<string, unknown>> {
  return {
    registerClient: {
      type: 'registerClient',
      client: clientDescriptor(),
      auth: { scheme: 'Bearer', token: 'tok', headers: { 'x-mdp-auth-tenant': 't1' }, metadata: { a: 1 } },
    },
    updateClientCatalog: { type: 'updateClientCatalog', clientId: 'client-1', paths: [skillDescriptor()] },
    unregisterClient: { type: 'unregisterClient', clientId: 'client-1' },
    callClientResult: { type: 'callClientResult', requestId: 'req-1', ok: true, data: { answer: 42 } },
    ping: { type: 'ping', timestamp: 1_700_000_000_000 },
    pong: { type: 'pong', timestamp: 1_700_000_000_000 },
  };
}

export function callClientMessage(): Record<string, unknown> {
  return {
    type: 'callClient',
    requestId: 'req-1',
    clientId: 'client-1',
    method: 'POST',
    path: '/orders/42',
    params: { id: '42' },
    query: { verbose: '1' },
    body: { note: 'hi' },
    headers: { 'content-type': 'application/json' },
    auth: { scheme: 'Bearer', token: 'tok' },
    kind: 'tool',
    name: '/orders/42',
    args: {
      params: { id: '42' },
      query: { verbose: '1' },
      body: { note: 'hi' },
      headers: { 'content-type': 'application/json' },
    },
  };
}

/** One valid message of every server-to-client type. */
export function serverMessages(): Record<string, Record<string, unknown>> {
  return {
    callClient: callClientMessage(),
    ping: { type: 'ping', timestamp: 1 },
    pong: { type: 'pong', timestamp: 2 },
  };
}

/** The document a standalone server reports (SPEC §9). */
export function metaDocument(): Record<string, unknown> {
  return {
    protocol: PROTOCOL_NAME,
    protocolVersion: PROTOCOL_VERSION,
    supportedProtocolRanges: [...SUPPORTED_PROTOCOL_RANGES],
    serverId: '127.0.0.1:47372',
    endpoints: {
      ws: 'ws://127.0.0.1:47372',
      httpLoop: 'http://127.0.0.1:47372/mdp/http-loop',
      auth: 'http://127.0.0.1:47372/mdp/auth',
      meta: 'http://127.0.0.1:47372/mdp/meta',
      cluster: 'ws://127.0.0.1:47372/mdp/cluster',
    },
    features: { upstreamProxy: true, clusterControl: true },
    cluster: {
      id: 'default',
      membershipMode: 'dynamic',
      membershipFingerprint: 'dynamic',
      role: 'leader',
      term: 0,
      leaderId: '127.0.0.1:47372',
      leaderUrl: 'ws://127.0.0.1:47372',
      leaseDurationMs: 4000,
      knownMemberCount: 1,
      reachableMemberCount: 1,
      quorumSize: 1,
      hasQuorum: true,
    },
  };
}

export const CLUSTER_BASE_FIELDS = ['clusterId', 'serverId', 'term', 'timestamp'] as const;

function clusterBase(): Record<string, unknown> {
  return { clusterId: 'c1', serverId: '127.0.0.1:47372', term: 3, timestamp: 1_700_000_000_000 };
}

/** One valid message of every cluster control type, with only its required fields. */
export function clusterMessages(): Record<string, Record<string, unknown>> {
  const base = clusterBase;
  return {
    clusterHello: {
      type: 'clusterHello',
      ...base(),
      membershipMode: 'static',
      membershipFingerprint: '["a:1","b:2"]',
      role: 'follower',
      wsUrl: 'ws://127.0.0.1:47372',
      clusterUrl: 'ws://127.0.0.1:47372/mdp/cluster',
    },
    clusterHeartbeat: {
      type: 'clusterHeartbeat',
      ...base(),
      leaderId: '127.0.0.1:47372',
      leaderUrl: 'ws://127.0.0.1:47372',
      leaseDurationMs: 4000,
    },
    clusterHeartbeatAck: { type: 'clusterHeartbeatAck', ...base(), followerId: 'b:2', leaderId: 'a:1' },
    clusterVoteRequest: { type: 'clusterVoteRequest', ...base(), candidateId: 'a:1', candidateUrl: 'ws://a:1/mdp/cluster' },
    clusterVoteResponse: { type: 'clusterVoteResponse', ...base(), voterId: 'b:2', voteGranted: true },
    clusterLeaderResign: { type: 'clusterLeaderResign', ...base(), leaderId: 'a:1' },
    clusterRpcRequest: { type: 'clusterRpcRequest', ...base(), requestId: 'rpc-1', method: 'listClients' },
    clusterRpcResponse: { type: 'clusterRpcResponse', ...base(), requestId: 'rpc-1', ok: true },
  };
}

/** Fields besides the base ones that each cluster message type must carry. */
export const CLUSTER_REQUIRED_FIELDS: Record<string, readonly string[]> = {
  clusterHello: ['membershipMode', 'membershipFingerprint', 'role', 'wsUrl', 'clusterUrl'],
  clusterHeartbeat: ['leaderId', 'leaderUrl', 'leaseDurationMs'],
  clusterHeartbeatAck: ['followerId', 'leaderId'],
  clusterVoteRequest: ['candidateId', 'candidateUrl'],
  clusterVoteResponse: ['voterId', 'voteGranted'],
  clusterLeaderResign: ['leaderId'],
  clusterRpcRequest: ['requestId', 'method'],
  clusterRpcResponse: ['requestId', 'ok'],
};

/** Copy `value` without `key`. */
export function without(value: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy = { ...value };
  delete copy[key];
  return copy;
}
