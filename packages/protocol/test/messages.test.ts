import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import {
  CallClientResultMessageSchema,
  ClientToServerMessageSchema,
  ERROR_CODES,
  SERVER_TO_CLIENT_ONLY_TYPES,
  parseClientMessage,
  parseServerMessage,
  parserFor,
} from '../src/index.js';
import { callClientMessage, clientMessages, serverMessages, without } from './fixtures.js';

/** Assert a failed parse and return its error, so a test can also check the message text. */
function expectFailure(result: ReturnType<typeof parseClientMessage | typeof parseServerMessage>, path: string | undefined) {
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error('unreachable');
  expect(result.path).toBe(path);
  if (path !== undefined) expect(result.error.startsWith(`${path}: `)).toBe(true);
  return result.error;
}

describe('client-to-server messages: valid', () => {
  it.each(Object.entries(clientMessages()))('accepts %s', (type, message) => {
    const result = parseClientMessage(message);
    expect(result).toEqual({ ok: true, value: message });
    if (result.ok) expect(result.value.type).toBe(type);
  });

  it('accepts the minimal form of every message', () => {
    const minimal = [
      { type: 'registerClient', client: { id: 'c', name: '', paths: [] } },
      { type: 'updateClientCatalog', clientId: 'c', paths: [] },
      { type: 'unregisterClient', clientId: 'c' },
      { type: 'callClientResult', requestId: 'r', ok: false },
      { type: 'ping', timestamp: 0 },
      { type: 'pong', timestamp: 0 },
    ];
    for (const message of minimal) expect(parseClientMessage(message)).toEqual({ ok: true, value: message });
  });

  it('accepts a heartbeat without a timestamp (a missing one is not worth dropping a connection)', () => {
    expect(parseClientMessage({ type: 'ping' })).toEqual({ ok: true, value: { type: 'ping' } });
    expect(parseClientMessage({ type: 'pong' })).toEqual({ ok: true, value: { type: 'pong' } });
  });

  it('accepts any JSON value as callClientResult data', () => {
    for (const data of ['text', 1, null, [1, 2], { nested: { deep: true } }, false]) {
      const message = { type: 'callClientResult', requestId: 'r', ok: true, data };
      expect(parseClientMessage(message)).toEqual({ ok: true, value: message });
    }
  });

  it.each(ERROR_CODES)('accepts a failed callClientResult with known code %s', (code) => {
    const message = { type: 'callClientResult', requestId: 'r', ok: false, error: { code, message: 'boom' } };
    expect(parseClientMessage(message)).toEqual({ ok: true, value: message });
  });

  it('accepts a callClientResult whose error code is not one of the known six and passes it through', () => {
    const message = {
      type: 'callClientResult',
      requestId: 'req-7',
      ok: false,
      error: { code: 'rate_limited', message: 'slow down', details: { retryAfterMs: 500 } },
    };
    expect((ERROR_CODES as readonly string[]).includes('rate_limited')).toBe(false);
    const result = parseClientMessage(message);
    expect(result.ok).toBe(true);
    if (!result.ok || result.value.type !== 'callClientResult') throw new Error('expected a callClientResult');
    expect(result.value.error?.code).toBe('rate_limited');
    expect(result.value.error?.details).toEqual({ retryAfterMs: 500 });
  });

  it('accepts error.details of any JSON type, as field clients send them', () => {
    for (const details of ['text', [1, 2], 3, null, true]) {
      const result = parseClientMessage({ type: 'callClientResult', requestId: 'r', ok: false, error: { code: 'handler_error', message: 'boom', details } });
      expect(result.ok, JSON.stringify(details)).toBe(true);
    }
  });
});

describe('client-to-server messages: invalid', () => {
  const m = clientMessages();
  const cases: Array<[string, unknown, string]> = [
    // registerClient
    ['registerClient without client', without(m.registerClient!, 'client'), 'client'],
    ['registerClient with client as a string', { ...m.registerClient, client: 'c' }, 'client'],
    ['registerClient with client.id missing', { type: 'registerClient', client: { name: 'n', paths: [] } }, 'client.id'],
    ['registerClient with empty client.id', { type: 'registerClient', client: { id: '', name: 'n', paths: [] } }, 'client.id'],
    ['registerClient with numeric client.id', { type: 'registerClient', client: { id: 7, name: 'n', paths: [] } }, 'client.id'],
    ['registerClient with client.name missing', { type: 'registerClient', client: { id: 'c', paths: [] } }, 'client.name'],
    ['registerClient with client.paths missing', { type: 'registerClient', client: { id: 'c', name: 'n' } }, 'client.paths'],
    ['registerClient with auth as a string', { ...m.registerClient, auth: 'Bearer x' }, 'auth'],
    ['registerClient with numeric auth.token', { ...m.registerClient, auth: { token: 1 } }, 'auth.token'],
    ['registerClient with a non-string auth header', { ...m.registerClient, auth: { headers: { 'x-mdp-auth-a': 1 } } }, 'auth.headers.x-mdp-auth-a'],
    ['registerClient with auth.headers as an array', { ...m.registerClient, auth: { headers: ['x-a'] } }, 'auth.headers'],
    ['registerClient with auth.metadata as an array', { ...m.registerClient, auth: { metadata: [] } }, 'auth.metadata'],
    // updateClientCatalog
    ['updateClientCatalog without clientId', without(m.updateClientCatalog!, 'clientId'), 'clientId'],
    ['updateClientCatalog with empty clientId', { ...m.updateClientCatalog, clientId: '' }, 'clientId'],
    ['updateClientCatalog without paths', without(m.updateClientCatalog!, 'paths'), 'paths'],
    ['updateClientCatalog with paths as an object', { ...m.updateClientCatalog, paths: {} }, 'paths'],
    ['updateClientCatalog with a bad descriptor', { ...m.updateClientCatalog, paths: [{ type: 'skill', path: '/x' }] }, 'paths.0.path'],
    // unregisterClient
    ['unregisterClient without clientId', without(m.unregisterClient!, 'clientId'), 'clientId'],
    ['unregisterClient with numeric clientId', { ...m.unregisterClient, clientId: 1 }, 'clientId'],
    // callClientResult
    ['callClientResult without requestId', without(m.callClientResult!, 'requestId'), 'requestId'],
    ['callClientResult with empty requestId', { ...m.callClientResult, requestId: '' }, 'requestId'],
    ['callClientResult with numeric requestId', { ...m.callClientResult, requestId: 1 }, 'requestId'],
    ['callClientResult without ok', without(m.callClientResult!, 'ok'), 'ok'],
    ['callClientResult with ok as a string', { ...m.callClientResult, ok: 'true' }, 'ok'],
    ['callClientResult with error as a string', { ...m.callClientResult, ok: false, error: 'boom' }, 'error'],
    ['callClientResult with error.code missing', { ...m.callClientResult, ok: false, error: { message: 'x' } }, 'error.code'],
    ['callClientResult with numeric error.code', { ...m.callClientResult, ok: false, error: { code: 500, message: 'x' } }, 'error.code'],
    ['callClientResult with error.message missing', { ...m.callClientResult, ok: false, error: { code: 'timeout' } }, 'error.message'],
    // heartbeats
    ['ping with a string timestamp', { type: 'ping', timestamp: 'now' }, 'timestamp'],
    ['pong with a string timestamp', { type: 'pong', timestamp: '1' }, 'timestamp'],
    // type itself
    ['a message without type', { clientId: 'c' }, 'type'],
    ['a message of unknown type', { type: 'hello' }, 'type'],
    ['a message with a numeric type', { type: 1 }, 'type'],
    ['a message with a differently-cased type', { type: 'RegisterClient', client: {} }, 'type'],
  ];

  it.each(cases)('refuses %s, naming the field', (_name, input, path) => {
    expectFailure(parseClientMessage(input), path);
  });

  it('explains a missing field', () => {
    const error = expectFailure(parseClientMessage(without(clientMessages().unregisterClient!, 'clientId')), 'clientId');
    expect(error).toMatch(/^clientId: .*clientId/);
  });

  it('answers every case exactly as the whole variant schema does (it only picks the schema by type first)', () => {
    const viaVariant = parserFor(ClientToServerMessageSchema);
    const inputs = [...cases.map(([, input]) => input), ...Object.values(clientMessages())];
    for (const input of inputs) expect(parseClientMessage(input), JSON.stringify(input)).toEqual(viaVariant(input));
  });

  it('says an unknown type is unknown', () => {
    expect(expectFailure(parseClientMessage({ type: 'hello' }), 'type')).toBe('type: unknown message type');
  });

  it('names the nested descriptor field, e.g. client.paths.0.method', () => {
    const message = clientMessages().registerClient!;
    (message.client as { paths: Array<Record<string, unknown>> }).paths[0]!.method = 'FETCH';
    const error = expectFailure(parseClientMessage(message), 'client.paths.0.method');
    expect(error).toBe('client.paths.0.method: method must be one of GET, POST, PUT, PATCH, DELETE');
  });

  it('refuses callClient sent by a client, saying it is a server-to-client message', () => {
    expect(SERVER_TO_CLIENT_ONLY_TYPES.has('callClient')).toBe(true);
    const error = expectFailure(parseClientMessage(callClientMessage()), 'type');
    expect(error).toContain('callClient');
    expect(error).toContain('server-to-client');
  });

  it('refuses a partial callClient sent by a client the same way', () => {
    const error = expectFailure(parseClientMessage({ type: 'callClient' }), 'type');
    expect(error).toContain('server-to-client');
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a string', '{"type":"ping"}'],
    ['a number', 42],
    ['a boolean', true],
    ['an array', [{ type: 'ping' }]],
  ])('refuses %s as a message', (_name, input) => {
    const error = expectFailure(parseClientMessage(input), undefined);
    expect(error).toBe('message must be a JSON object');
  });
});

describe('server-to-client messages', () => {
  it.each(Object.entries(serverMessages()))('accepts %s', (type, message) => {
    const result = parseServerMessage(message);
    expect(result).toEqual({ ok: true, value: message });
    if (result.ok) expect(result.value.type).toBe(type);
  });

  it('accepts a callClient in the path form only (servers that omit kind, name and args)', () => {
    const message = { type: 'callClient', requestId: 'r', clientId: 'c', method: 'GET', path: '/a' };
    const result = parseServerMessage(message);
    expect(result.ok).toBe(true);
  });

  it('accepts a minimal callClient for each kind', () => {
    for (const [kind, method, path] of [
      ['tool', 'DELETE', '/orders/1'],
      ['prompt', 'GET', '/a.prompt.md'],
      ['skill', 'GET', '/docs/skill.md'],
    ] as const) {
      const message = { type: 'callClient', requestId: 'r', clientId: 'c', method, path, kind, name: path, args: {} };
      expect(parseServerMessage(message)).toEqual({ ok: true, value: message });
    }
  });

  it('carries the path form and the named form with the same values', () => {
    const result = parseServerMessage(callClientMessage());
    if (!result.ok || result.value.type !== 'callClient') throw new Error('expected a callClient');
    const call = result.value;
    expect(call.name).toBe(call.path);
    expect(call.args).toEqual({ params: call.params, query: call.query, body: call.body, headers: call.headers });
  });

  const base = callClientMessage();
  const cases: Array<[string, unknown, string]> = [
    ['callClient without requestId', without(base, 'requestId'), 'requestId'],
    ['callClient with empty requestId', { ...base, requestId: '' }, 'requestId'],
    ['callClient without clientId', without(base, 'clientId'), 'clientId'],
    ['callClient with empty clientId', { ...base, clientId: '' }, 'clientId'],
    ['callClient without method', without(base, 'method'), 'method'],
    ['callClient with an unknown method', { ...base, method: 'HEAD' }, 'method'],
    ['callClient with a lowercase method', { ...base, method: 'get' }, 'method'],
    ['callClient without path', without(base, 'path'), 'path'],
    ['callClient with a numeric path', { ...base, path: 1 }, 'path'],
    ['callClient with a non-string param', { ...base, params: { id: 42 } }, 'params.id'],
    ['callClient with query as an array', { ...base, query: ['a'] }, 'query'],
    ['callClient with params as an array', { ...base, params: ['42'] }, 'params'],
    ['callClient with args.headers as an array', { ...base, args: { headers: ['x'] } }, 'args.headers'],
    ['callClient with auth.headers as an array', { ...base, auth: { headers: ['x'] } }, 'auth.headers'],
    ['callClient with a non-string header', { ...base, headers: { 'x-a': true } }, 'headers.x-a'],
    ['callClient with auth as a string', { ...base, auth: 'x' }, 'auth'],
    ['callClient with an unknown kind', { ...base, kind: 'endpoint' }, 'kind'],
    ['callClient with args as a string', { ...base, args: 'x' }, 'args'],
    ['callClient with a non-string args param', { ...base, args: { params: { id: 1 } } }, 'args.params.id'],
    ['ping with a string timestamp', { type: 'ping', timestamp: 'x' }, 'timestamp'],
    ['a client-only message', { type: 'registerClient', client: {} }, 'type'],
    ['a callClientResult', { type: 'callClientResult', requestId: 'r', ok: true }, 'type'],
    ['a message without type', { requestId: 'r' }, 'type'],
  ];

  it.each(cases)('refuses %s, naming the field', (_name, input, path) => {
    expectFailure(parseServerMessage(input), path);
  });

  it.each([null, 'callClient', 3, [serverMessages().ping]])('refuses non-object %j', (input) => {
    expect(parseServerMessage(input).ok).toBe(false);
  });
});

describe('parserFor', () => {
  it('builds a parser for any schema, formatting the first issue as "<path>: <message>"', () => {
    const parse = parserFor(CallClientResultMessageSchema);
    expect(parse({ type: 'callClientResult', requestId: 'r', ok: true })).toEqual({
      ok: true,
      value: { type: 'callClientResult', requestId: 'r', ok: true },
    });
    const failed = parse({ type: 'callClientResult', requestId: '', ok: true });
    expect(failed).toEqual({ ok: false, error: 'requestId: must not be empty', path: 'requestId' });
  });

  it('leaves the path undefined when the issue is at the root', () => {
    const parse = parserFor(v.string('must be a string'));
    expect(parse(1)).toEqual({ ok: false, error: 'must be a string', path: undefined });
  });

  it('agrees with the schema it wraps', () => {
    for (const message of Object.values(clientMessages())) {
      expect(v.is(ClientToServerMessageSchema, message)).toBe(true);
    }
  });
});
