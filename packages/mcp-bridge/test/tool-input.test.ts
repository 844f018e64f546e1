import { describe, expect, it } from 'vitest';
import type { EndpointDescriptor, EndpointMethod } from '@mdp/protocol';
import { toolAnnotations, toolCall, toolInput } from '../src/tool-input.js';

const endpoint = (method: EndpointMethod, path: string, inputSchema?: Record<string, unknown>): EndpointDescriptor =>
  ({ type: 'endpoint', method, path, ...(inputSchema ? { inputSchema } : {}) }) as EndpointDescriptor;

const object = (properties: Record<string, unknown>, required?: string[]) => ({ type: 'object', properties, ...(required ? { required } : {}) });

describe('toolInput', () => {
  it('makes :param segments required string properties', () => {
    const { inputSchema, plan } = toolInput(endpoint('GET', '/users/:id/posts/:post'), ['c'], 100);
    expect(inputSchema.type).toBe('object');
    expect(Object.keys(inputSchema.properties)).toEqual(['id', 'post']);
    expect(inputSchema.properties.id).toMatchObject({ type: 'string', pattern: '^[a-z0-9][a-z0-9_-]*$' });
    expect(inputSchema.required).toEqual(['id', 'post']);
    expect(plan).toMatchObject({ method: 'GET', params: ['id', 'post'], clientIds: ['c'] });
  });

  it('merges an object inputSchema: properties, required, additionalProperties and $defs', () => {
    const schema = {
      ...object({ selector: { type: 'string' }, count: { $ref: '#/$defs/n' } }, ['selector']),
      additionalProperties: false,
      $defs: { n: { type: 'integer' } },
    };
    const { inputSchema, plan } = toolInput(endpoint('POST', '/rows/:id', schema), ['c'], 100);
    expect(inputSchema).toEqual({
      type: 'object',
      properties: { id: expect.any(Object), selector: { type: 'string' }, count: { $ref: '#/$defs/n' } },
      required: ['id', 'selector'],
      additionalProperties: false,
      $defs: { n: { type: 'integer' } },
    });
    expect(plan.input).toEqual({ kind: 'merged', declared: true });
  });

  it('moves an inputSchema whose property clashes with a path parameter under body', () => {
    const schema = object({ id: { type: 'number' }, name: { type: 'string' } }, ['name']);
    const { inputSchema, plan } = toolInput(endpoint('PUT', '/users/:id', schema), ['c'], 100);
    expect(plan.input).toEqual({ kind: 'nested', key: 'body' });
    expect(inputSchema.properties.id).toMatchObject({ type: 'string' });
    expect(inputSchema.properties.body).toMatchObject({ type: 'object', properties: schema.properties, required: ['name'] });
    expect(inputSchema.required).toEqual(['id', 'body']);
  });

  it('puts any other schema under body, keeping $defs at the root', () => {
    const { inputSchema, plan } = toolInput(endpoint('POST', '/echo', { type: 'array', items: { $ref: '#/$defs/x' }, $defs: { x: {} } }), ['c'], 100);
    expect(plan.input).toEqual({ kind: 'nested', key: 'body' });
    expect(inputSchema.properties.body).toMatchObject({ type: 'array', items: { $ref: '#/$defs/x' } });
    expect(inputSchema.$defs).toEqual({ x: {} });
    expect(inputSchema.required).toEqual(['body']);
  });

  it('picks another key when a path parameter is called body', () => {
    const { plan } = toolInput(endpoint('POST', '/x/:body', { type: 'string' }), ['c'], 100);
    expect(plan.input).toEqual({ kind: 'nested', key: 'input' });
  });

  it('adds a required clientId enum when several clients share the tool; a clash with it nests the input', () => {
    const shared = toolInput(endpoint('POST', '/page/click', object({ selector: { type: 'string' } })), ['a', 'b'], 100);
    expect(shared.inputSchema.properties.clientId).toMatchObject({ type: 'string', enum: ['a', 'b'] });
    expect(shared.inputSchema.required).toEqual(['clientId']);
    const clash = toolInput(endpoint('POST', '/page/click', object({ clientId: { type: 'string' } })), ['a', 'b'], 100);
    expect(clash.plan.input).toMatchObject({ kind: 'nested' });
  });

  it('accepts further arguments when the endpoint declares no input', () => {
    const { inputSchema, plan } = toolInput(endpoint('GET', '/search'), ['c'], 100);
    expect(inputSchema).toEqual({ type: 'object', properties: {}, additionalProperties: true });
    expect(plan.input).toEqual({ kind: 'merged', declared: false });
  });

  it('turns boolean and malformed property schemas into objects, and caps descriptions inside', () => {
    const { inputSchema } = toolInput(
      endpoint('POST', '/x', object({ any: true, none: false, odd: 3, long: { type: 'string', description: 'y'.repeat(50) } })),
      ['c'],
      10,
    );
    expect(inputSchema.properties).toMatchObject({ any: {}, none: { not: {} }, odd: {} });
    expect((inputSchema.properties.long as { description: string }).description).toHaveLength(10);
  });

  it('keeps a __proto__ property as a property', () => {
    const schema = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}') as Record<string, unknown>;
    const { inputSchema } = toolInput(endpoint('POST', '/x', schema), ['c'], 100);
    expect(Object.keys(inputSchema.properties)).toEqual(['__proto__']);
  });
});

describe('toolAnnotations', () => {
  it('GET is read-only, DELETE destructive, PUT idempotent', () => {
    expect(toolAnnotations('GET', '/a')).toEqual({ title: 'GET /a', readOnlyHint: true });
    expect(toolAnnotations('DELETE', '/a')).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(toolAnnotations('PUT', '/a')).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    expect(toolAnnotations('POST', '/a')).toEqual({ title: 'POST /a', readOnlyHint: false });
  });
});

describe('toolCall', () => {
  const plan = (method: EndpointMethod, path: string, schema?: Record<string, unknown>, clients = ['c']) =>
    toolInput(endpoint(method, path, schema), clients, 100).plan;

  it('POST sends the other arguments as body, parameters fill the path', () => {
    const call = toolCall(plan('POST', '/users/:id/rename', object({ name: { type: 'string' } })), { id: 'u1', name: 'Ann' });
    expect(call).toEqual({ ok: true, value: { clientId: 'c', method: 'POST', path: '/users/u1/rename', body: { name: 'Ann' } } });
  });

  it('sends an empty body object when the endpoint declares an input and none is given', () => {
    expect(toolCall(plan('PATCH', '/x', object({})), {})).toEqual({ ok: true, value: { clientId: 'c', method: 'PATCH', path: '/x', body: {} } });
  });

  it('GET and DELETE send them as query: strings as they are, other values as JSON', () => {
    const call = toolCall(plan('GET', '/search', object({})), { q: 'cats', limit: 5, tags: ['a'] });
    expect(call).toEqual({ ok: true, value: { clientId: 'c', method: 'GET', path: '/search', query: { q: 'cats', limit: '5', tags: '["a"]' } } });
    expect(toolCall(plan('DELETE', '/rows/:id'), { id: '7' })).toEqual({ ok: true, value: { clientId: 'c', method: 'DELETE', path: '/rows/7' } });
  });

  it('a nested input goes as it is; stray arguments are refused by name', () => {
    const p = plan('POST', '/users/:id', object({ id: { type: 'number' } }));
    expect(toolCall(p, { id: 'u', body: { id: 3 } })).toEqual({ ok: true, value: { clientId: 'c', method: 'POST', path: '/users/u', body: { id: 3 } } });
    expect(toolCall(p, { id: 'u', name: 'x' })).toEqual({ ok: false, message: 'Unknown argument "name": this endpoint\'s input goes under "body"' });
  });

  it('a nested non-object input of a GET goes as the body (it cannot be a query)', () => {
    expect(toolCall(plan('GET', '/x', { type: 'string' }), { body: 'hi' })).toMatchObject({ ok: true, value: { body: 'hi' } });
  });

  it('refuses a missing or malformed path parameter, saying which and why', () => {
    const p = plan('GET', '/users/:id');
    expect(toolCall(p, {})).toEqual({ ok: false, message: 'Argument "id" is required: a string, the value of :id in /users/:id' });
    expect(toolCall(p, { id: 'A B' })).toMatchObject({ ok: false, message: expect.stringContaining('Argument "id" must be lower-case') });
    expect(toolCall(p, { id: 42 })).toMatchObject({ ok: true, value: { path: '/users/42' } });
  });

  it('a shared tool needs clientId, one of its clients', () => {
    const p = plan('POST', '/page/click', object({}), ['a', 'b']);
    expect(toolCall(p, {})).toEqual({ ok: false, message: 'Argument "clientId" is required: one of "a", "b"' });
    expect(toolCall(p, { clientId: 'z' })).toEqual({ ok: false, message: 'Argument "clientId" must be one of "a", "b", got "z"' });
    expect(toolCall(p, { clientId: 'b', x: 1 })).toEqual({ ok: true, value: { clientId: 'b', method: 'POST', path: '/page/click', body: { x: 1 } } });
  });
});
