import { describe, expect, it } from 'vitest';
import { parseClusterMessage } from '../src/index.js';
import { CLUSTER_BASE_FIELDS, CLUSTER_REQUIRED_FIELDS, clusterMessages, without } from './fixtures.js';

const valid = clusterMessages();
const types = Object.keys(valid);

function expectRefused(input: unknown, path: string) {
  const result = parseClusterMessage(input);
  expect(result).toMatchObject({ ok: false, path });
  if (!result.ok) expect(result.error.startsWith(`${path}: `)).toBe(true);
}

describe('cluster messages: valid', () => {
  it('covers all eight message types', () => {
    expect(types.sort()).toEqual(
      [
        'clusterHeartbeat',
        'clusterHeartbeatAck',
        'clusterHello',
        'clusterLeaderResign',
        'clusterRpcRequest',
        'clusterRpcResponse',
        'clusterVoteRequest',
        'clusterVoteResponse',
      ].sort(),
    );
  });

  it.each(Object.entries(clusterMessages()))('accepts %s with its required fields', (type, message) => {
    const result = parseClusterMessage(message);
    expect(result).toEqual({ ok: true, value: message });
    if (result.ok) expect(result.value.type).toBe(type);
  });

  it('accepts term 0', () => {
    expect(parseClusterMessage({ ...valid.clusterLeaderResign, term: 0 }).ok).toBe(true);
  });

  it('accepts clusterHello with its optional leader and secret proof', () => {
    const hello = { ...valid.clusterHello, role: 'leader', leaderId: 'a:1', leaderUrl: 'ws://a:1', auth: 'proof' };
    expect(parseClusterMessage(hello)).toEqual({ ok: true, value: hello });
  });

  it.each(['leader', 'follower', 'candidate'])('accepts clusterHello with role %s', (role) => {
    expect(parseClusterMessage({ ...valid.clusterHello, role }).ok).toBe(true);
  });

  it('accepts a dynamic-membership hello', () => {
    const hello = { ...valid.clusterHello, membershipMode: 'dynamic', membershipFingerprint: 'dynamic' };
    expect(parseClusterMessage(hello).ok).toBe(true);
  });

  it('accepts a resign that says the sender leaves', () => {
    const leave = { ...valid.clusterLeaderResign, leaving: true };
    expect(parseClusterMessage(leave)).toEqual({ ok: true, value: leave });
  });

  it('accepts pre-vote requests and responses', () => {
    const request = { ...valid.clusterVoteRequest, preVote: true };
    const response = { ...valid.clusterVoteResponse, voteGranted: false, preVote: true, leaderId: 'c:3', leaderUrl: 'ws://c:3' };
    expect(parseClusterMessage(request)).toEqual({ ok: true, value: request });
    expect(parseClusterMessage(response)).toEqual({ ok: true, value: response });
  });

  it('accepts rpc requests with params and responses with a result or an error of any code', () => {
    const request = { ...valid.clusterRpcRequest, method: 'callPath', params: { clientId: 'c', path: '/a' } };
    const result = { ...valid.clusterRpcResponse, result: [{ id: 'c' }] };
    const failure = { ...valid.clusterRpcResponse, ok: false, error: { code: 'no_leader', message: 'x', details: { a: 1 } } };
    for (const message of [request, result, failure]) expect(parseClusterMessage(message)).toEqual({ ok: true, value: message });
  });
});

describe('cluster messages: invalid', () => {
  const missingBase = types.flatMap((type) => CLUSTER_BASE_FIELDS.map((field) => [type, field] as const));
  it.each(missingBase)('refuses %s without %s', (type, field) => {
    expectRefused(without(valid[type]!, field), field);
  });

  const missingOwn = types.flatMap((type) => CLUSTER_REQUIRED_FIELDS[type]!.map((field) => [type, field] as const));
  it.each(missingOwn)('refuses %s without %s', (type, field) => {
    expectRefused(without(valid[type]!, field), field);
  });

  it.each(types)('refuses %s with a negative, fractional or string term', (type) => {
    expectRefused({ ...valid[type], term: -1 }, 'term');
    expectRefused({ ...valid[type], term: 2.5 }, 'term');
    expectRefused({ ...valid[type], term: '3' }, 'term');
  });

  it.each(types)('refuses %s with a wrong-typed base field', (type) => {
    expectRefused({ ...valid[type], clusterId: 1 }, 'clusterId');
    expectRefused({ ...valid[type], serverId: '' }, 'serverId');
    expectRefused({ ...valid[type], timestamp: '2024-01-01' }, 'timestamp');
  });

  it.each([
    ['clusterHello', 'membershipMode', 'auto'],
    ['clusterHello', 'membershipFingerprint', ['a:1']],
    ['clusterHello', 'role', 'observer'],
    ['clusterHello', 'wsUrl', 1],
    ['clusterHello', 'clusterUrl', null],
    ['clusterHello', 'leaderId', 1],
    ['clusterHello', 'leaderUrl', false],
    ['clusterHello', 'auth', {}],
    ['clusterHeartbeat', 'leaderId', 1],
    ['clusterHeartbeat', 'leaderUrl', 1],
    ['clusterHeartbeat', 'leaseDurationMs', '4000'],
    ['clusterHeartbeat', 'leaseDurationMs', -1],
    ['clusterHeartbeat', 'leaseDurationMs', 0.5],
    ['clusterHeartbeatAck', 'followerId', 1],
    ['clusterHeartbeatAck', 'leaderId', null],
    ['clusterVoteRequest', 'candidateId', 1],
    ['clusterVoteRequest', 'candidateUrl', 1],
    ['clusterVoteRequest', 'preVote', 'yes'],
    ['clusterVoteResponse', 'voterId', 1],
    ['clusterVoteResponse', 'voteGranted', 'true'],
    ['clusterVoteResponse', 'leaderId', 1],
    ['clusterVoteResponse', 'preVote', 1],
    ['clusterLeaderResign', 'leaderId', 1],
    ['clusterLeaderResign', 'leaving', 'yes'],
    ['clusterRpcRequest', 'requestId', ''],
    ['clusterRpcRequest', 'method', 1],
    ['clusterRpcResponse', 'requestId', 1],
    ['clusterRpcResponse', 'ok', 'false'],
    ['clusterRpcResponse', 'error', 'boom'],
  ])('refuses %s with %s = %j', (type, field, value) => {
    expectRefused({ ...valid[type], [field]: value }, field);
  });

  it('names the nested field of an rpc error', () => {
    expectRefused({ ...valid.clusterRpcResponse, ok: false, error: { code: 'x' } }, 'error.message');
  });

  it.each([
    ['an unknown type', { ...valid.clusterHeartbeat, type: 'clusterGossip' }],
    ['an MDP client message', { type: 'registerClient', client: {} }],
    ['no type', without(valid.clusterHeartbeat!, 'type')],
  ])('refuses %s', (_name, input) => {
    expectRefused(input, 'type');
  });

  it('says the type is an unknown cluster message type', () => {
    expect(parseClusterMessage({ type: 'clusterGossip' })).toEqual({
      ok: false,
      error: 'type: unknown cluster message type',
      path: 'type',
    });
  });

  it.each([null, undefined, 'clusterHello', 1, [valid.clusterHello]])('refuses non-object %j', (input) => {
    expect(parseClusterMessage(input).ok).toBe(false);
  });
});
