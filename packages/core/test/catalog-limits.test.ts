import { describe, expect, it } from 'vitest';
import { CATALOG_LIMIT_DEFAULTS, catalogProblem, totalPathsProblem } from '../src/catalog-limits.js';
import { fullBucket, takeToken } from '../src/catalog-limits.js';
import { endpoint, skill } from './helpers.js';

const limits = { ...CATALOG_LIMIT_DEFAULTS, maxPathLength: 20, maxPathSegments: 3, maxCatalogPaths: 2 };

describe('totalPathsProblem', () => {
  it('lets a catalog in while all of them together stay within the limit', () => {
    expect(totalPathsProblem(90, 0, 10, 100)).toBeUndefined();
    // Replacing catalogs of 20 paths by one of 30 when 95 are held: 105 would be over.
    expect(totalPathsProblem(95, 20, 30, 100)).toBe('The server holds 95 paths; 30 more would pass its limit of 100 paths in all catalogs; try again later');
  });

  it('never refuses a catalog that shrinks what is held, even over the limit', () => {
    // Over the limit already (it was lowered): a smaller catalog still gets in.
    expect(totalPathsProblem(150, 20, 10, 100)).toBeUndefined();
    expect(totalPathsProblem(150, 20, 20, 100)).toBeUndefined();
  });
});

describe('catalogProblem', () => {
  it('accepts a catalog within every limit', () => {
    expect(catalogProblem([skill('/a/b/skill.md'), endpoint('/x')], limits)).toBeUndefined();
    expect(catalogProblem([], limits)).toBeUndefined();
  });

  it('names the path that is too long', () => {
    expect(catalogProblem([endpoint('/ok'), endpoint(`/${'x'.repeat(20)}`)], limits)).toBe(
      'paths[1].path is 21 characters long; at most 20 are allowed',
    );
  });

  it('names the path with too many segments', () => {
    expect(catalogProblem([endpoint('/a/b/c/d')], limits)).toBe('paths[0].path has 4 segments; at most 3 are allowed');
  });

  it('refuses a catalog with too many paths before looking at any', () => {
    expect(catalogProblem([endpoint('/a'), endpoint('/b'), endpoint(`/${'x'.repeat(100)}`)], limits)).toBe(
      'Catalog has 3 paths; at most 2 are allowed',
    );
  });

  it('has defaults that fit paths read over HTTP', () => {
    expect(CATALOG_LIMIT_DEFAULTS).toEqual({ maxPathLength: 1024, maxPathSegments: 32, maxCatalogPaths: 10_000, maxTotalPaths: 250_000, catalogUpdatesPerMinute: 120 });
    expect(catalogProblem([endpoint(`/${'a'.repeat(100_000)}`)], CATALOG_LIMIT_DEFAULTS)).toMatch(/100001 characters/);
    expect(catalogProblem([endpoint('/a'.repeat(50_000))], CATALOG_LIMIT_DEFAULTS)).toMatch(/characters long/);
    expect(catalogProblem([endpoint('/a'.repeat(33))], CATALOG_LIMIT_DEFAULTS)).toMatch(/33 segments/);
  });
});

describe('takeToken', () => {
  it('allows a burst of the per-minute rate, then one per 60000/rate ms', () => {
    const bucket = fullBucket(6, 0);
    for (let i = 0; i < 6; i++) expect(takeToken(bucket, 0, 6)).toBe(0);
    expect(takeToken(bucket, 0, 6)).toBe(10_000);
    expect(takeToken(bucket, 4_000, 6)).toBe(6_000);
    expect(takeToken(bucket, 10_000, 6)).toBe(0);
    expect(takeToken(bucket, 10_000, 6)).toBe(10_000);
  });

  it('never holds more than the burst, however long the bucket was idle', () => {
    const bucket = fullBucket(2, 0);
    expect(takeToken(bucket, 0, 2)).toBe(0);
    expect(takeToken(bucket, 3_600_000, 2)).toBe(0);
    expect(takeToken(bucket, 3_600_000, 2)).toBe(0);
    expect(takeToken(bucket, 3_600_000, 2)).toBe(30_000);
  });

  it('is not refilled by a clock that goes backwards', () => {
    const bucket = fullBucket(1, 1000);
    expect(takeToken(bucket, 1000, 1)).toBe(0);
    expect(takeToken(bucket, 0, 1)).toBe(60_000);
  });
});
