/** The visibility rule of tenancy by principal (tenancy.ts), on its own. */
import { describe, expect, it } from 'vitest';
import { SHARED_TENANCY, createTenancy, sharedPatternProblem } from '../src/index.js';

const alice = { principal: 'token:a' };
const bob = { principal: 'token:b' };
const of = (principal: string | undefined, id = 'app', bareId?: string) => ({ id, principal, ...(bareId === undefined ? {} : { bareId }) });

describe('createTenancy', () => {
  it('shared (the default): everyone sees every client', () => {
    const tenancy = createTenancy();
    expect(tenancy).toBe(SHARED_TENANCY);
    expect(tenancy.mode).toBe('shared');
    expect(tenancy.seenBy(alice)).toBeUndefined();
    expect(createTenancy({ mode: 'shared', sharedClients: ['x'] }).seenBy(bob)).toBeUndefined();
  });

  it('principal: a caller sees its own clients only', () => {
    const sees = createTenancy({ mode: 'principal' }).seenBy(alice);
    expect(sees?.(of('token:a'))).toBe(true);
    expect(sees?.(of('token:b'))).toBe(false);
    // A client of no principal (an embedder's own session) is nobody's.
    expect(sees?.(of(undefined))).toBe(false);
  });

  it('principal: no viewer is the server itself, which sees everything', () => {
    expect(createTenancy({ mode: 'principal' }).seenBy(undefined)).toBeUndefined();
  });

  it('principal: a caller without a principal sees only shared clients', () => {
    const sees = createTenancy({ mode: 'principal', sharedClients: ['pub'] }).seenBy({ principal: undefined });
    expect(sees?.(of(undefined, 'app'))).toBe(false);
    expect(sees?.(of('token:b', 'pub'))).toBe(true);
  });

  it("principal: shared ids and globs are seen by everyone, by id or by a mirror's bare id", () => {
    const sees = createTenancy({ mode: 'principal', sharedClients: ['printer', 'team-*', 'v?'] }).seenBy(alice);
    expect(sees?.(of('token:b', 'printer'))).toBe(true);
    expect(sees?.(of('token:b', 'team-docs'))).toBe(true);
    expect(sees?.(of('token:b', 'team-'))).toBe(true);
    expect(sees?.(of('token:b', 'v1'))).toBe(true);
    expect(sees?.(of('token:b', 'v12'))).toBe(false);
    // Whole-string matches only, and glob text is literal otherwise.
    expect(sees?.(of('token:b', 'printer2'))).toBe(false);
    expect(sees?.(of('token:b', 'my-team-docs'))).toBe(false);
    expect(createTenancy({ mode: 'principal', sharedClients: ['a.b'] }).seenBy(alice)?.(of('token:b', 'axb'))).toBe(false);
    // A member's mirror of `printer` in a cluster.
    expect(sees?.(of('token:b', '127.0.0.1:47373.printer', 'printer'))).toBe(true);
    expect(sees?.(of('token:b', '127.0.0.1:47373.other', 'other'))).toBe(false);
  });

  it('principal: isShared is the seam for shared scopes', () => {
    const sees = createTenancy({ mode: 'principal', isShared: (client) => client.principal === 'token:team' }).seenBy(alice);
    expect(sees?.(of('token:team'))).toBe(true);
    expect(sees?.(of('token:b'))).toBe(false);
  });

  it('refuses a mode or a shared pattern it cannot use', () => {
    expect(() => createTenancy({ mode: 'tenant' as never })).toThrow(/tenancy must be shared or principal/);
    expect(() => createTenancy({ mode: 'principal', sharedClients: [''] })).toThrow(/must not be empty/);
    expect(() => createTenancy({ mode: 'principal', sharedClients: ['a\nb'] })).toThrow(/control characters/);
    expect(() => createTenancy({ mode: 'principal', sharedClients: ['x'.repeat(1025)] })).toThrow(/at most 1024/);
    expect(sharedPatternProblem('ok-*')).toBeUndefined();
  });
});
