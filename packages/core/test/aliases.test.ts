/** Ids that survive a failover (SPEC §12): resolution and listed aliases, as pure functions. */
import { describe, expect, it } from 'vitest';
import { aliasFinder, baseId, resolveClientId } from '../src/index.js';

const plain = (id: string) => ({ id });
const mirror = (serverId: string, clientId: string) => ({ id: `${serverId}.${clientId}`, metadata: { mdpProxy: { serverId, clientId } } });

function resolve(requested: string, clients: Array<{ id: string; metadata?: Record<string, unknown> }>) {
  return resolveClientId(requested, (id) => clients.some((c) => c.id === id), () => clients);
}

describe('resolveClientId', () => {
  it('takes an id that names a registered client as it is, without reading the list', () => {
    const found = resolveClientId('hello', () => true, () => {
      throw new Error('must not list');
    });
    expect(found).toEqual({ kind: 'exact', id: 'hello' });
  });

  it.each([
    ['a bare id to its one mirror', 'hello', [mirror('127.0.0.1:47373', 'hello')], '127.0.0.1:47373.hello'],
    ['a mirrored id to the bare client once it is local', '127.0.0.1:47373.hello', [plain('hello')], 'hello'],
    ['a mirrored id to the mirror under another prefix', 'A:1.hello', [mirror('B:2', 'hello'), plain('other')], 'B:2.hello'],
  ])('resolves %s', (_what, requested, clients, expected) => {
    expect(resolve(requested, clients)).toEqual({ kind: 'alias', id: expected });
  });

  it('refuses to guess between two candidates and names both', () => {
    expect(resolve('hello', [mirror('B:2', 'hello'), mirror('A:1', 'hello')])).toEqual({ kind: 'ambiguous', candidates: ['A:1.hello', 'B:2.hello'] });
  });

  it('finds nothing for unrelated ids', () => {
    expect(resolve('hello', [plain('x.hello'), plain('hell'), mirror('A:1', 'other')])).toEqual({ kind: 'missing' });
    expect(resolve('nobody', [])).toEqual({ kind: 'missing' });
  });

  it('does not trust a proxy marker that does not make up the id (any client may write metadata)', () => {
    const forged = { id: 'evil', metadata: { mdpProxy: { serverId: 'A:1', clientId: 'hello' } } };
    expect(baseId(forged)).toBe('evil');
    expect(resolve('hello', [forged])).toEqual({ kind: 'missing' });
  });
});

describe('aliasFinder', () => {
  it('gives a mirror its bare id, unless another client has or mirrors it', () => {
    const lone = mirror('A:1', 'solo');
    const twinA = mirror('A:1', 'twin');
    const twinB = mirror('B:2', 'twin');
    const shadowed = mirror('A:1', 'local');
    const clients = [lone, twinA, twinB, shadowed, plain('local')];
    const aliases = aliasFinder(clients);
    expect(aliases(lone)).toEqual(['solo']);
    expect(aliases(twinA)).toEqual([]);
    expect(aliases(twinB)).toEqual([]);
    expect(aliases(shadowed)).toEqual([]);
    expect(aliases(plain('local'))).toEqual([]);
  });
});
