/**
 * The catalog cache of remote clients: kept by digest, one fetch shared by concurrent readers,
 * and forgotten for a client (it changed or left) or for many at once (their node died).
 */
import type { ClientDescriptor } from '@mdp/protocol';
import { describe, expect, it } from 'vitest';
import { DescriptorCache } from '../src/descriptor-cache.js';

const descriptor = (id: string): ClientDescriptor => ({ id, name: id, paths: [] });

describe('descriptor cache', () => {
  it('answers at once from what it holds at that digest, and only that', async () => {
    const cache = new DescriptorCache();
    expect(cache.cached('c1', 'd1')).toBeUndefined();
    await cache.get('c1', 'd1', async () => descriptor('c1'));
    expect(cache.cached('c1', 'd1')).toEqual(descriptor('c1'));
    expect(cache.cached('c1', 'd2')).toBeUndefined();
    expect(cache.cached('c2', 'd1')).toBeUndefined();
    cache.forgetClient('c1');
    expect(cache.cached('c1', 'd1')).toBeUndefined();
  });

  it('counts a hit of cached() as a use: the least recently used goes first', async () => {
    const one = JSON.stringify(descriptor('c1')).length;
    const cache = new DescriptorCache(one * 2);
    await cache.get('c1', 'd', async () => descriptor('c1'));
    await cache.get('c2', 'd', async () => descriptor('c2'));
    expect(cache.cached('c1', 'd')).toBeDefined();
    await cache.get('c3', 'd', async () => descriptor('c3'));
    expect(cache.cached('c2', 'd')).toBeUndefined();
    expect(cache.cached('c1', 'd')).toBeDefined();
  });

  it('fetches once per digest, shares a fetch in flight, and fetches again once forgotten', async () => {
    const cache = new DescriptorCache();
    let fetches = 0;
    const fetch = async () => {
      fetches++;
      return descriptor('c1');
    };
    const [one, two] = await Promise.all([cache.get('c1', 'd1', fetch), cache.get('c1', 'd1', fetch)]);
    expect(one).toEqual(descriptor('c1'));
    expect(two).toBe(one);
    expect(fetches).toBe(1);
    await cache.get('c1', 'd1', fetch);
    expect(fetches).toBe(1);
    cache.forgetClient('c1');
    await cache.get('c1', 'd1', fetch);
    expect(fetches).toBe(2);
  });

  it('forgets every client of a batch at once and keeps the others', async () => {
    const cache = new DescriptorCache();
    const ids = Array.from({ length: 50 }, (_, i) => `b-${i}`);
    for (const id of [...ids, 'c-1']) await cache.get(id, 'd', async () => descriptor(id));
    expect(cache.size).toBe(51);
    cache.forgetClients(ids);
    expect(cache.size).toBe(1);
    let fetched = false;
    await cache.get('c-1', 'd', async () => {
      fetched = true;
      return descriptor('c-1');
    });
    expect(fetched).toBe(false);
    // Ids it never held, or forgotten twice: nothing happens.
    cache.forgetClients(['nobody', ...ids]);
    expect(cache.size).toBe(1);
  });
});
