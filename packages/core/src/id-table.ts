/**
 * Entries by string id for tables whose entries come and go all the time (a pending call is added,
 * and deleted about a millisecond later): get, set, delete, size and iteration, as a `Map` would.
 *
 * Not a `Map` (nor a `Set`) because of how V8 keeps one. A `Map` that is added to and deleted from
 * without pause rebuilds its backing table every few dozen operations, and each table it leaves
 * behind keeps a pointer to the one that replaced it, so that iterators can follow. As soon as one
 * of those old tables has been promoted to the old generation, it holds every later table through
 * that chain, and with the tables every entry and all they point to (for a pending call: the HTTP
 * request and response of its reader), until the next full GC. Bench `ws-read` measured it: one round
 * promoted 150 MB instead of 5 MB, and a skill read took a quarter more server CPU. The object
 * behind this class is in V8's dictionary mode from the start (`Object.create(null)`), whose table
 * has no such chain; the null prototype also makes ids like `__proto__` plain keys.
 */
export class IdTable<T extends NonNullable<unknown>> implements Iterable<[string, T]> {
  private readonly entries = Object.create(null) as Record<string, T | undefined>;
  private count = 0;

  /** Number of entries. */
  get size(): number {
    return this.count;
  }

  get(id: string): T | undefined {
    return this.entries[id];
  }

  has(id: string): boolean {
    return this.entries[id] !== undefined;
  }

  /** Add the entry for `id`, or replace it. */
  set(id: string, value: T): this {
    if (this.entries[id] === undefined) this.count++;
    this.entries[id] = value;
    return this;
  }

  /** Remove the entry for `id`; whether there was one. */
  delete(id: string): boolean {
    if (this.entries[id] === undefined) return false;
    delete this.entries[id];
    this.count--;
    return true;
  }

  /** The ids, in the order they were added (integer-like ids first, as for any object's keys). */
  keys(): string[] {
    return Object.keys(this.entries);
  }

  /** A snapshot of the entries: the table may be changed while it is walked. */
  [Symbol.iterator](): Iterator<[string, T]> {
    return (Object.entries(this.entries) as [string, T][])[Symbol.iterator]();
  }
}
