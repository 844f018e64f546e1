/**
 * The directory state machine alone: no NATS, time passed in by hand. The last suite runs whole
 * fleets against a model of the two KV buckets (compare-and-set, stream order, snapshots, max_age
 * on heartbeats) with seeded random delays, crashes and disconnections.
 */
import { describe, expect, it } from 'vitest';
import {
  Directory,
  directoryConfig,
  heartbeatFor,
  silenceLimitFor,
  type Announcement,
  type DirectoryConfig,
  type DirectoryEffect,
  type LocalAnnouncement,
} from '../src/directory.js';

const TTL = 1000;
/** How long a node of TTL may stay silent before the others take it for dead: TTL − heartbeat/2. */
const SILENCE = silenceLimitFor(TTL);

function config(node: string, overrides: Partial<DirectoryConfig> = {}): DirectoryConfig {
  return directoryConfig(node, `${node}-inc1`, { ttlMs: TTL, refreshMs: 60_000, ...overrides });
}

function local(clientId: string): LocalAnnouncement {
  return { clientId, principal: undefined, digest: 'd', registeredAt: 0, transport: 'websocket', secure: false, authSource: 'none' };
}

function remote(clientId: string, node: string, incarnation = `${node}-inc1`): Announcement {
  return { ...local(clientId), node, incarnation };
}

function of<T extends DirectoryEffect['type']>(effects: readonly DirectoryEffect[], type: T): Extract<DirectoryEffect, { type: T }>[] {
  return effects.filter((e): e is Extract<DirectoryEffect, { type: T }> => e.type === type);
}

/** A directory for `node`, connected and synced at time 0, that has seen `peers` beat at time 0. */
function connected(node = 'a', peers: string[] = [], overrides: Partial<DirectoryConfig> = {}): Directory {
  const d = new Directory(config(node, overrides));
  d.step({ type: 'connected' }, 0);
  let revision = 1;
  for (const peer of peers) d.step({ type: 'nodePut', beat: { node: peer, incarnation: `${peer}-inc1`, ttlMs: TTL }, revision: revision++ }, 0);
  d.step({ type: 'synced' }, 0);
  return d;
}

describe('directory: announcing this node\u2019s clients', () => {
  it('beats at once on connect, then every heartbeat period', () => {
    const d = new Directory(config('a'));
    expect(of(d.step({ type: 'connected' }, 0), 'beat')).toHaveLength(1);
    expect(d.wakeAt()).toBe(config('a').heartbeatMs);
    expect(of(d.step({ type: 'tick' }, config('a').heartbeatMs - 1), 'beat')).toHaveLength(0);
    expect(of(d.step({ type: 'tick' }, config('a').heartbeatMs), 'beat')).toHaveLength(1);
  });

  it('a registration is written without condition (newest wins), a refresh only on top of our own revision', () => {
    const d = connected();
    const [put] = of(d.step({ type: 'register', announcement: local('c1') }, 10), 'put');
    expect(put).toMatchObject({ announcement: { clientId: 'c1', node: 'a', incarnation: 'a-inc1' }, expect: undefined });
    d.step({ type: 'writeDone', clientId: 'c1', revision: 7 }, 20);
    // Refreshed refreshMs after the write was acknowledged.
    expect(d.wakeAt()).toBeLessThanOrEqual(20 + 60_000);
    expect(of(d.step({ type: 'tick' }, 20 + 60_000 - 1), 'put')).toHaveLength(0);
    const refresh = of(d.step({ type: 'tick' }, 20 + 60_000), 'put');
    expect(refresh).toEqual([expect.objectContaining({ expect: 7 })]);
  });

  it('a catalog change while a write is in flight is written after it, on top of it', () => {
    const d = connected();
    d.step({ type: 'register', announcement: local('c1') }, 0);
    expect(of(d.step({ type: 'register', announcement: { ...local('c1'), digest: 'd2' } }, 1), 'put')).toHaveLength(0);
    const [again] = of(d.step({ type: 'writeDone', clientId: 'c1', revision: 3 }, 2), 'put');
    expect(again).toMatchObject({ announcement: { digest: 'd2' }, expect: 3 });
  });

  it('a withdrawal deletes the key only if it is still ours', () => {
    const d = connected();
    d.step({ type: 'register', announcement: local('c1') }, 0);
    d.step({ type: 'writeDone', clientId: 'c1', revision: 4 }, 1);
    expect(of(d.step({ type: 'unregister', clientId: 'c1' }, 2), 'delete')).toEqual([{ type: 'delete', clientId: 'c1', expect: 4, janitor: false }]);
  });

  it('a withdrawal during the first write deletes what that write made', () => {
    const d = connected();
    d.step({ type: 'register', announcement: local('c1') }, 0);
    expect(of(d.step({ type: 'unregister', clientId: 'c1' }, 1), 'delete')).toHaveLength(0);
    expect(of(d.step({ type: 'writeDone', clientId: 'c1', revision: 9 }, 2), 'delete')).toEqual([expect.objectContaining({ clientId: 'c1', expect: 9 })]);
  });

  it('a key naming this node for a client it does not hold is deleted (failed withdrawal, previous incarnation)', () => {
    const d = connected();
    expect(of(d.step({ type: 'clientPut', announcement: remote('ghost', 'a', 'a-inc0'), revision: 5 }, 0), 'delete')).toEqual([
      expect.objectContaining({ clientId: 'ghost', expect: 5 }),
    ]);
  });

  it('our key deleted under us is written again on top of the delete', () => {
    const d = connected();
    d.step({ type: 'register', announcement: local('c1') }, 0);
    d.step({ type: 'writeDone', clientId: 'c1', revision: 4 }, 1);
    const puts = of(d.step({ type: 'clientDeleted', key: 'c1', revision: 8 }, 2), 'put');
    expect(puts).toEqual([expect.objectContaining({ expect: 8 })]);
  });

  it('our key deleted while our write was in flight is written again once the write ends, on top of the delete', () => {
    // A node paused right after sending its write: the watch shows the write (1) and the janitor's
    // delete (3) before the write's acknowledgement.
    const d = connected('b', ['a']);
    d.step({ type: 'register', announcement: local('c1') }, 0);
    d.step({ type: 'clientPut', announcement: remote('c1', 'b', 'b-inc1'), revision: 1 }, 1);
    expect(of(d.step({ type: 'clientDeleted', key: 'c1', revision: 3 }, 2), 'put')).toEqual([]);
    expect(of(d.step({ type: 'writeDone', clientId: 'c1', revision: 1 }, 3), 'put')).toEqual([expect.objectContaining({ expect: 3 })]);
    // A delete older than the write we heard about changes nothing.
    d.step({ type: 'register', announcement: local('c2') }, 4);
    d.step({ type: 'clientDeleted', key: 'c2', revision: 5 }, 5);
    expect(of(d.step({ type: 'writeDone', clientId: 'c2', revision: 6 }, 6), 'put')).toEqual([]);
  });

  it('our heartbeat key deleted (we were taken for dead) makes us write everything again', () => {
    const d = connected();
    d.step({ type: 'nodePut', beat: { node: 'a', incarnation: 'a-inc1', ttlMs: TTL }, revision: 1 }, 0);
    d.step({ type: 'register', announcement: local('c1') }, 0);
    d.step({ type: 'writeDone', clientId: 'c1', revision: 4 }, 1);
    const effects = d.step({ type: 'nodeDeleted', node: 'a', revision: 9 }, 2);
    expect(of(effects, 'beat')).toHaveLength(1);
    expect(of(effects, 'put')).toEqual([expect.objectContaining({ expect: 4 })]);
  });

  it('a failed write is tried again after retryMs; on reconnect every key is written again', () => {
    const d = connected();
    d.step({ type: 'register', announcement: local('c1') }, 0);
    d.step({ type: 'writeFailed', clientId: 'c1' }, 5);
    expect(d.wakeAt()).toBeLessThanOrEqual(5 + config('a').retryMs);
    expect(of(d.step({ type: 'tick' }, 5 + config('a').retryMs - 1), 'put')).toHaveLength(0);
    expect(of(d.step({ type: 'tick' }, 5 + config('a').retryMs), 'put')).toHaveLength(1);
    d.step({ type: 'writeDone', clientId: 'c1', revision: 2 }, 1010);
    d.step({ type: 'disconnected' }, 1100);
    expect(d.ready).toBe(false);
    expect(of(d.step({ type: 'connected' }, 1200), 'put')).toEqual([expect.objectContaining({ expect: 2 })]);
  });
});

describe('directory: writes that keep failing', () => {
  it('are tried again after doubling waits, up to MAX_RETRY_MS, and from scratch once one succeeds', () => {
    const d = connected('a', [], { retryMs: 1000, heartbeatMs: 1e9 });
    d.step({ type: 'register', announcement: local('c1') }, 0);
    let now = 0;
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      d.step({ type: 'writeFailed', clientId: 'c1' }, now);
      const at = d.wakeAt() as number;
      waits.push(at - now);
      now = at;
      expect(of(d.step({ type: 'tick' }, now), 'put')).toHaveLength(1);
    }
    expect(waits).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    d.step({ type: 'writeDone', clientId: 'c1', revision: 3 }, now);
    d.step({ type: 'tick' }, now + 60_000);
    d.step({ type: 'writeFailed', clientId: 'c1' }, now + 60_000);
    expect(d.wakeAt()).toBe(now + 61_000);
  });
});

describe('directory: the same id on two nodes (SPEC §4, fleet-wide)', () => {
  it('a newer write by another node replaces ours', () => {
    const d = connected('a', ['b']);
    d.step({ type: 'register', announcement: local('dup') }, 0);
    d.step({ type: 'writeDone', clientId: 'dup', revision: 5 }, 1);
    const effects = d.step({ type: 'clientPut', announcement: remote('dup', 'b'), revision: 6 }, 2);
    expect(of(effects, 'replaced')).toEqual([{ type: 'replaced', clientId: 'dup', byNode: 'b' }]);
    expect(d.isLocal('dup')).toBe(false);
    expect(d.resolve('dup')?.node).toBe('b');
  });

  it('an older write by another node, seen before our acknowledgement, does not', () => {
    const d = connected('a', ['b']);
    d.step({ type: 'register', announcement: local('dup') }, 0);
    expect(of(d.step({ type: 'clientPut', announcement: remote('dup', 'b'), revision: 5 }, 1), 'replaced')).toHaveLength(0);
    expect(of(d.step({ type: 'writeDone', clientId: 'dup', revision: 6 }, 2), 'replaced')).toHaveLength(0);
    expect(d.isLocal('dup')).toBe(true);
  });

  it('a newer write by another node, seen before our acknowledgement, does', () => {
    const d = connected('a', ['b']);
    d.step({ type: 'register', announcement: local('dup') }, 0);
    d.step({ type: 'clientPut', announcement: remote('dup', 'b'), revision: 7 }, 1);
    expect(of(d.step({ type: 'writeDone', clientId: 'dup', revision: 6 }, 2), 'replaced')).toEqual([expect.objectContaining({ byNode: 'b' })]);
  });

  it('a refresh that loses its compare-and-set to another holder means we were replaced', () => {
    const d = connected('a', ['b']);
    d.step({ type: 'register', announcement: local('dup') }, 0);
    d.step({ type: 'writeDone', clientId: 'dup', revision: 5 }, 1);
    d.step({ type: 'tick' }, 60_001);
    const effects = d.step({ type: 'writeFailed', clientId: 'dup', conflict: { kind: 'put', revision: 8, node: 'b', incarnation: 'b-inc1' } }, 60_002);
    expect(of(effects, 'replaced')).toHaveLength(1);
  });

  it('a compare-and-set lost to a delete or to our own unacknowledged write is written on top', () => {
    const d = connected('a');
    d.step({ type: 'register', announcement: local('c1') }, 0);
    expect(of(d.step({ type: 'writeFailed', clientId: 'c1', conflict: { kind: 'absent', revision: 3 } }, 1), 'put')).toEqual([
      expect.objectContaining({ expect: 3 }),
    ]);
    expect(of(d.step({ type: 'writeFailed', clientId: 'c1', conflict: { kind: 'put', revision: 4, node: 'a', incarnation: 'a-inc1' } }, 2), 'put')).toEqual([
      expect.objectContaining({ expect: 4 }),
    ]);
  });
});

describe('directory: other nodes', () => {
  it('sees a client once its node beats, in the node\u2019s incarnation only', () => {
    const d = connected('a');
    d.step({ type: 'clientPut', announcement: remote('c1', 'b'), revision: 1 }, 0);
    expect(d.resolve('c1')).toBeUndefined();
    const effects = d.step({ type: 'nodePut', beat: { node: 'b', incarnation: 'b-inc1', ttlMs: TTL }, revision: 1 }, 0);
    expect(of(effects, 'nodeChange')).toEqual([{ type: 'nodeChange', kind: 'added', node: 'b', clientIds: ['c1'] }]);
    expect(d.resolve('c1')?.node).toBe('b');
    // b restarts: its old incarnation's clients go at once.
    const restart = d.step({ type: 'nodePut', beat: { node: 'b', incarnation: 'b-inc2', ttlMs: TTL }, revision: 2 }, 10);
    expect(of(restart, 'nodeChange')).toEqual([{ type: 'nodeChange', kind: 'removed', node: 'b', clientIds: ['c1'] }]);
    expect(of(restart, 'change')).toEqual([]);
    expect(of(restart, 'nodeDown')).toHaveLength(1);
    expect(d.resolve('c1')).toBeUndefined();
  });

  it('a node not heard from for its TTL less half a heartbeat is gone with its clients, not a moment before', () => {
    const d = connected('a', ['b']);
    d.step({ type: 'clientPut', announcement: remote('c1', 'b'), revision: 2 }, 0);
    d.step({ type: 'nodePut', beat: { node: 'b', incarnation: 'b-inc1', ttlMs: TTL }, revision: 3 }, 400);
    expect(d.wakeAt()).toBeLessThanOrEqual(400 + SILENCE);
    expect(of(d.step({ type: 'tick' }, 400 + SILENCE - 1), 'nodeDown')).toHaveLength(0);
    expect(d.resolve('c1')).toBeDefined();
    const effects = d.step({ type: 'tick' }, 400 + SILENCE);
    expect(of(effects, 'nodeDown')).toEqual([{ type: 'nodeDown', node: 'b' }]);
    expect(of(effects, 'nodeChange')).toEqual([{ type: 'nodeChange', kind: 'removed', node: 'b', clientIds: ['c1'] }]);
    expect(d.resolve('c1')).toBeUndefined();
  });

  it('the silence limit leaves half a heartbeat of the TTL for the removal, and tolerates two lost beats', () => {
    const heartbeat = heartbeatFor(TTL);
    expect(config('a').heartbeatMs).toBe(heartbeat);
    expect(heartbeat).toBe(TTL / 4);
    expect(SILENCE).toBe(TTL - heartbeat / 2);
    expect(silenceLimitFor(5000)).toBe(4375);
    // b beats at 0, its beats at 1 and 2 periods are lost, the third comes: never taken for dead.
    const d = connected('a', ['b']);
    d.step({ type: 'clientPut', announcement: remote('c1', 'b'), revision: 2 }, 0);
    for (let t = 0; t < 3 * heartbeat; t += 10) expect(of(d.step({ type: 'tick' }, t), 'nodeDown')).toEqual([]);
    const third = d.step({ type: 'nodePut', beat: { node: 'b', incarnation: 'b-inc1', ttlMs: TTL }, revision: 3 }, 3 * heartbeat);
    expect(of(third, 'nodeDown')).toEqual([]);
    expect(d.resolve('c1')).toBeDefined();
    // b dies just after a beat: every view has dropped it half a heartbeat before its TTL is out.
    const effects = d.step({ type: 'tick' }, 3 * heartbeat + TTL - heartbeat / 2);
    expect(of(effects, 'nodeDown')).toHaveLength(1);
    expect(d.resolve('c1')).toBeUndefined();
  });

  it('a dead node\u2019s clients leave the view as one effect naming them all, not one change each', () => {
    const d = connected('a', ['b', 'c']);
    let revision = 10;
    const ids = Array.from({ length: 500 }, (_, i) => `b-${i}`);
    for (const id of ids) d.step({ type: 'clientPut', announcement: remote(id, 'b'), revision: revision++ }, 0);
    d.step({ type: 'clientPut', announcement: remote('c-1', 'c'), revision: revision++ }, 0);
    // b's client of a previous incarnation is not in the view: it is not named again.
    d.step({ type: 'clientPut', announcement: remote('b-old', 'b', 'b-inc0'), revision: revision++ }, 0);
    d.step({ type: 'nodePut', beat: { node: 'c', incarnation: 'c-inc1', ttlMs: TTL }, revision: revision++ }, SILENCE - 1);
    const effects = d.step({ type: 'tick' }, SILENCE);
    expect(of(effects, 'change')).toEqual([]);
    const [removed, ...more] = of(effects, 'nodeChange');
    expect(more).toEqual([]);
    expect(removed).toMatchObject({ kind: 'removed', node: 'b' });
    expect([...(removed?.clientIds ?? [])].sort()).toEqual([...ids].sort());
    expect(of(effects, 'nodeDown')).toEqual([{ type: 'nodeDown', node: 'b' }]);
    expect([...d.remoteClients()].map((c) => c.clientId)).toEqual(['c-1']);
    // b comes back in the same incarnation: its clients come back as one effect too.
    const back = d.step({ type: 'nodePut', beat: { node: 'b', incarnation: 'b-inc1', ttlMs: TTL }, revision: revision++ }, SILENCE + 1);
    expect(of(back, 'change')).toEqual([]);
    expect(of(back, 'nodeChange')).toEqual([expect.objectContaining({ kind: 'added', node: 'b', clientIds: expect.arrayContaining(ids) })]);
    expect(of(back, 'nodeChange')[0]?.clientIds).toHaveLength(ids.length);
  });

  it('a node with no client in the view comes and goes without a change effect', () => {
    const d = connected('a', ['b']);
    expect(of(d.step({ type: 'tick' }, SILENCE), 'nodeChange')).toEqual([]);
  });

  it('every view entry has the same fields in the same order, whatever the announcement held', () => {
    const d = connected('a', ['b']);
    const { origin: _none, ...bare } = remote('c1', 'b');
    d.step({ type: 'clientPut', announcement: bare, revision: 2 }, 0);
    const reordered: Announcement = { origin: 'https://app.example', ...remote('c2', 'b'), authSource: 'transport' };
    d.step({ type: 'clientPut', announcement: reordered, revision: 3 }, 0);
    const one = d.resolve('c1');
    const two = d.resolve('c2');
    expect(one && Object.keys(one)).toEqual(two && Object.keys(two));
    expect(two).toMatchObject({ origin: 'https://app.example', authSource: 'transport', node: 'b', revision: 3 });
    expect(one?.origin).toBeUndefined();
  });

  it('the same beat delivered again (a new snapshot) does not extend a node\u2019s life', () => {
    const d = connected('a', ['b']);
    d.step({ type: 'nodePut', beat: { node: 'b', incarnation: 'b-inc1', ttlMs: TTL }, revision: 1 }, SILENCE - 100);
    expect(of(d.step({ type: 'tick' }, SILENCE), 'nodeDown')).toHaveLength(1);
  });

  it('a node whose heartbeat key is deleted has left: its clients go at once', () => {
    const d = connected('a', ['b']);
    d.step({ type: 'clientPut', announcement: remote('c1', 'b'), revision: 2 }, 0);
    const effects = d.step({ type: 'nodeDeleted', node: 'b', revision: 3 }, 1);
    expect(of(effects, 'nodeDown')).toHaveLength(1);
    expect(d.resolve('c1')).toBeUndefined();
  });

  it('announced TTLs are bounded: a peer cannot make its clients immortal', () => {
    const d = connected('a');
    d.step({ type: 'nodePut', beat: { node: 'b', incarnation: 'b-inc1', ttlMs: 1e12 }, revision: 1 }, 0);
    expect(d.wakeAt()).toBeLessThanOrEqual(60_000);
  });

  it('the live node with the smallest id deletes a dead node\u2019s client keys after janitorAfterMs; the others do not', () => {
    const janitor = connected('a', ['b', 'c']);
    const other = connected('c', ['a', 'b']);
    const at = TTL + config('a').janitorAfterMs;
    let revision = 10;
    for (const d of [janitor, other]) d.step({ type: 'clientPut', announcement: remote('x', 'b'), revision: 4 }, 0);
    // a and c go on beating, b stops.
    for (let t = 500; t < at; t += 500) {
      revision += 2;
      for (const d of [janitor, other]) {
        const effects = [
          ...d.step({ type: 'tick' }, t),
          ...d.step({ type: 'nodePut', beat: { node: 'a', incarnation: 'a-inc1', ttlMs: TTL }, revision }, t),
          ...d.step({ type: 'nodePut', beat: { node: 'c', incarnation: 'c-inc1', ttlMs: TTL }, revision: revision + 1 }, t),
        ];
        if (t === TTL) expect(of(effects, 'nodeDown')).toEqual([{ type: 'nodeDown', node: 'b' }]);
        expect(of(effects, 'delete')).toHaveLength(0);
      }
    }
    const swept = janitor.step({ type: 'tick' }, at);
    expect(of(swept, 'delete')).toEqual([{ type: 'delete', clientId: 'x', expect: 4, janitor: true }]);
    expect(of(swept, 'deleteNode')).toEqual([]); // its heartbeat key has expired by max_age
    expect(of(other.step({ type: 'tick' }, at), 'delete')).toHaveLength(0);
  });

  it('after a reconnect, entries the new snapshot no longer holds are dropped', () => {
    const d = connected('a', ['b']);
    d.step({ type: 'clientPut', announcement: remote('gone', 'b'), revision: 2 }, 0);
    d.step({ type: 'clientPut', announcement: remote('kept', 'b'), revision: 3 }, 0);
    d.step({ type: 'disconnected' }, 10);
    d.step({ type: 'connected' }, 20);
    d.step({ type: 'nodePut', beat: { node: 'b', incarnation: 'b-inc1', ttlMs: TTL }, revision: 9 }, 20);
    d.step({ type: 'clientPut', announcement: remote('kept', 'b'), revision: 3 }, 20);
    const effects = d.step({ type: 'synced' }, 21);
    expect(of(effects, 'change')).toEqual([{ type: 'change', kind: 'removed', clientId: 'gone' }]);
    expect(d.resolve('kept')?.node).toBe('b');
    expect(d.size).toBe(1);
  });

  it('leaving deletes our keys and our heartbeat, compare-and-set', () => {
    const d = connected('a');
    d.step({ type: 'nodePut', beat: { node: 'a', incarnation: 'a-inc1', ttlMs: TTL }, revision: 11 }, 0);
    d.step({ type: 'register', announcement: local('c1') }, 0);
    d.step({ type: 'writeDone', clientId: 'c1', revision: 12 }, 1);
    expect(d.leave()).toEqual([
      { type: 'delete', clientId: 'c1', expect: 12, janitor: false },
      { type: 'deleteNode', node: 'a', expect: 11 },
    ]);
    expect(d.wakeAt()).toBeUndefined();
  });
});

// ------------------------------------------------------------------------------------------------
// Whole fleets against a model of the buckets.

function mulberry32(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Msg {
  readonly key: string;
  readonly op: 'PUT' | 'DEL';
  readonly value: unknown;
  readonly revision: number;
  readonly at: number;
}

/** A KV bucket as JetStream keeps it: one stream, last value per key, compare-and-set on it, max_age. */
class ModelBucket {
  readonly stream: Msg[] = [];
  private readonly last = new Map<string, Msg>();
  constructor(private readonly maxAgeMs: number) {}
  write(key: string, op: 'PUT' | 'DEL', value: unknown, expect: number | undefined, at: number): number | { conflict: Msg | undefined } {
    const current = this.live(key, at);
    if (expect !== undefined && (current?.revision ?? 0) !== expect) return { conflict: current };
    const msg: Msg = { key, op, value, revision: this.stream.length + 1, at };
    this.stream.push(msg);
    this.last.set(key, msg);
    return msg.revision;
  }
  live(key: string, at: number): Msg | undefined {
    const msg = this.last.get(key);
    return msg && at - msg.at < this.maxAgeMs ? msg : undefined;
  }
  snapshot(at: number): Msg[] {
    return [...this.last.values()].filter((m) => at - m.at < this.maxAgeMs).sort((x, y) => x.revision - y.revision);
  }
}

interface SimNode {
  readonly id: string;
  readonly dir: Directory;
  alive: boolean;
  connected: boolean;
  /** What core holds: the clients registered here and not replaced or withdrawn. */
  readonly holds: Set<string>;
  /** Per bucket: stream index from which live messages are delivered; -1 while disconnected. */
  cursor: { nodes: number; clients: number };
  deliverAfter: number;
  lastBeatLanded: number;
  /** Bumped when the connection drops: results and deliveries of an older connection are void. */
  conn: number;
  wakeAt: number | undefined;
}

function runFleet(seed: number): void {
  const random = mulberry32(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const lag = (): number => 1 + Math.floor(random() * 30);
  const nodesBucket = new ModelBucket(TTL);
  const clientsBucket = new ModelBucket(3_600_000);
  let now = 0;
  const queue: { at: number; seq: number; run: () => void }[] = [];
  let seq = 0;
  const later = (delay: number, run: () => void): void => {
    queue.push({ at: now + delay, seq: seq++, run });
  };
  const ids = ['x', 'y', 'z', 'w'];
  const sims: SimNode[] = ['n1', 'n2', 'n3', 'n4'].map((id) => ({
    id,
    dir: new Directory(directoryConfig(id, `${id}-1`, { ttlMs: TTL, refreshMs: 5000, retryMs: 200 })),
    alive: true,
    connected: false,
    holds: new Set<string>(),
    cursor: { nodes: -1, clients: -1 },
    deliverAfter: 0,
    lastBeatLanded: 0,
    conn: 0,
    wakeAt: undefined,
  }));

  const step = (sim: SimNode, event: Parameters<Directory['step']>[0]): void => {
    if (!sim.alive) return;
    for (const effect of sim.dir.step(event, now)) apply(sim, effect);
    // One timer per node, as the driver keeps: re-armed only when the wake time changes.
    const wake = sim.dir.wakeAt();
    if (wake === sim.wakeAt) return;
    sim.wakeAt = wake;
    if (wake === undefined) return;
    later(Math.max(0, wake - now), () => {
      if (sim.wakeAt !== wake) return;
      sim.wakeAt = undefined;
      step(sim, { type: 'tick' });
    });
  };

  /** Deliver one stream message to `sim` after the messages before it (a watch is in order). */
  const deliver = (sim: SimNode, bucket: 'nodes' | 'clients', msg: Msg, conn: number): void => {
    sim.deliverAfter = Math.max(sim.deliverAfter, now) + lag() / 10;
    queue.push({
      at: sim.deliverAfter,
      seq: seq++,
      run: () => {
        if (!sim.alive || sim.conn !== conn) return;
        if (bucket === 'nodes') {
          const beat = msg.value as { node: string; incarnation: string; ttlMs: number };
          step(sim, msg.op === 'PUT' ? { type: 'nodePut', beat, revision: msg.revision } : { type: 'nodeDeleted', node: msg.key, revision: msg.revision });
        } else {
          step(
            sim,
            msg.op === 'PUT'
              ? { type: 'clientPut', announcement: msg.value as Announcement, revision: msg.revision }
              : { type: 'clientDeleted', key: msg.key, revision: msg.revision },
          );
        }
      },
    });
  };

  const append = (bucket: 'nodes' | 'clients', msg: Msg): void => {
    for (const sim of sims) if (sim.alive && sim.connected && sim.cursor[bucket] >= 0) deliver(sim, bucket, msg, sim.conn);
  };

  const write = (
    sim: SimNode,
    bucket: 'nodes' | 'clients',
    key: string,
    op: 'PUT' | 'DEL',
    value: unknown,
    expect: number | undefined,
    done: (result: number | { conflict: Msg | undefined } | 'failed') => void,
  ): void => {
    const conn = sim.conn;
    later(lag(), () => {
      // A write in flight lands even if its node died meanwhile; its answer does not come back.
      if (!sim.connected && sim.alive) return done('failed');
      const model = bucket === 'nodes' ? nodesBucket : clientsBucket;
      const result = model.write(key, op, value, expect, now);
      if (typeof result === 'number') append(bucket, model.stream[result - 1] as Msg);
      later(lag(), () => {
        if (sim.alive && sim.conn === conn) done(result);
        else if (sim.alive) done('failed');
      });
    });
  };

  const apply = (sim: SimNode, effect: DirectoryEffect): void => {
    switch (effect.type) {
      case 'beat':
        write(sim, 'nodes', effect.beat.node, 'PUT', effect.beat, undefined, () => undefined);
        return;
      case 'put': {
        const clientId = effect.announcement.clientId;
        write(sim, 'clients', clientId, 'PUT', effect.announcement, effect.expect, (result) => {
          if (result === 'failed') step(sim, { type: 'writeFailed', clientId });
          else if (typeof result === 'number') step(sim, { type: 'writeDone', clientId, revision: result });
          else {
            const c = result.conflict;
            const value = c?.value as Announcement | undefined;
            step(sim, {
              type: 'writeFailed',
              clientId,
              conflict: !c
                ? { kind: 'absent', revision: 0 }
                : c.op === 'DEL'
                  ? { kind: 'absent', revision: c.revision }
                  : { kind: 'put', revision: c.revision, node: value?.node ?? '', incarnation: value?.incarnation ?? '' },
            });
          }
        });
        return;
      }
      case 'delete':
        write(sim, 'clients', effect.clientId, 'DEL', undefined, effect.expect, (result) =>
          step(sim, { type: typeof result === 'number' ? 'deleteDone' : 'deleteFailed', clientId: effect.clientId }),
        );
        return;
      case 'deleteNode':
        write(sim, 'nodes', effect.node, 'DEL', undefined, effect.expect, () => undefined);
        return;
      case 'replaced':
        sim.holds.delete(effect.clientId);
        return;
      default:
        return;
    }
  };

  const connect = (sim: SimNode): void => {
    sim.connected = true;
    sim.conn += 1;
    const conn = sim.conn;
    step(sim, { type: 'connected' });
    // Snapshot of both buckets, then live messages from where the snapshot was taken.
    for (const bucket of ['nodes', 'clients'] as const) {
      const model = bucket === 'nodes' ? nodesBucket : clientsBucket;
      for (const msg of model.snapshot(now)) deliver(sim, bucket, msg, conn);
      sim.cursor[bucket] = model.stream.length;
    }
    sim.deliverAfter += 0.01;
    queue.push({ at: sim.deliverAfter, seq: seq++, run: () => sim.conn === conn && sim.connected && step(sim, { type: 'synced' }) });
  };

  const disconnect = (sim: SimNode): void => {
    sim.connected = false;
    sim.conn += 1;
    sim.cursor = { nodes: -1, clients: -1 };
    step(sim, { type: 'disconnected' });
  };

  for (const sim of sims) connect(sim);
  const deaths = new Map<string, number>();
  const horizon = 30_000;
  let nextAction = 0;
  let turns = 0;
  while (queue.length > 0) {
    if (++turns > 200_000) throw new Error(`seed ${seed}: the simulation does not settle (queue ${queue.length}, now ${now})`);
    queue.sort((p, q) => p.at - q.at || p.seq - q.seq);
    const next = queue.shift() as (typeof queue)[number];
    if (next.at > horizon + 10 * TTL) break;
    if (now < horizon && nextAction <= next.at) {
      now = Math.max(now, nextAction);
      nextAction = now + 20 + random() * 200;
      const alive = sims.filter((s) => s.alive);
      const sim = pick(alive);
      const roll = random();
      if (roll < 0.45 && sim.connected) {
        const id = pick(ids);
        sim.holds.add(id);
        step(sim, { type: 'register', announcement: local(id) });
      } else if (roll < 0.75 && sim.holds.size > 0) {
        const id = pick([...sim.holds]);
        sim.holds.delete(id);
        step(sim, { type: 'unregister', clientId: id });
      } else if (roll < 0.8 && alive.length > 2) {
        sim.alive = false;
        deaths.set(sim.id, now);
      } else if (roll < 0.87 && sim.connected) {
        disconnect(sim);
        later(100 + random() * 2500, () => sim.alive && connect(sim));
      }
      queue.unshift(next);
      continue;
    }
    now = Math.max(now, next.at);
    next.run();
    // Safety at every moment: a node dead for its silence limit (plus the watch's delivery lag) is in no view.
    for (const [dead, at] of deaths) {
      if (now < at + SILENCE + 100) continue;
      for (const sim of sims) {
        if (!sim.alive) continue;
        for (const client of sim.dir.remoteClients()) {
          if (client.node === dead) throw new Error(`seed ${seed}: ${sim.id} lists ${client.clientId} on ${dead}, dead since ${at}, at ${now}`);
        }
      }
    }
  }

  // Settled: every connected live node agrees with what the live nodes hold.
  const live = sims.filter((s) => s.alive && s.connected && s.dir.ready);
  const holders = new Map<string, string[]>();
  for (const sim of sims.filter((s) => s.alive)) for (const id of sim.holds) holders.set(id, [...(holders.get(id) ?? []), sim.id]);
  for (const [id, where] of holders) expect(where, `seed ${seed}: ${id} held by ${where.join(', ')}`).toHaveLength(1);
  for (const sim of live) {
    for (const id of ids) {
      const holder = holders.get(id)?.[0];
      const seen = sim.dir.resolve(id)?.node;
      const expected = holder === sim.id || !sims.find((s) => s.id === holder)?.connected ? undefined : holder;
      if (holder === sim.id) expect(sim.dir.isLocal(id), `seed ${seed}: ${sim.id} forgot its own ${id}`).toBe(true);
      else expect(seen, `seed ${seed}: ${sim.id} resolves ${id}`).toBe(expected);
    }
  }
}

describe('directory: whole fleets on a model of the buckets (seeded)', () => {
  for (let seed = 1; seed <= 40; seed++) {
    it(`seed ${seed}: no dead node listed past its TTL; after settling, one holder per id and every view agrees`, () => {
      runFleet(seed);
    });
  }
});
