/**
 * Type tests: checked by `tsc -p tsconfig.json --noEmit` (and by `vitest --typecheck`). A failing
 * `expectTypeOf` or an unused `@ts-expect-error` is a compile error.
 */
import type * as v from 'valibot';
import { describe, expectTypeOf, test } from 'vitest';
import {
  compareSpecificity,
  compilePattern,
  matchPattern,
  parseClientMessage,
  parseClusterMessage,
  parseMetaDocument,
  parsePathCatalog,
  parseServerMessage,
  parserFor,
  type CallClientMessage,
  type CallClientResultMessageSchema,
  type CallKind,
  type ClientDescriptor,
  type ClientToServerMessage,
  type ClusterMessage,
  type ClusterRole,
  type CompiledPattern,
  type EndpointDescriptor,
  type EndpointMethod,
  type ErrorCode,
  type MembershipMode,
  type MetaDocument,
  type ParseResult,
  type PathDescriptor,
  type RegisterClientMessage,
  type SerializedError,
  type ServerToClientMessage,
  type SkillDescriptor,
} from '../src/index.js';

describe('ParseResult', () => {
  test('narrows to the value on ok and to error/path otherwise', () => {
    const result = parseClientMessage({});
    expectTypeOf(result).toEqualTypeOf<ParseResult<ClientToServerMessage>>();
    if (result.ok) {
      expectTypeOf(result.value).toEqualTypeOf<ClientToServerMessage>();
    } else {
      expectTypeOf(result.error).toEqualTypeOf<string>();
      expectTypeOf(result.path).toEqualTypeOf<string | undefined>();
      // @ts-expect-error no value on a failed parse
      void result.value;
    }
  });

  test('each parser returns the type of its schema', () => {
    expectTypeOf(parseServerMessage).returns.toEqualTypeOf<ParseResult<ServerToClientMessage>>();
    expectTypeOf(parseClusterMessage).returns.toEqualTypeOf<ParseResult<ClusterMessage>>();
    expectTypeOf(parseMetaDocument).returns.toEqualTypeOf<ParseResult<MetaDocument>>();
    expectTypeOf(parsePathCatalog).returns.toEqualTypeOf<ParseResult<PathDescriptor[]>>();
    expectTypeOf(parserFor<typeof CallClientResultMessageSchema>).returns.returns.toEqualTypeOf<
      ParseResult<v.InferOutput<typeof CallClientResultMessageSchema>>
    >();
    expectTypeOf(parseClientMessage).parameter(0).toEqualTypeOf<unknown>();
  });
});

describe('messages', () => {
  test('the type field discriminates each direction', () => {
    expectTypeOf<ClientToServerMessage['type']>().toEqualTypeOf<
      'registerClient' | 'updateClientCatalog' | 'unregisterClient' | 'callClientResult' | 'ping' | 'pong'
    >();
    expectTypeOf<ServerToClientMessage['type']>().toEqualTypeOf<'callClient' | 'ping' | 'pong'>();
  });

  test('narrowing on type yields the specific message', () => {
    const message = {} as ClientToServerMessage;
    if (message.type === 'registerClient') {
      expectTypeOf(message).toEqualTypeOf<RegisterClientMessage>();
      expectTypeOf(message.client).toEqualTypeOf<ClientDescriptor>();
    }
    if (message.type === 'callClientResult') {
      expectTypeOf(message.ok).toEqualTypeOf<boolean>();
      expectTypeOf(message.error).toEqualTypeOf<SerializedError | undefined>();
      expectTypeOf(message.data).toEqualTypeOf<unknown>();
    }
  });

  test('a result error code is any string, not only the known ones', () => {
    expectTypeOf<SerializedError['code']>().toEqualTypeOf<string>();
    expectTypeOf<ErrorCode>().toEqualTypeOf<'bad_request' | 'not_found' | 'timeout' | 'transport_error' | 'handler_error' | 'not_ready'>();
    expectTypeOf<ErrorCode>().toExtend<SerializedError['code']>();
  });

  test('callClient carries both the path form and the named form', () => {
    expectTypeOf<CallClientMessage['method']>().toEqualTypeOf<EndpointMethod>();
    expectTypeOf<CallClientMessage['path']>().toEqualTypeOf<string>();
    expectTypeOf<CallClientMessage['params']>().toEqualTypeOf<Record<string, string> | undefined>();
    expectTypeOf<CallClientMessage['headers']>().toEqualTypeOf<Record<string, string> | undefined>();
    expectTypeOf<CallClientMessage['kind']>().toEqualTypeOf<CallKind | undefined>();
    expectTypeOf<CallKind>().toEqualTypeOf<'tool' | 'prompt' | 'skill'>();
    expectTypeOf<NonNullable<CallClientMessage['args']>['query']>().toEqualTypeOf<Record<string, string> | undefined>();
  });

  test('a message missing a required field does not type-check', () => {
    // @ts-expect-error clientId is required
    const bad: ClientToServerMessage = { type: 'unregisterClient' };
    void bad;
    // @ts-expect-error callClient is not a client-to-server message
    const wrongDirection: ClientToServerMessage = { type: 'callClient' } as CallClientMessage;
    void wrongDirection;
  });
});

describe('descriptors', () => {
  test('the type field discriminates the three kinds', () => {
    expectTypeOf<PathDescriptor['type']>().toEqualTypeOf<'endpoint' | 'prompt' | 'skill'>();
    const descriptor = {} as PathDescriptor;
    if (descriptor.type === 'endpoint') {
      expectTypeOf(descriptor).toEqualTypeOf<EndpointDescriptor>();
      expectTypeOf(descriptor.method).toEqualTypeOf<EndpointMethod>();
    }
    if (descriptor.type === 'skill') {
      expectTypeOf(descriptor).toEqualTypeOf<SkillDescriptor>();
      expectTypeOf(descriptor.contentType).toEqualTypeOf<string | undefined>();
    }
  });

  test('endpoint methods are the five HTTP verbs', () => {
    expectTypeOf<EndpointMethod>().toEqualTypeOf<'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'>();
  });

  test('unknown extra fields stay reachable', () => {
    expectTypeOf<SkillDescriptor['somethingNew']>().toEqualTypeOf<unknown>();
    expectTypeOf<ClientDescriptor['capabilities']>().toEqualTypeOf<unknown>();
    expectTypeOf<ClientDescriptor['id']>().toEqualTypeOf<string>();
    expectTypeOf<ClientDescriptor['paths']>().toEqualTypeOf<PathDescriptor[]>();
  });
});

describe('meta document and cluster messages', () => {
  test('meta document fields', () => {
    expectTypeOf<MetaDocument['protocol']>().toEqualTypeOf<'mdp'>();
    expectTypeOf<MetaDocument['cluster']['role']>().toEqualTypeOf<ClusterRole>();
    expectTypeOf<ClusterRole>().toEqualTypeOf<'leader' | 'follower' | 'candidate'>();
    expectTypeOf<MetaDocument['cluster']['membershipMode']>().toEqualTypeOf<MembershipMode>();
    expectTypeOf<MembershipMode>().toEqualTypeOf<'dynamic' | 'static'>();
    expectTypeOf<MetaDocument['cluster']['term']>().toEqualTypeOf<number>();
    expectTypeOf<MetaDocument['features']['upstreamProxy']>().toEqualTypeOf<boolean>();
  });

  test('cluster messages are discriminated by type and share the base fields', () => {
    expectTypeOf<ClusterMessage['type']>().toEqualTypeOf<
      | 'clusterHello'
      | 'clusterHeartbeat'
      | 'clusterHeartbeatAck'
      | 'clusterVoteRequest'
      | 'clusterVoteResponse'
      | 'clusterLeaderResign'
      | 'clusterRpcRequest'
      | 'clusterRpcResponse'
    >();
    expectTypeOf<ClusterMessage>().toHaveProperty('term').toEqualTypeOf<number>();
    expectTypeOf<ClusterMessage>().toHaveProperty('serverId').toEqualTypeOf<string>();
    const message = {} as ClusterMessage;
    if (message.type === 'clusterVoteRequest') {
      expectTypeOf(message.preVote).toEqualTypeOf<boolean | undefined>();
    }
    if (message.type === 'clusterHeartbeat') {
      expectTypeOf(message.leaseDurationMs).toEqualTypeOf<number>();
    }
  });
});

describe('paths', () => {
  test('compile, match and compare', () => {
    expectTypeOf(compilePattern).returns.toEqualTypeOf<CompiledPattern>();
    expectTypeOf(matchPattern).returns.toEqualTypeOf<Record<string, string> | undefined>();
    expectTypeOf(compareSpecificity).toExtend<(a: CompiledPattern, b: CompiledPattern) => number>();
    expectTypeOf<CompiledPattern['segments']>().toEqualTypeOf<readonly string[]>();
  });
});
