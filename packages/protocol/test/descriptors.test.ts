import { describe, expect, it } from 'vitest';
import {
  ENDPOINT_METHODS,
  MAX_JSON_DEPTH,
  jsonDepthWithin,
  parseAuthContext,
  parseClientDescriptor,
  parseClientMessage,
  parsePathCatalog,
} from '../src/index.js';
import { clientDescriptor, endpointDescriptor, promptDescriptor, skillDescriptor, without } from './fixtures.js';

function expectCatalogError(input: unknown, path: string, contains?: string) {
  const result = parsePathCatalog(input);
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect(result.path).toBe(path);
  expect(result.error.startsWith(`${path}: `)).toBe(true);
  if (contains) expect(result.error).toContain(contains);
}

describe('path descriptors: the three kinds', () => {
  it('accepts an endpoint, a prompt and a skill with all their optional fields', () => {
    const catalog = [endpointDescriptor(), promptDescriptor(), skillDescriptor()];
    expect(parsePathCatalog(catalog)).toEqual({ ok: true, value: catalog });
  });

  it('accepts each kind with only its required fields', () => {
    const catalog = [
      { type: 'endpoint', path: '/a', method: 'GET' },
      { type: 'prompt', path: '/a.prompt.md' },
      { type: 'skill', path: '/a.skill.md' },
    ];
    expect(parsePathCatalog(catalog)).toEqual({ ok: true, value: catalog });
  });

  it('accepts an empty catalog', () => {
    expect(parsePathCatalog([])).toEqual({ ok: true, value: [] });
  });

  it.each(ENDPOINT_METHODS)('accepts an endpoint with method %s', (method) => {
    expect(parsePathCatalog([{ type: 'endpoint', path: '/orders', method }]).ok).toBe(true);
  });

  it.each(['/docs/review/skill.md', '/docs/SKILL.md', '/skill.md', '/review.skill.md', '/a/:topic/skill.md'])('accepts a skill at %s', (path) => {
    expect(parsePathCatalog([{ type: 'skill', path }])).toEqual({ ok: true, value: [{ type: 'skill', path }] });
  });

  it.each(['/prompts/prompt.md', '/PROMPT.md', '/summarize.prompt.md', '/a/:b/prompt.md'])('accepts a prompt at %s', (path) => {
    expect(parsePathCatalog([{ type: 'prompt', path }])).toEqual({ ok: true, value: [{ type: 'prompt', path }] });
  });

  it('accepts endpoint paths with parameters and the full static alphabet', () => {
    const catalog = [
      { type: 'endpoint', path: '/users/:userId/posts/:post_id', method: 'PATCH' },
      { type: 'endpoint', path: '/A-z_0.9~/.well-known', method: 'PUT' },
      { type: 'endpoint', path: '/docs/readme.md', method: 'GET' },
    ];
    expect(parsePathCatalog(catalog).ok).toBe(true);
  });
});

describe('path descriptors: refused', () => {
  it.each(['/docs/review/skill.md', '/docs/SKILL.md', '/review.skill.md'])('refuses an endpoint at skill path %s', (path) => {
    expectCatalogError([{ type: 'endpoint', path, method: 'GET' }], '0.path', 'must not be a skill or prompt path');
  });

  it.each(['/prompts/prompt.md', '/PROMPT.md', '/summarize.prompt.md'])('refuses an endpoint at prompt path %s', (path) => {
    expectCatalogError([{ type: 'endpoint', path, method: 'POST' }], '0.path', 'must not be a skill or prompt path');
  });

  it.each(['/docs/review', '/docs/skill.txt', '/docs/Skill.md', '/a.prompt.md', '/docs/skill.md/x'])('refuses a skill at non-skill path %s', (path) => {
    expectCatalogError([{ type: 'skill', path }], '0.path', 'skill path must end in');
  });

  it.each(['/docs/review', '/docs/review.skill.md', '/Prompt.md'])('refuses a prompt at non-prompt path %s', (path) => {
    expectCatalogError([{ type: 'prompt', path }], '0.path', 'prompt path must end in');
  });

  it.each([
    ['docs/review/skill.md', 'must start with "/"'],
    ['/docs?x/skill.md', '"?"'],
    ['/docs#x/skill.md', '"#"'],
    ['/docs//skill.md', 'empty segment'],
    ['/docs/./skill.md', '"." or ".."'],
    ['/docs/../skill.md', '"." or ".."'],
    ['/my docs/skill.md', 'whitespace'],
    ['/docs\u0000/skill.md', 'control'],
    ['/docs@x/skill.md', 'segment "docs@x"'],
    ['/:1x/skill.md', 'parameter segment ":1x"'],
    // A parameter is a whole segment; it cannot carry the `.skill.md` suffix.
    ['/:name.skill.md', 'parameter segment ":name.skill.md"'],
  ])('refuses a skill descriptor at bad path %j', (path, reason) => {
    expectCatalogError([{ type: 'skill', path }], '0.path', reason);
  });

  it.each([
    ['a', 'must start with "/"'],
    ['', 'must start with "/"'],
    ['/a?b', '"?"'],
    ['/a#b', '"#"'],
    ['/a//b', 'empty segment'],
    ['/a/', 'empty segment'],
    ['/.', '"." or ".."'],
    ['/a/..', '"." or ".."'],
    ['/a b', 'whitespace'],
    ['/a\u001b', 'control'],
    ['/a\u0085', 'control'],
    ['/user@host', 'segment "user@host"'],
    ['/a/:1x', 'parameter segment ":1x"'],
    ['/a/:', 'parameter segment ":"'],
  ])('refuses an endpoint at bad path %j', (path, reason) => {
    expectCatalogError([{ type: 'endpoint', path, method: 'GET' }], '0.path', reason);
  });

  it('names the index of the bad descriptor in the catalog', () => {
    const catalog = [endpointDescriptor(), skillDescriptor(), { type: 'endpoint', path: '/x', method: 'get' }];
    expectCatalogError(catalog, '2.method', 'method must be one of GET, POST, PUT, PATCH, DELETE');
  });

  it.each([
    ['without type', { path: '/a', method: 'GET' }, '0.type'],
    ['of unknown type', { type: 'tool', path: '/a', method: 'GET' }, '0.type'],
    ['endpoint without path', without(endpointDescriptor(), 'path'), '0.path'],
    ['endpoint with a numeric path', { ...endpointDescriptor(), path: 5 }, '0.path'],
    ['endpoint without method', without(endpointDescriptor(), 'method'), '0.method'],
    ['endpoint with method HEAD', { ...endpointDescriptor(), method: 'HEAD' }, '0.method'],
    ['endpoint with a numeric description', { ...endpointDescriptor(), description: 1 }, '0.description'],
    ['endpoint with inputSchema as an array', { ...endpointDescriptor(), inputSchema: [] }, '0.inputSchema'],
    ['endpoint with inputSchema as a string', { ...endpointDescriptor(), inputSchema: '{}' }, '0.inputSchema'],
    ['endpoint with outputSchema as null', { ...endpointDescriptor(), outputSchema: null }, '0.outputSchema'],
    ['endpoint with a numeric contentType', { ...endpointDescriptor(), contentType: 1 }, '0.contentType'],
    ['prompt without path', without(promptDescriptor(), 'path'), '0.path'],
    ['prompt with inputSchema as a number', { ...promptDescriptor(), inputSchema: 1 }, '0.inputSchema'],
    ['prompt with outputSchema as an array', { ...promptDescriptor(), outputSchema: [] }, '0.outputSchema'],
    ['skill without path', without(skillDescriptor(), 'path'), '0.path'],
    ['skill with a boolean contentType', { ...skillDescriptor(), contentType: true }, '0.contentType'],
    ['skill with a numeric description', { ...skillDescriptor(), description: 2 }, '0.description'],
    ['a descriptor that is a string', '/a', '0'],
    ['a descriptor that is null', null, '0'],
  ])('refuses a descriptor %s', (_name, descriptor, path) => {
    expectCatalogError([descriptor], path);
  });

  it('refuses a catalog that is not an array', () => {
    const result = parsePathCatalog({ 0: skillDescriptor() });
    expect(result).toMatchObject({ ok: false, path: undefined });
  });
});

describe('path descriptors: forward compatibility', () => {
  it('keeps unknown extra fields on every kind', () => {
    const catalog = [
      { ...endpointDescriptor(), tags: ['orders'], annotations: { readOnly: true } },
      { ...promptDescriptor(), arguments: [{ name: 'doc' }] },
      { ...skillDescriptor(), version: 3, futureField: null },
    ];
    const result = parsePathCatalog(catalog);
    expect(result).toEqual({ ok: true, value: catalog });
  });

  it('keeps fields that belong to another kind without treating them as that kind', () => {
    // A skill with a `method` is still a skill; the stray field is kept, not interpreted.
    const skill = { type: 'skill', path: '/s.skill.md', method: 'POST' };
    expect(parsePathCatalog([skill])).toEqual({ ok: true, value: [skill] });
  });

  it('keeps unknown extra fields through registerClient, on the client and on its paths', () => {
    const client: Record<string, unknown> = { ...clientDescriptor(), capabilities: { streaming: true } };
    (client.paths as Array<Record<string, unknown>>)[0]!.x_vendor = 'acme';
    const result = parseClientMessage({ type: 'registerClient', client });
    if (!result.ok || result.value.type !== 'registerClient') throw new Error('expected registerClient');
    expect(result.value.client.capabilities).toEqual({ streaming: true });
    expect(result.value.client.paths[0]).toMatchObject({ x_vendor: 'acme' });
  });
});

describe('client descriptor', () => {
  it('accepts a full descriptor', () => {
    const descriptor = clientDescriptor();
    expect(parseClientDescriptor(descriptor)).toEqual({ ok: true, value: descriptor });
  });

  it('accepts the minimal descriptor', () => {
    expect(parseClientDescriptor({ id: 'x', name: 'X', paths: [] })).toEqual({
      ok: true,
      value: { id: 'x', name: 'X', paths: [] },
    });
  });

  it.each([
    ['without id', without(clientDescriptor(), 'id'), 'id'],
    ['with an empty id', { ...clientDescriptor(), id: '' }, 'id'],
    ['with a numeric id', { ...clientDescriptor(), id: 1 }, 'id'],
    // Review finding: such an id made GET /SKILL.md throw (encodeURIComponent), ending the process.
    ['with a lone surrogate in its id', { ...clientDescriptor(), id: '\ud800x' }, 'id'],
    ['with a lone low surrogate in its id', { ...clientDescriptor(), id: 'x\udc00' }, 'id'],
    ['without name', without(clientDescriptor(), 'name'), 'name'],
    ['with a null name', { ...clientDescriptor(), name: null }, 'name'],
    ['with a numeric version', { ...clientDescriptor(), version: 1 }, 'version'],
    ['with a numeric platform', { ...clientDescriptor(), platform: 1 }, 'platform'],
    ['with a numeric description', { ...clientDescriptor(), description: 1 }, 'description'],
    ['with metadata as a string', { ...clientDescriptor(), metadata: 'x' }, 'metadata'],
    ['with metadata as an array', { ...clientDescriptor(), metadata: [] }, 'metadata'],
    ['without paths', without(clientDescriptor(), 'paths'), 'paths'],
    ['with paths as an object', { ...clientDescriptor(), paths: {} }, 'paths'],
    ['with a bad path descriptor', { ...clientDescriptor(), paths: [{ type: 'endpoint', path: '/a' }] }, 'paths.0.method'],
  ])('refuses a descriptor %s', (_name, input, path) => {
    const result = parseClientDescriptor(input);
    expect(result).toMatchObject({ ok: false, path });
    if (!result.ok) expect(result.error.startsWith(`${path}: `)).toBe(true);
  });

  it('takes ids of any well-formed text, astral characters included', () => {
    for (const id of ['\u{1F600}', 'caf\u00e9', 'a:b/c', '\ud83d\ude00x'])
      expect(parseClientDescriptor({ ...clientDescriptor(), id })).toMatchObject({ ok: true });
  });

  it('says which field of which path is wrong', () => {
    const descriptor = { id: 'c', name: 'n', paths: [{ type: 'endpoint', path: '/review.skill.md', method: 'GET' }] };
    expect(parseClientMessage({ type: 'registerClient', client: descriptor })).toEqual({
      ok: false,
      error: 'client.paths.0.path: endpoint path must not be a skill or prompt path',
      path: 'client.paths.0.path',
    });
  });
});

/** An object nested `depth` levels deep: `{a: {a: … {}}}`. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

describe('nesting depth', () => {
  it('jsonDepthWithin counts objects and arrays, and is safe on any depth', () => {
    expect(jsonDepthWithin('x', 0)).toBe(true);
    expect(jsonDepthWithin({}, 1)).toBe(true);
    expect(jsonDepthWithin([{}], 1)).toBe(false);
    expect(jsonDepthWithin(nested(64), 64)).toBe(true);
    expect(jsonDepthWithin(nested(65), 64)).toBe(false);
    // Far deeper than the stack would allow a full walk (JSON.parse builds it; JSON.stringify could not write it).
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(jsonDepthWithin(deep, MAX_JSON_DEPTH)).toBe(false);
  });

  it.each([
    ['an input schema', { paths: [{ type: 'endpoint', method: 'POST', path: '/a', inputSchema: nested(65) }] }, 'paths.0.inputSchema'],
    ['an output schema', { paths: [{ type: 'prompt', path: '/a.prompt.md', outputSchema: nested(65) }] }, 'paths.0.outputSchema'],
    ['an extra field of a path', { paths: [{ type: 'skill', path: '/a.skill.md', extra: nested(65) }] }, 'paths.0.extra'],
    ['metadata', { metadata: nested(65) }, 'metadata'],
    // An array counts as a level.
    ['an extra field of the client', { extra: [nested(64)] }, 'extra'],
  ])('refuses %s nested deeper than the limit, naming it', (_what, fields, path) => {
    const result = parseClientDescriptor({ ...clientDescriptor(), ...fields });
    expect(result).toEqual({ ok: false, path, error: `${path}: must not nest objects and arrays more than 64 levels deep` });
  });

  it('takes 64 levels in each of those places', () => {
    const descriptor = {
      ...clientDescriptor(),
      metadata: nested(64),
      extra: [nested(63)],
      paths: [
        { type: 'endpoint', method: 'POST', path: '/a', inputSchema: nested(64), outputSchema: nested(64) },
        { type: 'skill', path: '/a.skill.md', extra: nested(64) },
      ],
    };
    expect(parseClientDescriptor(descriptor)).toEqual({ ok: true, value: descriptor });
  });

  it('refuses a registerClient frame whose catalog is 100,000 levels deep, and takes 64', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const frame = JSON.parse(
      `{"type":"registerClient","client":{"id":"d","name":"d","paths":[{"type":"endpoint","method":"POST","path":"/y","inputSchema":{"a":${deep}}}]}}`,
    ) as unknown;
    expect(parseClientMessage(frame)).toMatchObject({ ok: false, path: 'client.paths.0.inputSchema' });
    const fine = {
      type: 'registerClient',
      client: { ...clientDescriptor(), paths: [{ type: 'endpoint', method: 'POST', path: '/y', inputSchema: nested(64) }] },
    };
    expect(parseClientMessage(fine).ok).toBe(true);
  });

  it('bounds auth metadata too', () => {
    expect(parseAuthContext({ metadata: nested(65) })).toMatchObject({ ok: false, path: 'metadata' });
  });
});

describe('auth context', () => {
  it('accepts the full shape and the empty object', () => {
    const auth = { scheme: 'Bearer', token: 'abc', headers: { 'x-mdp-auth-user': 'u' }, metadata: { roles: ['a'] } };
    expect(parseAuthContext(auth)).toEqual({ ok: true, value: auth });
    expect(parseAuthContext({})).toEqual({ ok: true, value: {} });
  });

  it.each([
    [{ scheme: 1 }, 'scheme'],
    [{ token: null }, 'token'],
    [{ headers: 'x' }, 'headers'],
    [{ headers: ['x'] }, 'headers'],
    [{ headers: { a: 1 } }, 'headers.a'],
    [{ metadata: 'x' }, 'metadata'],
  ])('refuses %j', (input, path) => {
    expect(parseAuthContext(input)).toMatchObject({ ok: false, path });
  });
});
