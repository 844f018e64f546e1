import { describe, expect, it } from 'vitest';
import { CatalogTotals } from '../src/catalog-totals.js';

const limits = { maxTotalPaths: 10, maxTotalCatalogBytes: 1000, maxClientsPerAddress: 2 };

describe('CatalogTotals', () => {
  it('adds up what is registered, and what leaves or is replaced', () => {
    const totals = new CatalogTotals(limits);
    const a = { paths: 3, bytes: 300, address: 'A' };
    const b = { paths: 2, bytes: 200, address: undefined };
    totals.add(a);
    totals.add(b);
    expect([totals.paths, totals.bytes, totals.clientsOf('A')]).toEqual([5, 500, 1]);
    totals.replace(a, { paths: 1, bytes: 100, address: 'A' });
    expect([totals.paths, totals.bytes, totals.clientsOf('A')]).toEqual([3, 300, 1]);
    totals.remove({ paths: 1, bytes: 100, address: 'A' });
    totals.remove(b);
    expect([totals.paths, totals.bytes, totals.clientsOf('A')]).toEqual([0, 0, 0]);
  });

  it('refuses past either total, at the limit itself accepted, counting what the catalog replaces', () => {
    const totals = new CatalogTotals(limits);
    const held = { paths: 6, bytes: 600, address: undefined };
    totals.add(held);
    expect(totals.fullProblem(4, 400, [])).toBeUndefined();
    expect(totals.fullProblem(5, 10, [])).toMatch(/limit of 10 paths/);
    expect(totals.fullProblem(1, 401, [])).toMatch(/maxTotalCatalogBytes \(1000\)/);
    expect(totals.fullProblem(10, 1000, [held, undefined])).toBeUndefined();
  });

  it('refuses a client of an address that holds its share, not counting the ones it replaces', () => {
    const totals = new CatalogTotals(limits);
    const first = { paths: 1, bytes: 1, address: 'A' };
    totals.add(first);
    totals.add({ paths: 1, bytes: 1, address: 'A' });
    expect(totals.addressProblem('A', [])).toBe('Too many clients from this address (maxClientsPerAddress 2)');
    expect(totals.addressProblem('A', [first])).toBeUndefined();
    expect(totals.addressProblem('B', [])).toBeUndefined();
    expect(totals.addressProblem(undefined, [])).toBeUndefined();
  });
});
