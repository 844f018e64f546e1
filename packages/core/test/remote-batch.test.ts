/**
 * A fleet node's clients coming or going together (SPEC §16.3): the directory tells it as one
 * change naming them all, and the router passes it on as one batch, so that the listing order is
 * updated in one pass and each host listener hears one notice, however many clients the node had.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Router, createLocalHost, createTenancy, type HostApi, type RemoteChange, type RemoteClient, type RemoteDirectory } from '../src/index.js';
import { connectClient } from './helpers.js';

/** A directory whose view the test sets by hand and whose changes it sends when it likes. */
class HandDirectory implements RemoteDirectory {
  readonly clients = new Map<string, RemoteClient>();
  private readonly listeners = new Set<(changes: readonly RemoteChange[]) => void>();

  put(id: string, node: string, principal?: string): void {
    this.clients.set(id, { id, node, principal, registeredAt: 0, digest: 'd', transport: 'websocket', secure: false, authSource: 'none' });
  }

  emit(changes: readonly RemoteChange[]): void {
    for (const listener of this.listeners) listener(changes);
  }

  resolve(clientId: string): RemoteClient | undefined {
    return this.clients.get(clientId);
  }

  list(): Iterable<RemoteClient> {
    return this.clients.values();
  }

  async descriptor(clientId: string) {
    return this.clients.has(clientId) ? { id: clientId, name: clientId, paths: [] } : undefined;
  }

  async call() {
    return { ok: false as const, source: 'server' as const, error: { code: 'not_found', message: 'not here' } };
  }

  onChange(listener: (changes: readonly RemoteChange[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

let router: Router;
let directory: HandDirectory;
let host: HostApi;

beforeEach(() => {
  router = new Router({});
  directory = new HandDirectory();
  router.fleet.attach(directory);
  host = createLocalHost(router);
});

afterEach(async () => {
  await router.close();
});

async function listedIds(): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await host.listClients({ limit: 200, ...(cursor === undefined ? {} : { cursor }) });
    ids.push(...page.clients.map((c) => c.id));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return ids;
}

const sorted = (ids: Iterable<string>): string[] => [...ids].sort();

describe('a fleet node\u2019s clients as one batch', () => {
  it('a dead node\u2019s clients leave the listing together, with one notice per listener', async () => {
    const dead = Array.from({ length: 120 }, (_, i) => `b-${String(i).padStart(3, '0')}`);
    for (const id of dead) directory.put(id, 'node-b');
    for (const id of ['a-1', 'c-1', 'z-1']) directory.put(id, 'node-c');
    connectClient(router, 'local-1');
    connectClient(router, 'b-050x');
    // The first listing builds the order the batch must then update.
    expect(await listedIds()).toEqual(sorted([...dead, 'a-1', 'c-1', 'z-1', 'local-1', 'b-050x']));
    let notices = 0;
    const batches: (readonly string[])[] = [];
    const perId: string[] = [];
    const offs = [host.onChange(() => notices++), router.onClientChanges((ids) => batches.push(ids)), router.onClientChange((id) => perId.push(id))];
    for (const id of dead) directory.clients.delete(id);
    directory.emit([{ kind: 'removed', node: 'node-b', clientIds: dead }]);
    expect(notices).toBe(1);
    expect(batches).toEqual([dead]);
    expect(perId).toEqual(dead);
    expect(await listedIds()).toEqual(['a-1', 'b-050x', 'c-1', 'local-1', 'z-1']);
    for (const off of offs) off();
  });

  it('a node that comes up adds its clients in listing order in one pass, each id once', async () => {
    for (const id of ['m-1', 'f-1']) directory.put(id, 'node-c');
    connectClient(router, 'k-1');
    expect(await listedIds()).toEqual(['f-1', 'k-1', 'm-1']);
    const came = Array.from({ length: 60 }, (_, i) => `${String.fromCharCode(97 + (i % 26))}-x${i}`);
    for (const id of came) directory.put(id, 'node-b');
    let notices = 0;
    const off = host.onChange(() => notices++);
    // Listed twice in one batch, and one already listed: each still appears once.
    directory.emit([{ kind: 'added', node: 'node-b', clientIds: [...came, came[0] as string, 'm-1'] }]);
    off();
    expect(notices).toBe(1);
    expect(await listedIds()).toEqual(sorted([...came, 'f-1', 'k-1', 'm-1']));
  });

  it('many changes of single clients in one call are one notice too', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `c-${i}`);
    expect(await listedIds()).toEqual([]);
    for (const id of ids) directory.put(id, 'node-b');
    let notices = 0;
    const off = host.onChange(() => notices++);
    directory.emit(ids.map((clientId) => ({ kind: 'added' as const, clientId })));
    off();
    expect(notices).toBe(1);
    expect(await listedIds()).toEqual(sorted(ids));
  });

  it('a viewer hears a batch once when it names a client it sees, and not at all when it names none', async () => {
    host = createLocalHost(router, { tenancy: createTenancy({ mode: 'principal' }) });
    const theirs = Array.from({ length: 40 }, (_, i) => `t-${i}`);
    for (const id of theirs) directory.put(id, 'node-b', 'token:them');
    directory.put('mine', 'node-b', 'token:me');
    let heard = 0;
    const off = host.onChange(() => heard++, { principal: 'token:me' });
    for (const id of theirs) directory.clients.delete(id);
    directory.emit([{ kind: 'removed', node: 'node-b', clientIds: theirs }]);
    expect(heard).toBe(0);
    directory.clients.delete('mine');
    directory.emit([{ kind: 'removed', node: 'node-b', clientIds: ['mine', ...theirs] }]);
    expect(heard).toBe(1);
    off();
  });
});
