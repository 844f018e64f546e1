import { describe, expect, it } from 'vitest';
import type { ClientDescriptor, PathDescriptor } from '@mdp/protocol';
import { CATALOG_LIMIT_DEFAULTS, addressProblem, catalogProblem, measureCatalog, totalBytesProblem, totalPathsProblem } from '../src/catalog-limits.js';
import { fullBucket, takeToken } from '../src/catalog-limits.js';
import { client, endpoint, prompt, skill } from './helpers.js';

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
    expect(catalogProblem([endpoint('/ok'), endpoint(`/${'x'.repeat(20)}`)], limits)).toBe('paths[1].path is 21 characters long; at most 20 are allowed');
  });

  it('names the path with too many segments', () => {
    expect(catalogProblem([endpoint('/a/b/c/d')], limits)).toBe('paths[0].path has 4 segments; at most 3 are allowed');
  });

  it('refuses a catalog with too many paths before looking at any', () => {
    expect(catalogProblem([endpoint('/a'), endpoint('/b'), endpoint(`/${'x'.repeat(100)}`)], limits)).toBe('Catalog has 3 paths; at most 2 are allowed');
  });

  it('has defaults that fit paths read over HTTP', () => {
    expect(CATALOG_LIMIT_DEFAULTS).toEqual({
      maxPathLength: 1024,
      maxPathSegments: 32,
      maxCatalogPaths: 10_000,
      maxTotalPaths: 250_000,
      maxDescriptionLength: 16_384,
      maxSchemaLength: 65_536,
      maxCatalogBytes: 1_048_576,
      maxTotalCatalogBytes: 33_554_432,
      maxClientsPerAddress: 1000,
      maxCatalogUpdatesPerMinute: 120,
    });
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

/** UTF-8 bytes of `value` as JSON. */
const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/** An object whose JSON is exactly `chars` characters long (at least 9). */
function schemaOf(chars: number): Record<string, unknown> {
  const schema = { d: '' };
  schema.d = 'x'.repeat(chars - JSON.stringify(schema).length);
  return schema;
}

describe('measureCatalog', () => {
  const sizes = { maxDescriptionLength: 10, maxSchemaLength: 30, maxCatalogBytes: 10_000 };
  const measured = (descriptor: ClientDescriptor, limits = sizes) => measureCatalog(descriptor.paths, descriptor, limits);

  it('gives the UTF-8 bytes of the descriptor as JSON, and of its head (paths: [])', () => {
    const descriptors: ClientDescriptor[] = [
      client('a', []),
      client('b', [skill('/s/skill.md')]),
      client('é😀', [endpoint('/x', 'POST', { description: 'Ünïcödé "q"', inputSchema: { type: 'object' } }), prompt('/p.prompt.md')], {
        version: '1',
        metadata: { k: [1, 2] },
      }),
      { id: 'c', name: 'C', description: undefined, paths: [skill('/s/skill.md', { contentType: undefined, extra: 7 })] },
      { paths: [skill('/s/skill.md')], id: 'paths first', name: '' },
    ];
    for (const descriptor of descriptors) {
      expect(measured(descriptor, { ...sizes, maxDescriptionLength: 100 })).toEqual({
        bytes: bytesOf(descriptor),
        headBytes: bytesOf({ ...descriptor, paths: [] }),
      });
    }
  });

  it('measures an update against the head it keeps', () => {
    const registered = client('a', [skill('/s/skill.md')], { description: 'kept' });
    const { headBytes } = measured(registered) as { headBytes: number };
    const paths: PathDescriptor[] = [endpoint('/one'), skill('/two/skill.md', { description: 'two' })];
    expect(measureCatalog(paths, headBytes, sizes)).toEqual({ bytes: bytesOf({ ...registered, paths }), headBytes });
    expect(measureCatalog([], headBytes, sizes)).toEqual({ bytes: headBytes, headBytes });
  });

  it('takes a text of maxDescriptionLength characters and refuses one more, in any text field but the path', () => {
    const at = 'd'.repeat(10);
    const over = 'd'.repeat(11);
    expect(measured(client('a', [skill('/s/skill.md', { description: at })], { description: at, name: at }))).toHaveProperty('bytes');
    // Characters, not bytes: ten astral characters are twenty UTF-16 units; ten of 'é' pass.
    expect(measured(client('a', [skill('/s/skill.md', { description: 'é'.repeat(10) })]))).toHaveProperty('bytes');
    const cases: Array<[ClientDescriptor, string]> = [
      [client('a', [skill('/s/skill.md', { description: over })]), 'paths[0].description'],
      [client('a', [endpoint('/a'), endpoint('/b', 'GET', { contentType: over })]), 'paths[1].contentType'],
      [client('a', [skill('/s/skill.md', { note: over })]), 'paths[0].note'],
      [client('a', [], { description: over }), 'client.description'],
      [client('a', [], { name: over }), 'client.name'],
      [client('a', [], { platform: over }), 'client.platform'],
      [client(over, []), 'client.id'],
      [client('a', [], { 'odd key': over }), 'client["odd key"]'],
    ];
    for (const [descriptor, field] of cases) {
      expect(measured(descriptor)).toEqual({ problem: `${field} is 11 characters long; at most 10 are allowed (maxDescriptionLength)` });
    }
    // The path has a limit of its own (maxPathLength).
    expect(measured(client('a', [endpoint(`/${'p'.repeat(40)}`)]))).toHaveProperty('bytes');
  });

  it('takes a schema of maxSchemaLength characters as JSON and refuses one more, in any object field', () => {
    expect(JSON.stringify(schemaOf(30)).length).toBe(30);
    expect(
      measured(client('a', [endpoint('/a', 'POST', { inputSchema: schemaOf(30), outputSchema: schemaOf(30) })], { metadata: schemaOf(30) })),
    ).toHaveProperty('bytes');
    const cases: Array<[ClientDescriptor, string]> = [
      [client('a', [endpoint('/a', 'POST', { inputSchema: schemaOf(31) })]), 'paths[0].inputSchema'],
      [client('a', [prompt('/p.prompt.md', { outputSchema: schemaOf(31) })]), 'paths[0].outputSchema'],
      [client('a', [skill('/s/skill.md', { extra: [schemaOf(29)] })]), 'paths[0].extra'],
      [client('a', [], { metadata: schemaOf(31) }), 'client.metadata'],
    ];
    for (const [descriptor, field] of cases) {
      expect(measured(descriptor)).toEqual({ problem: `${field} is over 30 characters as JSON (maxSchemaLength)` });
    }
  });

  it('takes a catalog of maxCatalogBytes and refuses one byte more', () => {
    const descriptor = client('a', [skill('/s/skill.md', { description: 'x' })]);
    const bytes = bytesOf(descriptor);
    expect(measured(descriptor, { ...sizes, maxCatalogBytes: bytes })).toEqual({ bytes, headBytes: expect.any(Number) });
    expect(measured(descriptor, { ...sizes, maxCatalogBytes: bytes - 1 })).toEqual({ problem: `Catalog is over ${bytes - 1} bytes as JSON (maxCatalogBytes)` });
    // Also when the head alone is over, and for an update whose paths take it over.
    const head = bytesOf({ ...descriptor, paths: [] });
    expect(measured(descriptor, { ...sizes, maxCatalogBytes: head - 1 })).toEqual({ problem: `Catalog is over ${head - 1} bytes as JSON (maxCatalogBytes)` });
    expect(measureCatalog(descriptor.paths, head, { ...sizes, maxCatalogBytes: bytes })).toEqual({ bytes, headBytes: head });
    expect(measureCatalog(descriptor.paths, head, { ...sizes, maxCatalogBytes: bytes - 1 })).toHaveProperty('problem');
  });

  it('looks no further than the caps in a catalog far over them', () => {
    // 200,000 paths of 1 KB: refused after about maxCatalogBytes of them, not after 200 MB.
    const description = 'x'.repeat(1000);
    const paths = Array.from({ length: 200_000 }, () => skill('/s/skill.md', { description }));
    const started = { calls: 0 };
    const counting = new Proxy(paths, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) started.calls++;
        return Reflect.get(target, key, receiver);
      },
    });
    expect(measureCatalog(counting, client('a', []), { maxDescriptionLength: 2000, maxSchemaLength: 100, maxCatalogBytes: 100_000 })).toHaveProperty('problem');
    expect(started.calls).toBeLessThan(200);
  });
});

describe('totalBytesProblem', () => {
  it('lets a catalog in while all of them together stay within the limit, the limit itself included', () => {
    expect(totalBytesProblem(90, 0, 10, 100)).toBeUndefined();
    expect(totalBytesProblem(90, 0, 11, 100)).toBe('Catalogs here hold 90 bytes; 11 more would pass maxTotalCatalogBytes (100); try again later');
    // Replacing a catalog of 20 bytes by one of 30 when 95 are held: 105 would be over.
    expect(totalBytesProblem(95, 20, 25, 100)).toBeUndefined();
    expect(totalBytesProblem(95, 20, 26, 100)).toMatch(/^Catalogs here hold 95 bytes; 26 more/);
  });

  it('never refuses a catalog that shrinks what is held, even over the limit', () => {
    expect(totalBytesProblem(150, 20, 20, 100)).toBeUndefined();
  });
});

describe('addressProblem', () => {
  it('lets an address hold up to maxClientsPerAddress clients', () => {
    expect(addressProblem(2, 3)).toBeUndefined();
    expect(addressProblem(3, 3)).toBe('Too many clients from this address (maxClientsPerAddress 3)');
  });
});
