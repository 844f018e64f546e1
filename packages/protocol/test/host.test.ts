/** Host contract requests (SPEC §12): what the schemas accept and how they word a refusal. */
import { describe, expect, it } from 'vitest';
import { parseCallPathRequest, parseCallPathsRequest, parseListClientsRequest, parseListPathsRequest, pathDepth, proxyMarker } from '../src/index.js';

describe('host requests', () => {
  it('accepts the documented shapes and drops unknown fields', () => {
    expect(parseListClientsRequest({ search: 'x', extra: 1 })).toEqual({ ok: true, value: { search: 'x' } });
    expect(parseListPathsRequest({ clientId: 'c', depth: 2 })).toEqual({ ok: true, value: { clientId: 'c', depth: 2 } });
    expect(parseListClientsRequest({ limit: 1000, cursor: 'abc' })).toEqual({ ok: true, value: { limit: 1000, cursor: 'abc' } });
    expect(parseListPathsRequest({ limit: 1, cursor: 'x'.repeat(4096) }).ok).toBe(true);
    const call = { clientId: 'c', method: 'POST', path: '/a/b', query: { q: '1' }, body: [1], headers: { h: 'v' }, auth: { token: 't' } };
    expect(parseCallPathRequest(call)).toEqual({ ok: true, value: call });
    expect(parseCallPathsRequest({ method: 'GET', path: '/s' })).toEqual({ ok: true, value: { method: 'GET', path: '/s' } });
  });

  it.each([
    [parseListPathsRequest, { depth: 0 }, 'depth: must be at least 1'],
    [parseListPathsRequest, { depth: 1.5 }, 'depth: must be a whole number'],
    [parseListPathsRequest, { clientId: '' }, 'clientId: must not be empty'],
    [parseListClientsRequest, { search: 'x'.repeat(1001) }, 'search: must be at most 1000 characters'],
    [parseListClientsRequest, { limit: 0 }, 'limit: must be at least 1'],
    [parseListClientsRequest, { limit: 1001 }, 'limit: must be at most 1000'],
    [parseListPathsRequest, { limit: 2.5 }, 'limit: must be a whole number'],
    [parseListPathsRequest, { limit: '10' }, 'limit'],
    [parseListClientsRequest, { cursor: '' }, 'cursor: must not be empty'],
    [parseListPathsRequest, { cursor: 'x'.repeat(4097) }, 'cursor: must be at most 4096 characters'],
    [parseListPathsRequest, { cursor: 7 }, 'cursor'],
    [parseCallPathRequest, { method: 'GET', path: '/a' }, 'clientId'],
    [parseCallPathRequest, { clientId: 'c', method: 'TRACE', path: '/a' }, 'method: method must be one of GET, POST, PUT, PATCH, DELETE'],
    [parseCallPathRequest, { clientId: 'c', method: 'GET', path: 'a' }, 'path: path must start with "/"'],
    [parseCallPathRequest, { clientId: 'c', method: 'GET', path: '/a/../b' }, 'path: path must not contain "." or ".." segments'],
    [parseCallPathRequest, { clientId: 'c', method: 'GET', path: '/a', query: { n: 1 } }, 'query.n'],
    [parseCallPathRequest, { clientId: 'c', method: 'GET', path: '/a', headers: [] }, 'headers'],
    [parseCallPathsRequest, { clientIds: [], method: 'GET', path: '/a' }, 'clientIds: must name at least one client'],
    [parseCallPathsRequest, { clientIds: ['a', 'b', 'a'], method: 'GET', path: '/a' }, 'clientIds: must not name a client twice'],
  ] as const)('refuses %#: %j', (parse, input, error) => {
    const result = parse(input as never);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(error);
  });
});

describe('pathDepth', () => {
  it.each([
    ['/a/skill.md', 1],
    ['/a/b/skill.md', 2],
    ['/click', 1],
    ['/page/click', 1],
    ['/a/b/c/d', 3],
  ])('%s is %i', (path, depth) => expect(pathDepth(path)).toBe(depth));
});

describe('proxyMarker', () => {
  it('reads the marker of a mirror and ignores one that does not make up the id', () => {
    const marker = { serverId: 'h:1', clientId: 'c' };
    expect(proxyMarker({ id: 'h:1.c', metadata: { mdpProxy: marker } })).toEqual(marker);
    expect(proxyMarker({ id: 'other', metadata: { mdpProxy: marker } })).toBeUndefined();
    expect(proxyMarker({ id: 'h:1.c', metadata: { mdpProxy: 'x' } })).toBeUndefined();
    expect(proxyMarker({ id: 'h:1.c' })).toBeUndefined();
  });

  it('reads when the mirrored client registered, only as a finite number', () => {
    expect(proxyMarker({ id: 'h:1.c', metadata: { mdpProxy: { serverId: 'h:1', clientId: 'c', registeredAt: 1234 } } })).toEqual({
      serverId: 'h:1',
      clientId: 'c',
      registeredAt: 1234,
    });
    for (const registeredAt of ['1234', null, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(proxyMarker({ id: 'h:1.c', metadata: { mdpProxy: { serverId: 'h:1', clientId: 'c', registeredAt } } })).toEqual({
        serverId: 'h:1',
        clientId: 'c',
      });
    }
  });
});
