import { describe, expect, it } from 'vitest';
import { IdTable } from '../src/id-table.js';

describe('IdTable', () => {
  it('gets, sets, replaces and deletes like a Map, counting its entries', () => {
    const table = new IdTable<{ n: number }>();
    const one = { n: 1 };
    expect(table.set('a', one)).toBe(table);
    table.set('b', { n: 2 });
    expect(table.size).toBe(2);
    expect(table.get('a')).toBe(one);
    expect(table.has('b')).toBe(true);
    table.set('a', { n: 3 });
    expect(table.size).toBe(2);
    expect(table.get('a')).toEqual({ n: 3 });
    expect(table.delete('a')).toBe(true);
    expect(table.delete('a')).toBe(false);
    expect(table.delete('never')).toBe(false);
    expect(table.size).toBe(1);
    expect(table.get('a')).toBeUndefined();
    expect(table.has('a')).toBe(false);
  });

  it("takes ids that name Object.prototype's members as plain keys (ids come from peers)", () => {
    const table = new IdTable<string>();
    for (const id of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(table.has(id)).toBe(false);
      expect(table.get(id)).toBeUndefined();
      expect(table.delete(id)).toBe(false);
      table.set(id, `value of ${id}`);
    }
    expect(table.size).toBe(5);
    expect(table.get('__proto__')).toBe('value of __proto__');
    expect(table.keys()).toEqual(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']);
    expect(table.delete('__proto__')).toBe(true);
    expect(table.size).toBe(4);
    expect(table.get('__proto__')).toBeUndefined();
  });

  it('walks its entries in the order they were added, from a snapshot that deleting does not disturb', () => {
    const table = new IdTable<number>();
    for (const [i, id] of ['x', 'y', 'z'].entries()) table.set(id, i);
    const seen: string[] = [];
    for (const [id, value] of table) {
      seen.push(`${id}=${value}`);
      table.delete(id);
      table.delete('z');
    }
    expect(seen).toEqual(['x=0', 'y=1', 'z=2']);
    expect(table.size).toBe(0);
    expect(table.keys()).toEqual([]);
  });

  it('stays right through many additions and deletions, as pending calls churn', () => {
    const table = new IdTable<number>();
    const live = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      table.set(`call-${i}`, i);
      live.add(`call-${i}`);
      if (i % 3 !== 0) {
        const old = `call-${i - (i % 7)}`;
        expect(table.delete(old)).toBe(live.delete(old));
      }
    }
    expect(table.size).toBe(live.size);
    expect(new Set(table.keys())).toEqual(live);
  });
});
