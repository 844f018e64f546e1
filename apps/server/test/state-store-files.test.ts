/**
 * The state store's files on disk (state-store/files.ts): written whole by rename, and, while the
 * server runs, made a slice at a time so that the event loop turns between two slices.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeScratch, scratchDir } from '@mdp/test-kit';
import type { ClientInfo } from '@mdp/core';
import { storeFiles, type StoreFacts } from '../src/state-store/documents.js';
import { SLICE_CHARS, writeStoreFiles, writeStoreFilesSync } from '../src/state-store/files.js';

afterEach(() => removeScratch());

/** Counts event-loop turns (setImmediate) until stopped. */
function loopTurns(): { readonly count: () => number; stop(): void } {
  let turns = 0;
  let ticking = true;
  const tick = (): void => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  return { count: () => turns, stop: () => (ticking = false) };
}

/** What storeFiles needs of a node with `clients` clients of `paths` paths, each path noting the loop turn it is read at. */
function facts(clients: number, paths: number, turn: () => number, readAt: number[]): StoreFacts {
  const list = Array.from({ length: clients }, (_, c) => {
    const descriptors = Array.from({ length: paths }, (_, p) => ({
      type: 'endpoint' as const,
      method: 'GET' as const,
      get path(): string {
        readAt.push(turn());
        return `/area-${c}/item-${p}`;
      },
      description: 'A path of a large catalog, described at some length.',
    }));
    return {
      id: `c${c}`,
      descriptor: { id: `c${c}`, name: `client ${c}`, paths: descriptors },
      paths: descriptors,
      registeredAt: 0,
      lastSeen: 0,
      transportKind: 'ws',
      secure: false,
      authSource: 'none',
    };
  }) as unknown as ClientInfo[];
  const urls = { http: 'http://127.0.0.1:1', ws: 'ws://127.0.0.1:1', httpLoop: '', auth: '', meta: '', cluster: '' };
  return {
    now: 0,
    generation: 1,
    status: 'running',
    server: { serverId: 's', clusterId: 'mdp', clusterMode: 'standalone', protocolVersion: '2.0.0', pid: 1, cwd: '/', storeDir: '/', startedAt: 0 },
    urls,
    secure: false,
    cluster: {} as StoreFacts['cluster'],
    upstreamProxy: undefined,
    mcp: false,
    clients: list,
  };
}

describe('state store files', () => {
  // Review finding: the routes of a full node (250,000 paths, tens of MB) were made in one go,
  // holding the event loop for most of a second at every write.
  it('makes the routes of a large catalog a slice at a time, the event loop turning between slices, and writes them whole', async () => {
    const dir = join(scratchDir('mdp-store-files-'), 'store');
    const readAt: number[] = [];
    const loop = loopTurns();
    const made = facts(4, 5000, loop.count, readAt);
    try {
      await writeStoreFiles(dir, storeFiles(made));
    } finally {
      loop.stop();
    }
    // 20,000 routes of about 200 characters: several slices, the loop turning between them (the
    // counts of snapshot.json read every path once more, in one go).
    expect(new Set(readAt).size).toBeGreaterThanOrEqual(8);
    const routes = readFileSync(join(dir, 'routes.json'), 'utf8');
    expect(routes.length).toBeGreaterThan(8 * SLICE_CHARS);
    const parsed = JSON.parse(routes) as Array<{ path: string }>;
    expect(parsed).toHaveLength(20_000);
    expect(parsed[19_999]?.path).toBe('/area-3/item-4999');
    expect(readdirSync(dir).sort()).toEqual(['clients.json', 'routes.json', 'services.json', 'snapshot.json']);
  });

  it('resolves with the time spent making the slices, by the clock it is given', async () => {
    const dir = join(scratchDir('mdp-store-files-'), 'store');
    let now = 0;
    const pieces = {
      *[Symbol.iterator]() {
        for (let i = 0; i < 3; i++) {
          now += 10;
          yield 'x'.repeat(SLICE_CHARS);
        }
      },
    };
    expect(
      await writeStoreFiles(
        dir,
        [
          ['a.json', pieces],
          ['b.json', ['{}\n']],
        ],
        () => now,
      ),
    ).toBe(30);
  });

  it('a failed write leaves no temporary file; the first write joins the pieces', async () => {
    const dir = join(scratchDir('mdp-store-files-'), 'store');
    const failing = {
      *[Symbol.iterator]() {
        yield 'partial';
        throw new Error('made wrong');
      },
    };
    await expect(writeStoreFiles(dir, [['a.json', failing]])).rejects.toThrow('made wrong');
    expect(readdirSync(dir)).toEqual([]);
    writeStoreFilesSync(dir, [['b.json', ['[', ']\n']]]);
    expect(readFileSync(join(dir, 'b.json'), 'utf8')).toBe('[]\n');
  });
});
