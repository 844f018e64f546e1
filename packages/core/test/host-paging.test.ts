/**
 * Paged listings of the local host (SPEC §12, listing.ts): a walk of every page returns every item
 * once, each page within its bounds (count, bytes, work), while clients come and go; bad cursors
 * are `bad_request`.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ListClientsResult, ListPathsResult, ListedClient, PathDescriptor } from '@mdp/protocol';
import { LISTING_DEFAULTS, MdpError, Router, createLocalHost, type HostApi } from '../src/index.js';
import { aliasFinder } from '../src/aliases.js';
import { KEY_HEAD } from '../src/listing.js';
import { connectClient, endpoint, skill, type Connected } from './helpers.js';

let router: Router;

/**
 * The byte caps on what a client registers, lifted: listings must hold up for whatever an
 * embedder's own sessions register, not only for what the caps let through.
 */
const UNCAPPED = { maxDescriptionLength: 1_000_000, maxCatalogBytes: 10_000_000, maxTotalCatalogBytes: 100_000_000 } as const;

beforeEach(() => {
  router = new Router();
});

afterEach(async () => {
  await router.close();
});

const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/** Every page of a paths listing, each checked against the bounds as it comes. */
async function walkPaths(
  host: HostApi,
  request: Parameters<HostApi['listPaths']>[0],
  maxBytes: number,
  between?: () => void,
): Promise<{ pages: ListPathsResult[]; keys: string[] }> {
  const pages: ListPathsResult[] = [];
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await host.listPaths({ ...request, cursor });
    pages.push(page);
    if (page.paths.length > 1) expect(bytesOf(page)).toBeLessThanOrEqual(maxBytes);
    expect(page.paths.length).toBeLessThanOrEqual(request?.limit ?? LISTING_DEFAULTS.defaultLimit);
    for (const path of page.paths) keys.push(`${path.clientId} ${path.type === 'endpoint' ? path.method : 'GET'} ${path.path}`);
    cursor = page.nextCursor;
    between?.();
  } while (cursor !== undefined);
  return { pages, keys };
}

async function walkClients(
  host: HostApi,
  request: Parameters<HostApi['listClients']>[0],
  between?: () => void,
): Promise<{ pages: ListClientsResult[]; ids: string[] }> {
  const pages: ListClientsResult[] = [];
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await host.listClients({ ...request, cursor });
    pages.push(page);
    ids.push(...page.clients.map((c) => c.id));
    cursor = page.nextCursor;
    between?.();
  } while (cursor !== undefined);
  return { pages, ids };
}

/** xorshift32, seeded: the churn tests replay. */
function random(seed: number): (n: number) => number {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

describe('a registry at the 250,000-path cap', { timeout: 60_000 }, () => {
  const clients = 25;
  const perClient = 10_000;
  /** Built once for these tests, which only read it. */
  let full: Router;

  beforeAll(() => {
    full = new Router();
    for (let c = 0; c < clients; c++) {
      const paths: PathDescriptor[] = [];
      for (let p = 0; p < perClient; p++) paths.push(endpoint(`/p${p}`, 'POST', { description: `path ${p} of client ${c}` }));
      connectClient(full, `c${String(c).padStart(2, '0')}`, paths);
    }
    expect(full.listClients().reduce((sum, c) => sum + c.paths.length, 0)).toBe(250_000);
  }, 60_000);

  afterAll(async () => {
    await full.close();
  });

  it('is walked page by page: every path exactly once, in order, each page within its bounds', async () => {
    const host = createLocalHost(full);
    const { pages, keys } = await walkPaths(host, { limit: 1000 }, LISTING_DEFAULTS.maxPageBytes);
    expect(keys).toHaveLength(250_000);
    expect(new Set(keys).size).toBe(250_000);
    expect(pages.length).toBeGreaterThanOrEqual(250);
    // By client id, then path, then method.
    const unordered = keys.findIndex((key, i) => i > 0 && (keys[i - 1] as string) >= key);
    expect(unordered).toBe(-1);
  });

  it('bounds a page in bytes: a page ends before the item that would pass the bound', async () => {
    const host = createLocalHost(full, { listing: { maxPageBytes: 16 * 1024 } });
    const first = await host.listPaths({ limit: 1000 });
    expect(first.paths.length).toBeGreaterThan(1);
    expect(first.paths.length).toBeLessThan(1000);
    expect(bytesOf(first)).toBeLessThanOrEqual(16 * 1024);
    const { keys } = await walkPaths(host, { limit: 1000, clientId: 'c03' }, 16 * 1024);
    expect(new Set(keys).size).toBe(perClient);
  });

  it('bounds the work of a page: a search that matches nothing ends pages early, with a cursor', async () => {
    const host = createLocalHost(full);
    const first = await host.listPaths({ search: 'no path is called this' });
    expect(first.paths).toEqual([]);
    expect(first.nextCursor).toBeDefined();
    const { pages, keys } = await walkPaths(host, { search: 'no path is called this' }, LISTING_DEFAULTS.maxPageBytes);
    expect(keys).toEqual([]);
    // 250,000 paths looked at, at most scanEntries a page.
    expect(pages.length).toBeGreaterThanOrEqual(250_000 / LISTING_DEFAULTS.scanEntries);

    const clientsFirst = await host.listClients({ search: 'no path is called this' });
    expect(clientsFirst).toEqual({ clients: [], nextCursor: expect.any(String) });
    expect((await walkClients(host, { search: 'no path is called this' })).ids).toEqual([]);
  });

  it('finds what a search matches across pages that end early', async () => {
    const host = createLocalHost(full);
    const { keys } = await walkPaths(host, { search: 'path 9999 of client 2' }, LISTING_DEFAULTS.maxPageBytes);
    expect(keys).toEqual(['c02 POST /p9999', 'c20 POST /p9999', 'c21 POST /p9999', 'c22 POST /p9999', 'c23 POST /p9999', 'c24 POST /p9999']);
  });
});

describe('clients listings', () => {
  it('page by id with limit and nextCursor, and the last page has no cursor', async () => {
    for (const id of ['d', 'b', 'e', 'a', 'c']) connectClient(router, id, [endpoint('/x')]);
    const host = createLocalHost(router);
    const first = await host.listClients({ limit: 2 });
    expect(first.clients.map((c) => c.id)).toEqual(['a', 'b']);
    const second = await host.listClients({ limit: 2, cursor: first.nextCursor });
    expect(second.clients.map((c) => c.id)).toEqual(['c', 'd']);
    const third = await host.listClients({ limit: 2, cursor: second.nextCursor });
    expect(third).toEqual({ clients: [expect.objectContaining({ id: 'e' })] });
    expect((await host.listClients({ limit: 5 })).nextCursor).toBeUndefined();
    expect((await host.listClients()).clients).toHaveLength(5);
  });

  it('uses the default page size when no limit is given', async () => {
    for (let i = 0; i < 250; i++) connectClient(router, `c${String(i).padStart(3, '0')}`, []);
    const host = createLocalHost(router);
    const first = await host.listClients();
    expect(first.clients).toHaveLength(LISTING_DEFAULTS.defaultLimit);
    expect((await walkClients(host, {})).ids).toHaveLength(250);
  });

  it('sends an item larger than the byte bound alone, and stops before one that does not fit', async () => {
    await router.close();
    router = new Router(UNCAPPED);
    const big = 'x'.repeat(40_000);
    connectClient(router, 'a', [endpoint('/a', 'GET', { description: big })]);
    connectClient(router, 'b', [endpoint('/b')]);
    connectClient(router, 'c', [endpoint('/c', 'GET', { description: big })]);
    const host = createLocalHost(router, { listing: { maxPageBytes: 32 * 1024 } });
    const { pages } = await walkClients(host, { limit: 10 });
    expect(pages.map((p) => p.clients.map((c) => c.id))).toEqual([['a'], ['b'], ['c']]);
  });

  it('lists a client too large for maxItemBytes in its short form, marked truncated', async () => {
    connectClient(router, 'a', [endpoint('/a', 'GET', { description: 'y'.repeat(10_000) })]);
    const host = createLocalHost(router);
    const { clients } = await host.listClients({}, { maxItemBytes: 2000 });
    expect(clients).toEqual([
      {
        id: 'a',
        name: 'Client a',
        status: 'online',
        connectedAt: expect.any(String),
        lastSeenAt: expect.any(String),
        connection: expect.any(Object),
        aliases: [],
        paths: [],
        truncated: true,
      },
    ]);
    const { paths } = await host.listPaths({}, { maxItemBytes: 2000 });
    expect(paths).toEqual([{ type: 'endpoint', path: '/a', method: 'GET', clientId: 'a', clientName: 'Client a', truncated: true }]);
  });

  it('lists the aliases of mirrored clients as aliasFinder does, page by page', async () => {
    const isServerId = (id: string): boolean => id === 'A:1' || id === 'B:2';
    const mirror = (serverId: string, clientId: string): Connected => {
      const connected = connectClient(router, `${serverId}.${clientId}`, []);
      connected.session.handle({
        type: 'registerClient',
        client: { id: `${serverId}.${clientId}`, name: clientId, paths: [], metadata: { mdpProxy: { serverId, clientId } } },
      });
      return connected;
    };
    mirror('A:1', 'solo');
    mirror('A:1', 'twice');
    const second = mirror('B:2', 'twice');
    mirror('A:1', 'local');
    connectClient(router, 'local', []);
    mirror('X:9', 'stranger');
    const host = createLocalHost(router, { isServerId });
    const listed = (await walkClients(host, { limit: 1 })).pages.flatMap((p) => p.clients);
    const expected = aliasFinder(
      router.listClients().map((c) => c.descriptor),
      isServerId,
    );
    expect(listed.map((c) => [c.id, c.aliases])).toEqual(listed.map((c) => [c.id, expected(c)]));
    expect(listed.find((c) => c.id === 'A:1.solo')?.aliases).toEqual(['solo']);
    // The mirror that shared its bare id leaves: the other one gets it.
    second.session.end();
    const after = (await host.listClients()).clients as ListedClient[];
    expect(after.find((c) => c.id === 'A:1.twice')?.aliases).toEqual(['twice']);
  });
});

describe('pages asked for at once', () => {
  it('are made one per turn of the event loop, so other work is served between two', async () => {
    connectClient(router, 'a', [endpoint('/x')]);
    const host = createLocalHost(router);
    let turn = 0;
    let ticking = true;
    const tick = (): void => {
      if (!ticking) return;
      turn++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const turns: number[] = [];
    await Promise.all([host.listClients(), host.listPaths(), host.listClients(), host.listPaths()].map((page) => page.then(() => turns.push(turn))));
    ticking = false;
    expect(new Set(turns).size).toBe(4);
  });
});

describe('cursors while clients come and go', () => {
  it('list every client present for the whole walk exactly once (seeded churn)', { timeout: 60_000 }, async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const local = new Router();
      const next = random(seed);
      const sessions = new Map<string, Connected>();
      const add = (id: string): void => void sessions.set(id, connectClient(local, id, [endpoint('/x')]));
      for (let i = 0; i < 60; i++) add(`k${next(1000)}`);
      const host = createLocalHost(local);
      const atStart = new Set(local.listClients().map((c) => c.id));
      const left = new Set<string>();
      const { ids } = await walkClients(host, { limit: 1 + next(7) }, () => {
        for (let n = next(4); n > 0; n--) {
          const ids = [...sessions.keys()];
          const gone = ids[next(ids.length)] as string;
          (sessions.get(gone) as Connected).session.end();
          sessions.delete(gone);
          left.add(gone);
        }
        for (let n = next(4); n > 0; n--) add(`k${next(1000)}`);
      });
      const stayed = [...atStart].filter((id) => !left.has(id));
      expect(new Set(ids).size, `seed ${seed}`).toBe(ids.length);
      for (const id of stayed) expect(ids, `seed ${seed}`).toContain(id);
      await local.close();
    }
  });

  it('list every path present for the whole walk exactly once while catalogs change (seeded churn)', { timeout: 60_000 }, async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const local = new Router();
      const next = random(seed);
      const catalogs = new Map<string, { connected: Connected; paths: PathDescriptor[] }>();
      const catalog = (): PathDescriptor[] => Array.from({ length: next(6) }, () => endpoint(`/p${next(20)}`, next(2) === 0 ? 'GET' : 'POST'));
      const add = (id: string): void => {
        const paths = catalog();
        catalogs.set(id, { connected: connectClient(local, id, paths), paths });
      };
      for (let i = 0; i < 30; i++) add(`k${next(100)}`);
      const host = createLocalHost(local);
      const keysOf = (id: string, paths: readonly PathDescriptor[]): string[] =>
        paths.map((p) => `${id} ${p.type === 'endpoint' ? p.method : 'GET'} ${p.path}`);
      /** Paths as `client method path #n`, n counting the same method and path declared again. */
      const counted = (keys: string[]): string[] => {
        const seen = new Map<string, number>();
        return keys.map((key) => {
          const n = seen.get(key) ?? 0;
          seen.set(key, n + 1);
          return `${key} #${n}`;
        });
      };
      const snapshot = (): Set<string> => new Set(counted([...catalogs].flatMap(([id, { paths }]) => keysOf(id, paths))));
      let always = snapshot();
      const { keys } = await walkPaths(host, { limit: 1 + next(5), depth: 1 }, LISTING_DEFAULTS.maxPageBytes, () => {
        const ids = [...catalogs.keys()];
        const changed = ids[next(ids.length)] as string;
        const entry = catalogs.get(changed) as { connected: Connected; paths: PathDescriptor[] };
        if (next(3) === 0) {
          entry.connected.session.end();
          catalogs.delete(changed);
        } else {
          // Keep some paths, drop others, add new ones.
          const paths = [...entry.paths.filter(() => next(2) === 0), ...catalog()];
          entry.connected.session.handle({ type: 'updateClientCatalog', clientId: changed, paths });
          entry.paths = paths;
        }
        if (next(2) === 0) add(`k${next(100)}`);
        const now = snapshot();
        always = new Set([...always].filter((key) => now.has(key)));
      });
      const listed = counted(keys);
      expect(new Set(listed).size, `seed ${seed}: no path twice`).toBe(listed.length);
      for (const key of always) expect(listed, `seed ${seed}`).toContain(key);
      await local.close();
    }
  });

  it('stay exact for ids longer than a key keeps, and stay short', async () => {
    await router.close();
    router = new Router(UNCAPPED);
    const head = 'h'.repeat(KEY_HEAD + 10);
    const ids = ['a', `${head}1`, `${head}2`, `${head}3`, 'z', `${'w'.repeat(200_000)}`];
    const sessions = new Map(ids.map((id) => [id, connectClient(router, id, [skill('/s/skill.md')])] as const));
    const host = createLocalHost(router);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await host.listClients({ limit: 1, cursor });
      seen.push(...page.clients.map((c) => c.id));
      cursor = page.nextCursor;
      if (cursor !== undefined) expect(cursor.length).toBeLessThan(1000);
      // The client the cursor names leaves: the walk goes on after where it was.
      const last = page.clients[0]?.id;
      if (last?.startsWith(head)) (sessions.get(last) as Connected).session.end();
    } while (cursor !== undefined);
    expect(new Set(seen).size).toBe(ids.length);
    expect(seen.sort()).toEqual([...ids].sort());
  });
});

describe('bad cursors', () => {
  const host = (): HostApi => createLocalHost(router);
  const junk = [
    'not base64!',
    Buffer.from('not json').toString('base64url'),
    Buffer.from('{"a":1}').toString('base64url'),
    Buffer.from('[2,"c","a"]').toString('base64url'),
    Buffer.from('[1,"c",""]').toString('base64url'),
    Buffer.from('[1,"c",7]').toString('base64url'),
    Buffer.from(`[1,"c","${'x'.repeat(400)}"]`).toString('base64url'),
    Buffer.from('[1,"p","a","/x","TRACE",0]').toString('base64url'),
    Buffer.from('[1,"p","a","/x","GET",-1]').toString('base64url'),
    Buffer.from('[1,"p","a","/x","GET",0.5]').toString('base64url'),
    Buffer.from('[1,"p","a",3,"GET",0]').toString('base64url'),
  ];

  it.each(junk)('are refused with bad_request naming the cursor: %s', async (cursor) => {
    connectClient(router, 'a', [endpoint('/x')]);
    for (const listing of [host().listClients({ cursor }), host().listPaths({ cursor })]) {
      const error = await listing.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(MdpError);
      expect(error).toMatchObject({ code: 'bad_request', message: expect.stringMatching(/^cursor: /) });
    }
  });

  it('of one listing are refused by the other', async () => {
    for (const id of ['a', 'b']) connectClient(router, id, [endpoint('/x'), endpoint('/y')]);
    const clients = await host().listClients({ limit: 1 });
    const paths = await host().listPaths({ limit: 1 });
    await expect(host().listPaths({ cursor: clients.nextCursor })).rejects.toMatchObject({ code: 'bad_request' });
    await expect(host().listClients({ cursor: paths.nextCursor })).rejects.toMatchObject({ code: 'bad_request' });
  });
});
