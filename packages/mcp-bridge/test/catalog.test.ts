import { describe, expect, it } from 'vitest';
import { CATALOG_DEFAULTS, initialCatalog, step, type CatalogKind, type CatalogState } from '../src/catalog.js';
import { buildSurface, type CatalogClient } from '../src/surface.js';
import { endpoint, prompt, skill } from '@mdp/test-kit';
import { client } from './fixtures.js';

const todo = client('todo', [endpoint('/page/click', 'POST'), prompt('/review/prompt.md'), skill('/docs/skill.md')]);
const shop = client('shop', [endpoint('/cart', 'GET')]);

/** Drives the machine like the bridge does: events at given times, ticks at wakeAt, notifications recorded. */
class Driver {
  state: CatalogState;
  wakeAt = Infinity;
  readonly sent: Array<{ at: number; kinds: CatalogKind[] }> = [];
  constructor(options = {}) {
    this.state = initialCatalog(options);
  }
  private apply(result: ReturnType<typeof step>, now: number): void {
    this.state = result.state;
    this.wakeAt = result.wakeAt;
    if (result.notify.length > 0) this.sent.push({ at: now, kinds: result.notify });
  }
  /** Run the ticks due up to `now`, then the listing. */
  list(clients: CatalogClient[], now: number): void {
    this.until(now);
    this.apply(step(this.state, { type: 'catalog', clients }, now), now);
  }
  until(now: number): void {
    while (this.wakeAt <= now) {
      const at = this.wakeAt;
      this.apply(step(this.state, { type: 'tick' }, at), at);
    }
  }
  toolNames(): string[] {
    return this.state.surface.tools.map((t) => t.definition.name);
  }
}

describe('catalog notifications', () => {
  it('a client registering: one notification per kind it touches, debounceMs after the change', () => {
    const d = new Driver();
    d.list([todo], 1000);
    expect(d.wakeAt).toBe(1300);
    expect(d.toolNames()).toEqual(['page_click']); // the lists are current at once; only the notification waits
    d.until(5000);
    expect(d.sent).toEqual([{ at: 1300, kinds: ['tools', 'prompts', 'resources'] }]);
  });

  it('only the kinds that changed', () => {
    const d = new Driver();
    d.list([todo], 0);
    d.list([todo, shop], 1000);
    d.until(5000);
    expect(d.sent.map((s) => s.kinds)).toEqual([['tools', 'prompts', 'resources'], ['tools']]);
  });

  it('changes within the window go out together', () => {
    const d = new Driver();
    d.list([shop], 0);
    d.list([shop, todo], 100);
    d.list([shop, todo, client('x', [skill('/x/skill.md')])], 250);
    d.until(5000);
    expect(d.sent).toEqual([{ at: 300, kinds: ['tools', 'prompts', 'resources'] }]);
  });

  it('a client leaving is announced within a second (grace, then debounce)', () => {
    const d = new Driver();
    d.list([todo, shop], 0);
    d.until(1000);
    d.list([shop], 2000);
    expect(d.toolNames()).toEqual(['page_click', 'cart']); // still listed during the grace
    d.until(10_000);
    expect(d.sent.slice(1)).toEqual([{ at: 2800, kinds: ['tools', 'prompts', 'resources'] }]);
    expect(d.sent[1]!.at - 2000).toBeLessThan(1000);
    expect(d.toolNames()).toEqual(['cart']);
  });

  it('a client that drops and comes back within the grace is never announced', () => {
    const d = new Driver();
    d.list([todo, shop], 0);
    d.until(1000);
    d.list([shop], 2000);
    d.list([shop, todo], 2400);
    d.until(10_000);
    expect(d.sent).toHaveLength(1);
    expect(d.state.held.size).toBe(0);
  });

  it('a change undone within the debounce window is not announced', () => {
    const d = new Driver();
    d.list([todo], 0);
    d.until(1000);
    const changed = client('todo', [...todo.paths, endpoint('/extra', 'GET')]);
    d.list([changed], 2000);
    d.list([todo], 2100);
    expect(d.wakeAt).toBe(Infinity);
    d.until(10_000);
    expect(d.sent).toHaveLength(1);
  });

  it('a client back after the grace but within rememberMs takes its old place under the cap', () => {
    const many = (id: string, n: number) =>
      client(
        id,
        Array.from({ length: n }, (_, i) => endpoint(`/${id}${i}`, 'POST')),
      );
    const a = many('a', 2);
    const b = many('b', 2);
    const d = new Driver({ maxTools: 6 });
    d.list([a, b], 0);
    expect(d.toolNames()).toEqual(['a0', 'a1']);
    d.list([b], 1000);
    d.until(2000);
    expect(d.toolNames()).toEqual(['b0', 'b1']);
    d.list([b, a], 3000); // listed after b now, but seen first
    expect(d.toolNames()).toEqual(['a0', 'a1']);
    // Gone longer than rememberMs: a newcomer then.
    d.list([b], 4000);
    d.until(20_000);
    d.list([b, a], 20_000);
    expect(d.toolNames()).toEqual(['b0', 'b1']);
  });

  it('the generic surface never notifies', () => {
    const d = new Driver({ surface: 'generic' });
    d.list([todo], 0);
    d.until(10_000);
    expect(d.sent).toEqual([]);
    expect(d.wakeAt).toBe(Infinity);
  });

  it('random listings: agents end up told the surface of the clients present, never twice per window', () => {
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pool = [todo, shop, client('c', [endpoint('/c', 'PUT'), skill('/c/skill.md')]), client('d', [prompt('/d/prompt.md')])];
    for (let round = 0; round < 50; round++) {
      const d = new Driver();
      let now = 0;
      let clients: CatalogClient[] = [];
      for (let i = 0; i < 30; i++) {
        now += Math.floor(random() * 700);
        clients = pool.filter(() => random() < 0.5);
        d.list(clients, now);
      }
      d.until(now + 60_000);
      expect(d.state.held.size).toBe(0);
      expect(d.state.announced).toEqual(d.state.fingerprints);
      const order = (c: CatalogClient): number => d.state.seen.get(c.id)!.seq;
      const expected = buildSurface(
        [...clients].sort((a, b) => order(a) - order(b)),
        d.state.book,
        d.state.options,
      ).surface;
      expect(d.state.surface.tools.map((t) => t.definition)).toEqual(expected.tools.map((t) => t.definition));
      for (const kind of ['tools', 'prompts', 'resources'] as const) {
        const times = d.sent.filter((s) => s.kinds.includes(kind)).map((s) => s.at);
        for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(300);
      }
    }
  });
});

describe('initialCatalog', () => {
  it('options left undefined keep their defaults; unknown keys are dropped', () => {
    const state = initialCatalog({ surface: undefined, maxTools: 10, host: {} } as never);
    expect(state.options).toEqual({ ...CATALOG_DEFAULTS, maxTools: 10 });
  });
});
