/**
 * The cluster feature's `host`: one object other features get at construction, answering from the
 * router before the node starts and from the node afterwards, with its change listeners moving along.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MdpError, createLocalHost, type HostApi } from '@mdp/core';
import { createServerContext } from '../src/context.js';
import { clusterFeature, switchingHost } from '../src/features/cluster.js';
import { serverUrls } from '../src/urls.js';

const closers: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function register(ctx: ReturnType<typeof createServerContext>, id: string): () => void {
  const session = ctx.router.openSession({ kind: 'test', wantsPing: false, send: () => undefined, close: () => undefined });
  session.handle({ type: 'registerClient', client: { id, name: id, paths: [{ type: 'skill', path: '/a/skill.md' }] } });
  return () => session.end();
}

describe('the cluster feature', () => {
  it('answers host requests from the router before the node starts, and through the node after', async () => {
    const ctx = createServerContext({ logLevel: 'silent' });
    closers.push(() => ctx.router.close());
    const feature = clusterFeature(ctx, { clusterId: 'c', cluster: undefined, authTokens: undefined });
    closers.push(() => feature.close?.());
    const host = feature.hostApi;
    let changes = 0;
    host.onChange(() => (changes += 1));

    register(ctx, 'early');
    expect(changes).toBe(1);
    expect((await host.listClients()).clients.map((c) => c.id)).toEqual(['early']);

    feature.start?.({ host: '127.0.0.1', port: 1, serverId: '127.0.0.1:1', secure: false, urls: serverUrls('127.0.0.1:1') });
    expect(feature.hostApi).toBe(host);
    // The switch itself is a change; after it, the node's host hears the router.
    expect(changes).toBe(2);
    const leave = register(ctx, 'late');
    expect(changes).toBe(3);
    expect((await host.listClients()).clients.map((c) => c.id)).toEqual(['early', 'late']);
    expect(await host.callPath({ clientId: 'nobody', method: 'GET', path: '/a/skill.md' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    leave();
    expect(changes).toBe(4);
  });
});

describe('switchingHost', () => {
  /** A host that records which one was asked. */
  function named(name: string, asked: string[]): HostApi & { fire(): void } {
    const listeners = new Set<() => void>();
    return {
      listClients: async () => (asked.push(`${name}.listClients`), { clients: [] }),
      listPaths: async () => (asked.push(`${name}.listPaths`), { paths: [] }),
      callPath: async () => (asked.push(`${name}.callPath`), { ok: true, data: name }),
      callPaths: async () => {
        asked.push(`${name}.callPaths`);
        throw new MdpError('not_found', 'none');
      },
      onChange(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      fire: () => {
        for (const l of listeners) l();
      },
      get listenerCount() {
        return listeners.size;
      },
    } as HostApi & { fire(): void; listenerCount: number };
  }

  it('subscribes to the answering host only while someone listens, moves on a switch, and isolates a throwing listener', async () => {
    const asked: string[] = [];
    const a = named('a', asked) as ReturnType<typeof named> & { listenerCount: number };
    const b = named('b', asked) as ReturnType<typeof named> & { listenerCount: number };
    const ctx = createServerContext({ logLevel: 'silent' });
    closers.push(() => ctx.router.close());
    const host = switchingHost(a, ctx.logger);
    expect(a.listenerCount).toBe(0);
    let heard = 0;
    host.onChange(() => {
      throw new Error('boom');
    });
    const off = host.onChange(() => (heard += 1));
    expect(a.listenerCount).toBe(1);
    a.fire();
    expect(heard).toBe(1);
    expect(await host.callPath({ clientId: 'x', method: 'GET', path: '/p' })).toEqual({ ok: true, data: 'a' });

    host.use(b);
    expect(heard).toBe(2);
    expect([a.listenerCount, b.listenerCount]).toEqual([0, 1]);
    a.fire();
    expect(heard).toBe(2);
    b.fire();
    expect(heard).toBe(3);
    await host.listClients();
    await host.listPaths();
    await expect(host.callPaths({ method: 'GET', path: '/p' })).rejects.toBeInstanceOf(MdpError);
    expect(asked).toEqual(['a.callPath', 'b.listClients', 'b.listPaths', 'b.callPaths']);
    off();
    off();
    expect(b.listenerCount).toBe(1);
  });

  it('without listeners it only answers: a switch subscribes nothing', () => {
    const ctx = createServerContext({ logLevel: 'silent' });
    closers.push(() => ctx.router.close());
    const local = createLocalHost(ctx.router);
    const host = switchingHost(local, ctx.logger);
    const b = named('b', []) as ReturnType<typeof named> & { listenerCount: number };
    host.use(b);
    expect(b.listenerCount).toBe(0);
  });
});
