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
import { setTimeout as sleep } from 'node:timers/promises';
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

/** Attempts of {@link createOrBind} before its last error is the caller's. */
export const CREATE_ATTEMPTS = 5;

/**
 * `create` (nats.js: look the bucket's stream up, add it when not found), again while the server
 * refuses the add because the stream came into being meanwhile: another node created it between
 * the look-up and the add, or a restarted nats-server was still loading its streams when asked
 * (2.9 answers "subjects overlap with an existing stream", later ones "stream name already in
 * use"). The next look-up finds it and binds to it. Found by the fleet's fault test, where a node
 * started while NATS came back exited with that error.
 */
export async function createOrBind<T>(create: () => Promise<T>, pause: (ms: number) => Promise<unknown> = sleep): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await create();
    } catch (error) {
      const raced = error instanceof Error && /subjects overlap|already in use/i.test(error.message);
      if (!raced || attempt >= CREATE_ATTEMPTS) throw error;
      await pause(100 * attempt);
    }
  }
}

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
    const kv = await createOrBind(() =>
      new Kvm(js).create(config.name, {
        history: 1,
        ttl: config.maxAgeMs,
        replicas: config.replicas,
        maxValueSize: config.maxValueBytes,
        description: 'MDP fleet directory (@mdp/bus-nats)',
      }),
    );
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

  /** The bucket's stream now: how many messages it holds and the sequence of its last one. */
  async streamState(): Promise<StreamState> {
    const { state } = (await this.kv.status()).streamInfo;
    return { messages: state.messages, lastSeq: state.last_seq };
  }

  /**
   * Deliver the last value of every key, then every change, to `onEntry`; `onSynced` once the
   * snapshot is in (at once for an empty bucket). `onEnd` when the watch ends by itself.
   *
   * The snapshot is in once every message the stream holds has been delivered: the stream's last
   * sequence, asked after an entry came, is one delivered before it was asked (see
   * {@link SnapshotSync}). The `pending` count of each delivery cannot tell when writes replace
   * keys between the consumer's creation and their delivery (as every node rewrites its keys right
   * after NATS comes back): nats-server 2.9 then counts too many after the last entry (the node
   * stayed not ready until the next write) or none long before it (the directory took the keys and
   * nodes not yet delivered for gone).
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
    let stopped = false;
    const snapshot = new SnapshotSync();
    const act = (action: SnapshotAction): void => {
      if (stopped || action.type === 'none') return;
      if (action.type === 'synced') {
        onSynced();
        return;
      }
      const { upTo } = action;
      this.streamState().then(
        (state) => act(snapshot.checked(upTo, state)),
        () => act(snapshot.checked(upTo, undefined)),
      );
    };
    act(snapshot.created(info.num_pending));
    const messages = await consumer.consume({
      callback: (m: JsMsg) => {
        const operation = (m.headers?.get('KV-Operation') || 'PUT') as WatchedEntry['operation'];
        onEntry({ key: m.subject.slice(prefix.length), operation, value: m.data, revision: m.seq });
        act(snapshot.delivered(m.seq));
      },
    });
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

/** A bucket's stream as `streamState()` reads it. */
export interface StreamState {
  readonly messages: number;
  readonly lastSeq: number;
}

/** What a watch does next about its snapshot: nothing, say it is in, or ask the stream's state. */
export type SnapshotAction = { readonly type: 'none' } | { readonly type: 'synced' } | { readonly type: 'check'; readonly upTo: number };

const NOTHING: SnapshotAction = { type: 'none' };
/** Failed questions in a row asked again before the next delivery. */
const MAX_FAILED_QUESTIONS = 3;
const SYNCED: SnapshotAction = { type: 'synced' };

/**
 * When a watch's snapshot is in, as a pure state machine. A consumer that starts with nothing
 * pending is in at once. Otherwise, after each delivery, the stream's state is asked (one question
 * at a time; deliveries meanwhile ask again once it is answered): the snapshot is in when the
 * stream is empty or its last sequence is one delivered before the question went out. Then every
 * key it holds has been delivered at its latest value; a value replaced under the consumer before
 * its delivery is no gap, since what replaced it has a higher sequence and came before the answer
 * said so. (Against the last sequence alone, sent after the question, a key replaced meanwhile
 * could be missing from the view for a moment and the directory would drop it.)
 */
export class SnapshotSync {
  private synced = false;
  /** Highest stream sequence delivered. */
  private highest = 0;
  private asking = false;
  /** Something was delivered while a question was out. */
  private again = false;
  /** Questions failed in a row. */
  private failures = 0;

  /** The consumer exists with `pending` messages to deliver. */
  created(pending: number): SnapshotAction {
    if (pending === 0) return this.sync();
    return this.ask();
  }

  /** An entry with stream sequence `seq` was delivered. */
  delivered(seq: number): SnapshotAction {
    this.highest = Math.max(this.highest, seq);
    this.failures = 0;
    return this.ask();
  }

  /** The answer to a question sent after `upTo` was delivered: the stream's state, or undefined when it failed. */
  checked(upTo: number, state: StreamState | undefined): SnapshotAction {
    this.asking = false;
    if (this.synced) return NOTHING;
    if (state && (state.messages === 0 || state.lastSeq <= upTo)) return this.sync();
    // A failed question is asked again a few times (a JetStream request times out after seconds):
    // no delivery may come to ask it.
    this.failures = state ? 0 : this.failures + 1;
    if (!this.again && (state || this.failures > MAX_FAILED_QUESTIONS)) return NOTHING;
    return this.ask();
  }

  private ask(): SnapshotAction {
    if (this.synced) return NOTHING;
    if (this.asking) {
      this.again = true;
      return NOTHING;
    }
    this.asking = true;
    this.again = false;
    return { type: 'check', upTo: this.highest };
  }

  private sync(): SnapshotAction {
    if (this.synced) return NOTHING;
    this.synced = true;
    return SYNCED;
  }
}
