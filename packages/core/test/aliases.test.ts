/** Ids that survive a failover (SPEC §12): resolution and listed aliases, as pure functions. */
import { describe, expect, it } from 'vitest';
import { aliasFinder, baseId, resolveClientId } from '../src/aliases.js';

const plain = (id: string) => ({ id });
const mirror = (serverId: string, clientId: string) => ({ id: `${serverId}.${clientId}`, metadata: { mdpProxy: { serverId, clientId } } });
/** The servers of the cluster these tests run in. */
const SERVERS = new Set(['127.0.0.1:47373', 'A:1', 'B:2']);
const isServerId = (id: string) => SERVERS.has(id);

function resolve(requested: string, clients: Array<{ id: string; metadata?: Record<string, unknown> }>, servers = isServerId) {
  return resolveClientId(
    requested,
    (id) => clients.some((c) => c.id === id),
    () => clients,
    servers,
  );
}

describe('resolveClientId', () => {
  it('takes an id that names a registered client as it is, without reading the list', () => {
    const found = resolveClientId(
      'hello',
      () => true,
      () => {
        throw new Error('must not list');
      },
    );
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
    expect(baseId(forged, isServerId)).toBe('evil');
    expect(resolve('hello', [forged])).toEqual({ kind: 'missing' });
  });

  it('aliases only under server ids of the cluster: a dotted id is not a mirror of whatever it ends with', () => {
    // "com.acme.app" is absent; "app" is another client, not its mirror.
    expect(resolve('com.acme.app', [plain('app')])).toEqual({ kind: 'missing' });
    // A client posing as a mirror of an unknown server does not get the bare id's calls.
    expect(resolve('deploy', [mirror('evil.example', 'deploy')])).toEqual({ kind: 'missing' });
    expect(baseId(mirror('evil.example', 'deploy'), isServerId)).toBe('evil.example.deploy');
    // Nor under a server prefix: the mirror's own must be a server's too.
    expect(resolve('A:1.deploy', [mirror('evil.example', 'deploy')])).toEqual({ kind: 'missing' });
    expect(resolve('A:1.hello', [plain('hello')])).toEqual({ kind: 'alias', id: 'hello' });
  });

  it('makes no aliases at all without server ids (a server outside any cluster)', () => {
    const none = () => false;
    expect(resolve('hello', [mirror('A:1', 'hello')], none)).toEqual({ kind: 'missing' });
    expect(resolve('A:1.hello', [plain('hello')], none)).toEqual({ kind: 'missing' });
    expect(
      resolveClientId(
        'A:1.hello',
        () => false,
        () => [plain('hello')],
      ),
    ).toEqual({ kind: 'missing' });
  });
});

describe('aliasFinder', () => {
  it('gives a mirror its bare id, unless another client has or mirrors it', () => {
    const lone = mirror('A:1', 'solo');
    const twinA = mirror('A:1', 'twin');
    const twinB = mirror('B:2', 'twin');
    const shadowed = mirror('A:1', 'local');
    const clients = [lone, twinA, twinB, shadowed, plain('local')];
    const aliases = aliasFinder(clients, isServerId);
    expect(aliases(lone)).toEqual(['solo']);
    expect(aliases(twinA)).toEqual([]);
    expect(aliases(twinB)).toEqual([]);
    expect(aliases(shadowed)).toEqual([]);
    expect(aliases(plain('local'))).toEqual([]);
  });

  it('gives no alias to a mirror of a server outside the cluster', () => {
    const posing = mirror('evil.example', 'deploy');
    expect(aliasFinder([posing], isServerId)(posing)).toEqual([]);
    expect(aliasFinder([mirror('A:1', 'solo')])(mirror('A:1', 'solo'))).toEqual([]);
  });
});
