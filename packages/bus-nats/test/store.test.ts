/**
 * When a bucket watch's snapshot is in (`SnapshotSync`, by hand), and `Bucket.watch` on a real
 * nats-server while writes replace keys under its new consumer. The server's `pending` count of
 * each delivery is then wrong either way: above 0 after the last entry (a node stayed not ready
 * after NATS came back until the next write, found by the fleet's seeded fault test) or 0 long
 * before it (the directory took what it had not yet seen again for gone).
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bucket, CREATE_ATTEMPTS, SnapshotSync, createOrBind, type WatchedEntry } from '../src/store.js';
import { NatsServer, natsServerAvailable, warnIfNoNatsServer } from './nats-server.js';

warnIfNoNatsServer('store.test');

describe('createOrBind', () => {
  const raced = (message: string) => {
    let refusals = 2;
    const attempts: number[] = [];
    const create = async () => {
      attempts.push(attempts.length + 1);
      if (refusals-- > 0) throw new Error(message);
      return 'bucket';
    };
    return { create, attempts };
  };
  const pauses: number[] = [];
  const pause = async (ms: number) => void pauses.push(ms);

  it.each(['subjects overlap with an existing stream', 'stream name already in use'])('asks again when the add lost a race (%s)', async (message) => {
    pauses.length = 0;
    const { create, attempts } = raced(message);
    expect(await createOrBind(create, pause)).toBe('bucket');
    expect(attempts).toEqual([1, 2, 3]);
    expect(pauses).toEqual([100, 200]);
  });

  it('gives any other error at once, and a race that never ends after its attempts', async () => {
    pauses.length = 0;
    await expect(createOrBind(() => Promise.reject(new Error('insufficient resources')), pause)).rejects.toThrow('insufficient resources');
    expect(pauses).toEqual([]);
    let calls = 0;
    const always = () => {
      calls++;
      return Promise.reject(new Error('subjects overlap with an existing stream'));
    };
    await expect(createOrBind(always, pause)).rejects.toThrow('subjects overlap');
    expect(calls).toBe(CREATE_ATTEMPTS);
  });
});

describe('SnapshotSync', () => {
  it('is in at once when the consumer starts with nothing pending', () => {
    const sync = new SnapshotSync();
    expect(sync.created(0)).toEqual({ type: 'synced' });
    expect(sync.delivered(5)).toEqual({ type: 'none' });
  });

  it('is in when the stream ends at a sequence delivered before the question', () => {
    const sync = new SnapshotSync();
    expect(sync.created(5)).toEqual({ type: 'check', upTo: 0 });
    // Deliveries while the first question is out: asked again once it is answered.
    expect(sync.delivered(9)).toEqual({ type: 'none' });
    expect(sync.delivered(10)).toEqual({ type: 'none' });
    expect(sync.checked(0, { messages: 5, lastSeq: 11 })).toEqual({ type: 'check', upTo: 10 });
    expect(sync.delivered(11)).toEqual({ type: 'none' });
    // Sent after 10: the stream's 11 was not delivered when it was asked.
    expect(sync.checked(10, { messages: 5, lastSeq: 11 })).toEqual({ type: 'check', upTo: 11 });
    expect(sync.checked(11, { messages: 5, lastSeq: 11 })).toEqual({ type: 'synced' });
    // Nothing more once in.
    expect(sync.delivered(12)).toEqual({ type: 'none' });
    expect(sync.checked(11, { messages: 5, lastSeq: 12 })).toEqual({ type: 'none' });
  });

  it('waits for the next delivery when the stream has more than was delivered and nothing came since', () => {
    const sync = new SnapshotSync();
    sync.created(3);
    expect(sync.checked(0, { messages: 3, lastSeq: 3 })).toEqual({ type: 'none' });
    expect(sync.delivered(2)).toEqual({ type: 'check', upTo: 2 });
    expect(sync.checked(2, { messages: 3, lastSeq: 3 })).toEqual({ type: 'none' });
    expect(sync.delivered(3)).toEqual({ type: 'check', upTo: 3 });
    expect(sync.checked(3, { messages: 3, lastSeq: 3 })).toEqual({ type: 'synced' });
  });

  it('is in when the stream is empty (everything expired before it was delivered)', () => {
    const sync = new SnapshotSync();
    sync.created(2);
    expect(sync.checked(0, { messages: 0, lastSeq: 40 })).toEqual({ type: 'synced' });
  });

  it('a failed question is asked again, three times, then on the next delivery', () => {
    const sync = new SnapshotSync();
    sync.created(2);
    for (let i = 0; i < 3; i++) expect(sync.checked(0, undefined)).toEqual({ type: 'check', upTo: 0 });
    expect(sync.checked(0, undefined)).toEqual({ type: 'none' });
    expect(sync.delivered(6)).toEqual({ type: 'check', upTo: 6 });
    expect(sync.checked(6, undefined)).toEqual({ type: 'check', upTo: 6 });
    expect(sync.checked(6, { messages: 2, lastSeq: 6 })).toEqual({ type: 'synced' });
  });

  it('a higher sequence delivered before an older one again (an ordered consumer reset) counts', () => {
    const sync = new SnapshotSync();
    sync.created(2);
    expect(sync.checked(0, { messages: 2, lastSeq: 6 })).toEqual({ type: 'none' });
    expect(sync.delivered(6)).toEqual({ type: 'check', upTo: 6 });
    // A redelivery of an older entry (an ordered consumer reset) does not lower what was delivered.
    expect(sync.delivered(5)).toEqual({ type: 'none' });
    expect(sync.checked(6, { messages: 2, lastSeq: 6 })).toEqual({ type: 'synced' });
  });
});

/** `promise`, or a rejection naming `what` after `ms`: a bound, not a wait. */
async function within<T>(promise: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what())), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(!natsServerAvailable())('Bucket.watch on a real nats-server', () => {
  let server: NatsServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await NatsServer.start();
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.dispose();
  });

  /**
   * The connection, except that the first subscription to a watch's deliver subject first
   * publishes `writes` (on the same connection, so the server stores them before the consumer
   * delivers anything): keys replaced between the consumer's creation and their delivery.
   */
  function racing(writes: () => void): NatsConnection {
    let armed = true;
    return new Proxy(nc, {
      get(target, prop) {
        if (prop === 'subscribe') {
          return (subject: string, options?: Parameters<NatsConnection['subscribe']>[1]) => {
            if (armed && subject.startsWith('_RACE.w.')) {
              armed = false;
              writes();
            }
            return target.subscribe(subject, options);
          };
        }
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  it('says its snapshot is in, with every key, when writes replace keys under its new consumer', { timeout: 60_000 }, async () => {
    // The server miscounts only in some interleavings (about one in four here): several buckets.
    for (let round = 0; round < 12; round++) {
      const name = `race${round}`;
      const keys = ['c.k0', 'c.k1', 'c.k2', 'c.k3', 'c.k4'];
      const conn = racing(() => {
        for (const value of ['v1', 'v2']) for (const key of ['c.k0', 'c.k2', 'c.k4']) nc.publish(`$KV.${name}.${key}`, value);
      });
      const bucket = await Bucket.open(conn, { name, maxAgeMs: 3_600_000, replicas: 1, maxValueBytes: 4096 }, '_RACE');
      for (const key of keys) await bucket.put(key, 'v0');
      const seen = new Map<string, WatchedEntry>();
      let keysWhenIn: string[] | undefined;
      let isIn: () => void = () => undefined;
      const snapshotIn = new Promise<void>((resolve) => (isIn = resolve));
      const watch = await bucket.watch(
        (entry) => seen.set(entry.key, entry),
        () => {
          keysWhenIn = [...seen.keys()].sort();
          isIn();
        },
        () => undefined,
      );
      try {
        await within(snapshotIn, 5000, () => `round ${round}: the snapshot was never in; delivered ${[...seen.values()].map((e) => e.revision).join(',')}`);
      } finally {
        watch.stop();
      }
      // No key of the stream is missing from the view when it says it is in (the directory would drop it).
      expect(keysWhenIn).toEqual(keys);
    }
  });

  it('opens one bucket from many nodes at once: the losers of the creation bind to it', { timeout: 60_000 }, async () => {
    // Nodes of a fleet started together each find no bucket and create it; nats-server refuses
    // all but one (2.9: "subjects overlap with an existing stream"), found by the fault test.
    const connections = await Promise.all(Array.from({ length: 6 }, () => connect({ servers: server.url })));
    try {
      for (let round = 0; round < 4; round++) {
        const config = { name: `together${round}`, maxAgeMs: 5000, replicas: 1, maxValueBytes: 4096 };
        const buckets = await Promise.all(connections.map((conn, i) => Bucket.open(conn, config, `_T${i}`)));
        expect(buckets.map((b) => b.maxAgeMs)).toEqual(connections.map(() => 5000));
      }
    } finally {
      await Promise.all(connections.map((conn) => conn.close()));
    }
  });
});
