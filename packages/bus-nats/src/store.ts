/**
 * The directory's two JetStream KV buckets: creating or binding them, writing with
 * compare-and-set, and watching them from a snapshot.
 *
 * Works on nats-server 2.9: a bucket's `max_age` (2.2+) expires old values, compare-and-set is the
 * `Nats-Expected-Last-Subject-Sequence` header (2.3+), and the watch is an ordered push consumer
 * with one `filter_subject` and `deliver_policy: last_per_subject` (2.7+). Per-key TTLs and
 * delete markers for expired keys need 2.11, and several filter subjects 2.10: none is used.
 * Because an expired key tells no watcher, liveness never rests on a key expiring: it rests on
 * heartbeats that each node times itself (directory.ts).
 */
import { DeliverPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { nuid, type NatsConnection } from '@nats-io/transport-node';
import type { KeyState } from './directory.js';
import { decodeAnnouncement } from './records.js';

/** JetStream's "wrong last sequence" API errors: a compare-and-set lost. */
const WRONG_LAST_SEQUENCE = new Set<number>([JetStreamApiCodes.StreamWrongLastSequence, JetStreamApiCodes.StreamWrongLastSequenceUnknown]);

export function isConflict(error: unknown): boolean {
  return error instanceof JetStreamApiError && WRONG_LAST_SEQUENCE.has(error.code);
}

export interface BucketConfig {
  readonly name: string;
  /** max_age of the bucket, ms. */
  readonly maxAgeMs: number;
  readonly replicas: number;
  /** Largest value, bytes. */
  readonly maxValueBytes: number;
}

/** One entry as the watch delivers it. */
export interface WatchedEntry {
  readonly key: string;
  readonly operation: 'PUT' | 'DEL' | 'PURGE';
  readonly value: Uint8Array;
  readonly revision: number;
}

export interface Watch {
  stop(): void;
}

const decoder = new TextDecoder();

export class Bucket {
  private constructor(
    readonly name: string,
    private readonly kv: KV,
    private readonly js: JetStreamClient,
    /** The bucket's max_age as the server has it (another node may have created it), ms. */
    readonly maxAgeMs: number,
    private readonly deliverPrefix: string,
  ) {}

  /** Create the bucket or bind to the one that exists (its settings win; `maxAgeMs` tells them). */
  static async open(nc: NatsConnection, config: BucketConfig, inboxPrefix: string): Promise<Bucket> {
    const js = jetstream(nc, { timeout: 5000 });
    const kv = await new Kvm(js).create(config.name, {
      history: 1,
      ttl: config.maxAgeMs,
      replicas: config.replicas,
      maxValueSize: config.maxValueBytes,
      description: 'MDP fleet directory (@mdp/bus-nats)',
    });
    const status = await kv.status();
    return new Bucket(config.name, kv, js, status.ttl, `${inboxPrefix}.w`);
  }

  /** Write `value` under `key`; with `expect`, only if the key is at that revision (0: never written). */
  put(key: string, value: string, expect?: number): Promise<number> {
    return this.kv.put(key, value, expect === undefined ? {} : { previousSeq: expect });
  }

  /** Delete `key` only if it is at revision `expect`. */
  async delete(key: string, expect: number): Promise<void> {
    await this.kv.delete(key, { previousSeq: expect });
  }

  /** What a client key holds now (after a compare-and-set lost). */
  async clientKeyState(key: string): Promise<KeyState> {
    const entry = await this.kv.get(key);
    if (!entry) return { kind: 'absent', revision: 0 };
    if (entry.operation !== 'PUT') return { kind: 'absent', revision: entry.revision };
    const announcement = decodeAnnouncement(key, decoder.decode(entry.value));
    if (!announcement) return { kind: 'absent', revision: entry.revision };
    return { kind: 'put', revision: entry.revision, node: announcement.node, incarnation: announcement.incarnation };
  }

  /**
   * Deliver the last value of every key, then every change, to `onEntry`; `onSynced` once the
   * snapshot is in (at once for an empty bucket). `onEnd` when the watch ends by itself.
   */
  async watch(onEntry: (entry: WatchedEntry) => void, onSynced: () => void, onEnd: (error: unknown) => void): Promise<Watch> {
    const prefix = `$KV.${this.name}.`;
    const consumer = await this.js.consumers.getPushConsumer(`KV_${this.name}`, {
      filter_subjects: `${prefix}>`,
      deliver_policy: DeliverPolicy.LastPerSubject,
      // Under this node's inbox prefix, which its NATS permissions let it subscribe to.
      // One per watch: a deliver subject someone already listens on makes the consumer "bound".
      deliver_prefix: `${this.deliverPrefix}.${nuid.next()}`,
    });
    const info = await consumer.info(true);
    let synced = false;
    const sync = (): void => {
      if (synced) return;
      synced = true;
      onSynced();
    };
    if (info.num_pending === 0) sync();
    const messages = await consumer.consume({
      callback: (m: JsMsg) => {
        const operation = (m.headers?.get('KV-Operation') || 'PUT') as WatchedEntry['operation'];
        onEntry({ key: m.subject.slice(prefix.length), operation, value: m.data, revision: m.seq });
        if (m.info.pending === 0) sync();
      },
    });
    let stopped = false;
    void messages.closed().then(
      (result) => {
        if (!stopped) onEnd(result instanceof Error ? result : undefined);
      },
      (error: unknown) => {
        if (!stopped) onEnd(error);
      },
    );
    return {
      stop: () => {
        stopped = true;
        void Promise.resolve(messages.stop()).catch(() => undefined);
      },
    };
  }
}
