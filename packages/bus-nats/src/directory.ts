/**
 * The fleet directory as a pure state machine: events in (what the KV watchers delivered, what
 * this node's clients did, how writes ended, ticks), effects out (KV writes, "your older session
 * is replaced", view changes), time passed in by the caller. No timers, sockets or randomness in
 * here; `driver.ts` wires it to NATS (STYLE §6, like `@mdp/cluster`'s election).
 *
 * Two KV buckets back it (SPEC §16):
 *
 *   <prefix>-nodes    n.<node>   { node, incarnation, ttlMs }        max_age = TTL; each node rewrites its
 *                                                                     own key every heartbeat
 *   <prefix>-clients  c.<client> { clientId, node, incarnation,      max_age = refresh horizon; a node
 *                                  principal, digest, … }             rewrites its keys well before it
 *
 * Liveness comes from the heartbeats alone: a client is in the view while the node its key names is
 * alive in the same incarnation. A node beats every TTL/4 and is alive while heard from within
 * TTL − half a beat (7/8 of the TTL, `silenceLimitFor`), so that "a dead node's clients leave every
 * view within one TTL" holds by design, not by luck: its last beat came at most one period before it
 * died, every survivor takes it for dead by TTL − half a beat after the death, and the last half
 * beat is left for the removal. Two beats lost in a row still do not make a node look dead (the
 * third comes an eighth of a TTL before the limit). A node whose heartbeat key is deleted has left
 * and its clients leave at once.
 *
 * A node coming, going or restarting is one `nodeChange` effect naming all its clients, never one
 * `change` per client: the shell and core then make one pass and one notice of it, so a survivor
 * spends a few ms per thousand clients of a dead node rather than answering nothing for a
 * third of a second.
 *
 *      register ──put (unconditional: newest wins)──▶ c.<id> ◀──put from another node (rev > ours)
 *         │                                              │               │
 *         ▼                                              ▼               ▼
 *      refresh ──put if still at our revision (CAS)   others see it    we are replaced: close ours
 *      withdraw ─delete if still at our revision (CAS)
 *
 * One key per client id, so the same id on two nodes resolves by one rule every node applies in the
 * same order: the KV stream's order. The write the stream took last holds the id (SPEC §4: newest
 * registration wins); the node whose write it overwrote sees a higher revision from another holder
 * and is told to close its older session (`replaced`). Refreshes and withdrawals are
 * compare-and-set on the node's own revision, so they never take an id back or delete a newer
 * holder's key.
 *
 * Housekeeping: client keys of nodes dead for `janitorAfterMs` are deleted (compare-and-set) by
 * the live node with the smallest id (duplicates are harmless; a dead node's heartbeat key expires
 * by itself, the bucket's max_age being one TTL); entries of a node dead for `forgetAfterMs` are
 * dropped from memory. A node that finds its own keys deleted (it was taken for dead during a
 * pause and swept) writes them again; one that sees a key naming itself for a client it does not
 * hold (a withdrawal that failed, a previous incarnation) deletes it.
 */

/** What a node says about one of its clients; the value of `c.<client>`. */
export interface Announcement {
  readonly clientId: string;
  readonly node: string;
  readonly incarnation: string;
  /** The principal the id belongs to (core's ownership), never a secret; undefined: a local program. */
  readonly principal: string | undefined;
  /** Digest of the client's descriptor (its catalog); fetch the descriptor from `node` when it changes. */
  readonly digest: string;
  /** When the client registered, ms since the epoch (the holder's clock). */
  readonly registeredAt: number;
  /** How the client is connected (`websocket`, `http-loop`, …), for listings. */
  readonly transport: string;
  readonly secure: boolean;
  readonly authSource: string;
  /**
   * The `Origin` of the web page that registered it (a page of that origin may read its skills,
   * with or without an auth policy); undefined for other programs, or when longer than the bus takes.
   */
  readonly origin?: string | undefined;
}

/** What this node's side of core gives when a client registers or changes its catalog. */
export type LocalAnnouncement = Omit<Announcement, 'node' | 'incarnation'>;

/** A client of another node, as the view holds it. */
export interface RemoteClient extends Announcement {
  /** Revision of its key in the clients bucket. */
  readonly revision: number;
}

/** The value of `n.<node>`. */
export interface NodeBeat {
  readonly node: string;
  readonly incarnation: string;
  /** This node is gone when not heard from for this long, ms. */
  readonly ttlMs: number;
}

export interface DirectoryConfig {
  readonly node: string;
  /** Random per process start: a restarted node is a new incarnation, its old keys are stale. */
  readonly incarnation: string;
  /** A node not heard from for this long is gone, ms (default 5000). Announced in its heartbeat. */
  readonly ttlMs: number;
  /** Heartbeat period, ms (default {@link heartbeatFor}: TTL/4, so two may be lost before the others drop us). */
  readonly heartbeatMs: number;
  /** Each of our keys is rewritten this often so the bucket's max_age never expires it, ms. */
  readonly refreshMs: number;
  /** A failed write (not a conflict) is tried again after this long, ms. */
  readonly retryMs: number;
  /** Keys of a node dead this long are deleted by the janitor, ms (default 2 × TTL: a pause is not a death). */
  readonly janitorAfterMs: number;
  /** Entries of a node dead this long are dropped from memory, ms. */
  readonly forgetAfterMs: number;
  /** Most refresh writes started by one step (the rest follow on the next tick). */
  readonly refreshBatch: number;
  /** The KV key of a client id: what a delete from the watch names (the key alone, no id). */
  readonly clientKey: (clientId: string) => string;
}

/** Bounds on announced TTLs: a peer's odd value must not make its clients immortal or flap. */
export const MIN_TTL_MS = 1000;
/** Longest wait before a failed write is tried again, ms (a write that keeps failing, e.g. refused by permissions). */
export const MAX_RETRY_MS = 30_000;
export const MAX_TTL_MS = 60_000;

export const DIRECTORY_DEFAULTS = {
  ttlMs: 5000,
  /** Clients bucket max_age is twice this: one refresh may fail and be retried before expiry. */
  refreshMs: 30 * 60_000,
  retryMs: 1000,
  forgetAfterMs: 60_000,
  refreshBatch: 256,
} as const;

/**
 * How often a node with this TTL beats, ms: a quarter of it. Every node derives a peer's period
 * from the TTL the peer announces, so the rule is the same fleet-wide.
 */
export function heartbeatFor(ttlMs: number): number {
  return Math.max(100, Math.floor(ttlMs / 4));
}

/**
 * How long a node with this TTL may stay silent before the others take it for dead, ms: the TTL
 * less half a heartbeat (7/8 of the TTL by default). The heartbeat before the silence came at most
 * one period before the node died, so every survivor takes it for dead within TTL − period/2 of its
 * death, and the other half period of the TTL is left for taking its clients out (one pass, a few
 * ms per thousand clients). Two beats lost in a row are still tolerated: the third comes 3/4 of a
 * TTL after the last one heard, an eighth of a TTL before the limit.
 */
export function silenceLimitFor(ttlMs: number): number {
  return ttlMs - Math.floor(heartbeatFor(ttlMs) / 2);
}

/** A complete config from the node, its incarnation and any overrides. */
export function directoryConfig(node: string, incarnation: string, overrides: Partial<DirectoryConfig> = {}): DirectoryConfig {
  const ttlMs = overrides.ttlMs ?? DIRECTORY_DEFAULTS.ttlMs;
  return {
    node,
    incarnation,
    ttlMs,
    heartbeatMs: heartbeatFor(ttlMs),
    refreshMs: DIRECTORY_DEFAULTS.refreshMs,
    retryMs: DIRECTORY_DEFAULTS.retryMs,
    janitorAfterMs: 2 * ttlMs,
    forgetAfterMs: Math.max(DIRECTORY_DEFAULTS.forgetAfterMs, 4 * ttlMs),
    refreshBatch: DIRECTORY_DEFAULTS.refreshBatch,
    clientKey: (clientId) => clientId,
    ...overrides,
  };
}

/** The current value of a key after a conflicting write, as the driver read it back. */
export type KeyState =
  | { readonly kind: 'absent'; readonly revision: number }
  | { readonly kind: 'put'; readonly revision: number; readonly node: string; readonly incarnation: string };

export type DirectoryEvent =
  /** The connection is up and the buckets are bound; the watchers are (re)starting from a snapshot. */
  | { readonly type: 'connected' }
  /** Both watchers delivered their snapshot: the view is complete. */
  | { readonly type: 'synced' }
  | { readonly type: 'disconnected' }
  | { readonly type: 'tick' }
  | { readonly type: 'nodePut'; readonly beat: NodeBeat; readonly revision: number }
  | { readonly type: 'nodeDeleted'; readonly node: string; readonly revision: number }
  | { readonly type: 'clientPut'; readonly announcement: Announcement; readonly revision: number }
  /** A client key was deleted or purged; `key` as `clientKey` makes it. */
  | { readonly type: 'clientDeleted'; readonly key: string; readonly revision: number }
  /** One of this node's clients registered or changed its catalog. */
  | { readonly type: 'register'; readonly announcement: LocalAnnouncement }
  /** One of this node's clients left (unregistered, session ended, replaced here). */
  | { readonly type: 'unregister'; readonly clientId: string }
  | { readonly type: 'writeDone'; readonly clientId: string; readonly revision: number }
  /** `conflict`: the key was not at the expected revision; what it holds now. Else an I/O failure. */
  | { readonly type: 'writeFailed'; readonly clientId: string; readonly conflict?: KeyState }
  | { readonly type: 'deleteDone'; readonly clientId: string }
  | { readonly type: 'deleteFailed'; readonly clientId: string };

export type DirectoryEffect =
  /** Write our heartbeat key. */
  | { readonly type: 'beat'; readonly beat: NodeBeat }
  /** Write `c.<clientId>`; `expect`: only if the key is at that revision (0: absent). */
  | { readonly type: 'put'; readonly announcement: Announcement; readonly expect: number | undefined }
  /** Delete `c.<clientId>` only if it is still at `expect`. `janitor`: the key of a dead node. */
  | { readonly type: 'delete'; readonly clientId: string; readonly expect: number; readonly janitor: boolean }
  /** Delete our heartbeat key (`n.<node>`) if still at `expect`: leaving. */
  | { readonly type: 'deleteNode'; readonly node: string; readonly expect: number }
  /** A newer registration of `clientId` holds it on `byNode`: close our older session (4000). */
  | { readonly type: 'replaced'; readonly clientId: string; readonly byNode: string }
  /** A remote client appeared in, changed in, or left this node's view. */
  | { readonly type: 'change'; readonly kind: 'added' | 'updated' | 'removed'; readonly clientId: string }
  /**
   * Every client of `node` in its current incarnation came into or left the view together (the node
   * came up, died, left or restarted): one effect for all of them, never one `change` each.
   */
  | { readonly type: 'nodeChange'; readonly kind: 'added' | 'removed'; readonly node: string; readonly clientIds: readonly string[] }
  | { readonly type: 'nodeUp'; readonly node: string }
  /** A node left or died: its callers' pending calls fail now. */
  | { readonly type: 'nodeDown'; readonly node: string };

interface NodeState {
  incarnation: string;
  ttlMs: number;
  /** Taken for dead when not heard from for this long, ms ({@link silenceLimitFor} its TTL). */
  silenceMs: number;
  revision: number;
  heardAt: number;
  /** When it was taken for dead (ms), or undefined while alive. */
  deadAt: number | undefined;
  /** The janitor already asked to delete its keys (for this death). */
  swept: boolean;
  /** Seen since the last `connected` (snapshot sweep). */
  seenGen: number;
}

interface Entry {
  value: RemoteClient;
  seenGen: number;
}

interface LocalState {
  announcement: Announcement;
  /** Revision of our last acknowledged write, undefined before the first one. */
  revision: number | undefined;
  /** A write is in flight. */
  writing: boolean;
  /** Another write is wanted once this one ends (the catalog changed meanwhile). */
  again: boolean;
  /** When our last write was acknowledged, ms: the refresh queue is ordered by it. */
  writtenAt: number;
  /** Highest revision seen written by another holder while our write was in flight. */
  otherRevision: number;
  /** Highest revision of a delete of our key seen while our write was in flight (0: none). */
  deletedRevision: number;
  otherNode: string | undefined;
  /** A failed write waits to be tried again at this time, ms. */
  retryAt: number | undefined;
  /** Writes failed in a row (not conflicts): the wait before the next doubles, up to MAX_RETRY_MS. */
  failures: number;
}

export class Directory {
  private connected = false;
  private synced = false;
  private gen = 0;
  private nextBeatAt = Number.POSITIVE_INFINITY;
  private readonly nodes = new Map<string, NodeState>();
  /** Every client key the watch delivered (other holders' and our own), by key. */
  private readonly entries = new Map<string, Entry>();
  private readonly byNode = new Map<string, Set<string>>();
  /** Our own clients by key. */
  private readonly local = new Map<string, LocalState>();
  /**
   * Our clients with no write in flight or waiting, in the order their last write was acknowledged
   * (oldest first): the refresh queue, whose head says when the next refresh is due, in O(1).
   */
  private readonly idle = new Map<string, LocalState>();
  /** Local clients whose last write failed, waiting for `retryAt`. */
  private readonly retrying = new Set<LocalState>();
  /** Deletes in flight, by key → the revision they expect. */
  private readonly deleting = new Map<string, number>();
  private effects: DirectoryEffect[] = [];

  constructor(private config: DirectoryConfig) {}

  /**
   * Rewrite our keys at least this often, ms: the clients bucket may exist with a shorter max_age
   * than the one this node would have given it.
   */
  setRefreshMs(refreshMs: number): void {
    this.config = { ...this.config, refreshMs };
  }

  // ----------------------------------------------------------------------------------------------
  // The view

  /** Connected, and the watchers have delivered their snapshot since. */
  get ready(): boolean {
    return this.connected && this.synced;
  }

  /** The client `clientId` of another live node, or undefined. */
  resolve(clientId: string): RemoteClient | undefined {
    const entry = this.entries.get(this.config.clientKey(clientId));
    return entry && this.visible(entry.value) ? entry.value : undefined;
  }

  /** Every client of other live nodes. */
  *remoteClients(): IterableIterator<RemoteClient> {
    for (const entry of this.entries.values()) if (this.visible(entry.value)) yield entry.value;
  }

  /** How many entries the view holds in memory (visible or not). */
  get size(): number {
    return this.entries.size;
  }

  /** Other nodes alive now. */
  liveNodes(): string[] {
    return [...this.nodes].filter(([id, n]) => id !== this.config.node && n.deadAt === undefined).map(([id]) => id);
  }

  isNodeAlive(node: string): boolean {
    const state = this.nodes.get(node);
    return state !== undefined && state.deadAt === undefined;
  }

  /** Whether `clientId` is one of ours. */
  isLocal(clientId: string): boolean {
    return this.local.has(this.config.clientKey(clientId));
  }

  /** The earliest time a `tick` has work to do, or undefined. */
  wakeAt(): number | undefined {
    let at = this.nextBeatAt;
    const janitor = this.connected && this.synced && this.isJanitor();
    for (const [id, node] of this.nodes) {
      if (id === this.config.node) continue;
      if (node.deadAt === undefined) at = Math.min(at, node.heardAt + node.silenceMs);
      else {
        if (janitor && !node.swept) at = Math.min(at, node.deadAt + this.config.janitorAfterMs);
        at = Math.min(at, node.deadAt + this.config.forgetAfterMs);
      }
    }
    if (this.connected) {
      for (const state of this.retrying) if (state.retryAt !== undefined) at = Math.min(at, state.retryAt);
      const oldest = this.idle.values().next().value;
      if (oldest) at = Math.min(at, oldest.writtenAt + this.config.refreshMs);
    }
    return Number.isFinite(at) ? at : undefined;
  }

  // ----------------------------------------------------------------------------------------------
  // Transitions

  /** Apply one event at time `now` (ms, monotonic); returns the effects, in order. */
  step(event: DirectoryEvent, now: number): DirectoryEffect[] {
    this.effects = [];
    switch (event.type) {
      case 'connected':
        this.onConnected(now);
        break;
      case 'synced':
        this.onSynced(now);
        break;
      case 'disconnected':
        this.connected = false;
        this.synced = false;
        this.deleting.clear();
        this.nextBeatAt = Number.POSITIVE_INFINITY;
        break;
      case 'tick':
        break;
      case 'nodePut':
        this.onNodePut(event.beat, event.revision, now);
        break;
      case 'nodeDeleted':
        this.onNodeDeleted(event.node, now);
        break;
      case 'clientPut':
        this.onClientPut(event.announcement, event.revision, now);
        break;
      case 'clientDeleted':
        this.onClientDeleted(event.key, event.revision, now);
        break;
      case 'register':
        this.onRegister(event.announcement, now);
        break;
      case 'unregister':
        this.onUnregister(event.clientId);
        break;
      case 'writeDone':
        this.onWriteDone(event.clientId, event.revision, now);
        break;
      case 'writeFailed':
        this.onWriteFailed(event.clientId, event.conflict, now);
        break;
      case 'deleteDone':
      case 'deleteFailed':
        this.deleting.delete(this.config.clientKey(event.clientId));
        break;
    }
    this.onTick(now);
    return this.effects;
  }

  private onConnected(now: number): void {
    this.connected = true;
    this.synced = false;
    this.gen += 1;
    this.nextBeatAt = now;
    // Everything is written again: our keys may have expired or been swept while we were away.
    // Compare-and-set on what we wrote last, so that a registration elsewhere meanwhile stands.
    this.retrying.clear();
    for (const state of this.local.values()) {
      state.retryAt = undefined;
      if (state.writing) state.again = true;
      else this.write(state, now, state.revision);
    }
  }

  /** The snapshot is whole: drop what it no longer holds (deleted or expired while we were away). */
  private onSynced(now: number): void {
    if (!this.connected) return;
    this.synced = true;
    for (const [key, entry] of this.entries) {
      if (entry.seenGen !== this.gen) this.removeEntry(key, entry, now);
    }
    for (const [id, node] of this.nodes) {
      if (id !== this.config.node && node.seenGen !== this.gen && node.deadAt === undefined) this.nodeDied(id, node, now);
    }
  }

  private onNodePut(beat: NodeBeat, revision: number, now: number): void {
    const ttlMs = Math.min(MAX_TTL_MS, Math.max(MIN_TTL_MS, beat.ttlMs));
    const known = this.nodes.get(beat.node);
    if (beat.node === this.config.node) {
      // Our own heartbeat: a previous incarnation's key is overwritten by our next beat.
      if (beat.incarnation !== this.config.incarnation) this.nextBeatAt = Math.min(this.nextBeatAt, now);
      this.nodes.set(beat.node, this.nodeState(this.config.incarnation, ttlMs, revision, now));
      return;
    }
    if (!known) {
      this.nodes.set(beat.node, this.nodeState(beat.incarnation, ttlMs, revision, now));
      this.effects.push({ type: 'nodeUp', node: beat.node });
      this.announceNodeClients(beat.node, 'added');
      return;
    }
    const wasAlive = known.deadAt === undefined;
    const newIncarnation = known.incarnation !== beat.incarnation;
    if (wasAlive && newIncarnation) {
      // Restarted within one TTL: its old incarnation's clients go now, its new ones come as they are written.
      this.announceNodeClients(beat.node, 'removed');
      this.effects.push({ type: 'nodeDown', node: beat.node });
    }
    known.seenGen = this.gen;
    // The same beat again (a new snapshot after we reconnected) says nothing about now.
    if (revision === known.revision && !newIncarnation) return;
    known.incarnation = beat.incarnation;
    known.ttlMs = ttlMs;
    known.silenceMs = silenceLimitFor(ttlMs);
    known.revision = revision;
    known.heardAt = now;
    if (!wasAlive || newIncarnation) {
      known.deadAt = undefined;
      known.swept = false;
      this.effects.push({ type: 'nodeUp', node: beat.node });
      this.announceNodeClients(beat.node, 'added');
    }
  }

  private onNodeDeleted(node: string, now: number): void {
    const known = this.nodes.get(node);
    if (node === this.config.node) {
      // We were taken for dead (a pause, a partition) and swept: write everything again.
      if (this.connected) {
        this.nextBeatAt = Math.min(this.nextBeatAt, now);
        for (const state of this.local.values()) {
          if (state.writing) state.again = true;
          else {
            state.retryAt = now;
            this.retrying.add(state);
          }
        }
      }
      return;
    }
    if (known && known.deadAt === undefined) this.nodeDied(node, known, now);
    if (known) known.swept = true;
  }

  private onClientPut(announcement: Announcement, revision: number, now: number): void {
    const { clientId } = announcement;
    const key = this.config.clientKey(clientId);
    const previous = this.entries.get(key);
    if (previous && previous.value.revision >= revision) {
      // An older write delivered late, or the same one again in a new snapshot.
      if (previous.value.revision === revision) {
        previous.seenGen = this.gen;
        this.healOwn(key, previous.value);
      }
      return;
    }
    const wasVisible = previous !== undefined && this.visible(previous.value);
    if (previous) this.unindex(key, previous.value.node);
    const value = remoteClient(announcement, this.internNode(announcement.node), revision);
    this.entries.set(key, { value, seenGen: this.gen });
    this.index(key, value.node);
    const isOurs = value.node === this.config.node && value.incarnation === this.config.incarnation;
    const mine = this.local.get(key);
    if (mine && !isOurs) {
      if (mine.revision !== undefined && revision > mine.revision && !mine.writing) {
        this.replacedBy(clientId, value.node);
      } else if (revision > mine.otherRevision) {
        // Our write is in flight (or not yet acknowledged): decide when its revision is known.
        mine.otherRevision = revision;
        mine.otherNode = value.node;
      }
    } else {
      this.healOwn(key, value);
    }
    const visible = this.visible(value);
    if (visible) this.effects.push({ type: 'change', kind: wasVisible ? 'updated' : 'added', clientId });
    else if (wasVisible) this.effects.push({ type: 'change', kind: 'removed', clientId });
    void now;
  }

  private onClientDeleted(key: string, revision: number, now: number): void {
    const previous = this.entries.get(key);
    if (previous && previous.value.revision < revision) this.removeEntry(key, previous, now);
    const mine = this.local.get(key);
    if (!mine) return;
    if (mine.writing) {
      // The watch can show our write and a delete after it before our write's acknowledgement
      // comes (a pause: a node stopped, swept, and let run again). Decided when the write ends.
      mine.deletedRevision = Math.max(mine.deletedRevision, revision);
    } else if (mine.revision === undefined || revision > mine.revision) {
      // Our key was deleted under us (swept while we seemed dead, or by an operator): write it again.
      this.write(mine, now, revision);
    }
  }

  private onRegister(announcement: LocalAnnouncement, now: number): void {
    const full: Announcement = { ...announcement, node: this.config.node, incarnation: this.config.incarnation };
    const key = this.config.clientKey(announcement.clientId);
    const state = this.local.get(key);
    if (state) {
      state.announcement = full;
      if (state.writing) state.again = true;
      else this.write(state, now, state.revision);
      return;
    }
    const fresh: LocalState = {
      announcement: full,
      revision: undefined,
      writing: false,
      again: false,
      writtenAt: now,
      otherRevision: 0,
      otherNode: undefined,
      deletedRevision: 0,
      retryAt: undefined,
      failures: 0,
    };
    this.local.set(key, fresh);
    // Unconditional: a registration is the newest by definition (SPEC §4), wherever the id was.
    if (this.connected) this.write(fresh, now, undefined);
  }

  private onUnregister(clientId: string): void {
    const key = this.config.clientKey(clientId);
    const state = this.local.get(key);
    if (!state) return;
    this.local.delete(key);
    this.idle.delete(key);
    this.retrying.delete(state);
    if (state.revision !== undefined && this.connected) this.deleteOwn(clientId, state.revision);
    // A write in flight: its key is deleted when the watch shows it naming us (`onClientPut`).
  }

  private onWriteDone(clientId: string, revision: number, now: number): void {
    const state = this.local.get(this.config.clientKey(clientId));
    if (!state) {
      // Withdrawn while the write was in flight.
      if (this.connected) this.deleteOwn(clientId, revision);
      return;
    }
    state.writing = false;
    state.failures = 0;
    state.revision = Math.max(state.revision ?? 0, revision);
    if (state.otherRevision > state.revision && state.otherNode !== undefined) {
      this.replacedBy(clientId, state.otherNode);
      return;
    }
    const deleted = state.deletedRevision;
    state.deletedRevision = 0;
    if (deleted > state.revision && this.connected) {
      // Deleted after the write we just heard about: write it again on top of the delete.
      this.write(state, now, deleted);
      return;
    }
    if (state.again && this.connected) {
      this.write(state, now, state.revision);
      return;
    }
    state.writtenAt = now;
    this.idle.set(this.config.clientKey(clientId), state);
  }

  private onWriteFailed(clientId: string, conflict: KeyState | undefined, now: number): void {
    const state = this.local.get(this.config.clientKey(clientId));
    if (!state) return;
    state.writing = false;
    if (!this.connected) return; // written again on `connected`
    if (!conflict) {
      state.retryAt = now + Math.min(MAX_RETRY_MS, this.config.retryMs * 2 ** Math.min(state.failures, 16));
      state.failures += 1;
      this.retrying.add(state);
      return;
    }
    const ours = conflict.kind === 'put' && conflict.node === this.config.node && conflict.incarnation === this.config.incarnation;
    if (conflict.kind === 'put' && !ours) {
      if (state.revision !== undefined && conflict.revision > state.revision) {
        this.replacedBy(clientId, conflict.node);
        return;
      }
    }
    // Absent, ours (an acknowledgement was lost), or a stale holder: write on top of what is there.
    this.write(state, now, conflict.revision);
  }

  private onTick(now: number): void {
    if (this.connected && now >= this.nextBeatAt) {
      this.effects.push({ type: 'beat', beat: { node: this.config.node, incarnation: this.config.incarnation, ttlMs: this.config.ttlMs } });
      this.nextBeatAt = now + this.config.heartbeatMs;
    }
    const janitor = this.connected && this.synced && this.isJanitor();
    for (const [id, node] of this.nodes) {
      if (id === this.config.node) continue;
      if (node.deadAt === undefined) {
        if (now >= node.heardAt + node.silenceMs) this.nodeDied(id, node, now);
        continue;
      }
      if (janitor && !node.swept && now >= node.deadAt + this.config.janitorAfterMs) {
        node.swept = true;
        for (const key of this.byNode.get(id) ?? []) {
          const entry = this.entries.get(key);
          if (entry) this.effects.push({ type: 'delete', clientId: entry.value.clientId, expect: entry.value.revision, janitor: true });
        }
        // Its heartbeat key needs no sweeping: the bucket's max_age (one TTL) has expired it already.
      }
      if (now >= node.deadAt + this.config.forgetAfterMs) {
        for (const key of [...(this.byNode.get(id) ?? [])]) {
          const entry = this.entries.get(key);
          if (entry) this.removeEntry(key, entry, now);
        }
        this.nodes.delete(id);
      }
    }
    if (!this.connected) return;
    for (const state of [...this.retrying]) {
      if (state.retryAt !== undefined && now >= state.retryAt) this.write(state, now, state.revision);
    }
    for (let n = 0; n < this.config.refreshBatch; n++) {
      const oldest = this.idle.values().next().value;
      if (!oldest || now < oldest.writtenAt + this.config.refreshMs) break;
      this.write(oldest, now, oldest.revision);
    }
  }

  /**
   * Leave the fleet: the deletes of our keys (compare-and-set on what we wrote), our heartbeat's
   * last, so that every node drops our clients at once rather than after a TTL. Ends every activity.
   */
  leave(): DirectoryEffect[] {
    const effects: DirectoryEffect[] = [];
    for (const state of this.local.values()) {
      if (state.revision !== undefined) effects.push({ type: 'delete', clientId: state.announcement.clientId, expect: state.revision, janitor: false });
    }
    const self = this.nodes.get(this.config.node);
    if (self) effects.push({ type: 'deleteNode', node: this.config.node, expect: self.revision });
    this.local.clear();
    this.idle.clear();
    this.retrying.clear();
    this.connected = false;
    this.synced = false;
    this.nextBeatAt = Number.POSITIVE_INFINITY;
    return effects;
  }

  // ----------------------------------------------------------------------------------------------
  // Helpers

  private write(state: LocalState, _now: number, expect: number | undefined): void {
    state.writing = true;
    state.again = false;
    state.retryAt = undefined;
    this.retrying.delete(state);
    this.idle.delete(this.config.clientKey(state.announcement.clientId));
    this.effects.push({ type: 'put', announcement: state.announcement, expect });
  }

  private deleteOwn(clientId: string, revision: number): void {
    const key = this.config.clientKey(clientId);
    if (this.deleting.get(key) === revision) return;
    this.deleting.set(key, revision);
    this.effects.push({ type: 'delete', clientId, expect: revision, janitor: false });
  }

  /** A key naming us for a client we do not hold (a failed withdrawal, a previous incarnation's): delete it. */
  private healOwn(key: string, value: RemoteClient): void {
    if (value.node !== this.config.node || !this.connected || this.local.has(key)) return;
    this.deleteOwn(value.clientId, value.revision);
  }

  private replacedBy(clientId: string, byNode: string): void {
    const key = this.config.clientKey(clientId);
    const state = this.local.get(key);
    if (state) this.retrying.delete(state);
    this.local.delete(key);
    this.idle.delete(key);
    this.effects.push({ type: 'replaced', clientId, byNode });
  }

  private visible(value: RemoteClient): boolean {
    if (value.node === this.config.node) return false;
    const node = this.nodes.get(value.node);
    return node !== undefined && node.deadAt === undefined && node.incarnation === value.incarnation;
  }

  private nodeDied(id: string, node: NodeState, now: number): void {
    this.announceNodeClients(id, 'removed');
    node.deadAt = now;
    this.effects.push({ type: 'nodeDown', node: id });
  }

  /** One change effect for every client of `node` in its current incarnation (none when it has none). */
  private announceNodeClients(node: string, kind: 'added' | 'removed'): void {
    const state = this.nodes.get(node);
    if (!state) return;
    const clientIds: string[] = [];
    for (const key of this.byNode.get(node) ?? []) {
      const entry = this.entries.get(key);
      if (entry && entry.value.incarnation === state.incarnation) clientIds.push(entry.value.clientId);
    }
    if (clientIds.length > 0) this.effects.push({ type: 'nodeChange', kind, node, clientIds });
  }

  private nodeState(incarnation: string, ttlMs: number, revision: number, now: number): NodeState {
    return { incarnation, ttlMs, silenceMs: silenceLimitFor(ttlMs), revision, heardAt: now, deadAt: undefined, swept: false, seenGen: this.gen };
  }

  private removeEntry(key: string, entry: Entry, now: number): void {
    const wasVisible = this.visible(entry.value);
    this.entries.delete(key);
    this.unindex(key, entry.value.node);
    if (wasVisible) this.effects.push({ type: 'change', kind: 'removed', clientId: entry.value.clientId });
    void now;
  }

  private isJanitor(): boolean {
    for (const [id, node] of this.nodes) {
      if (node.deadAt === undefined && id < this.config.node) return false;
    }
    return true;
  }

  /** One string per node id, whichever message it came from (memory per entry). */
  private internNode(node: string): string {
    for (const key of this.byNode.keys()) if (key === node) return key;
    return node;
  }

  private index(key: string, node: string): void {
    let set = this.byNode.get(node);
    if (!set) this.byNode.set(node, (set = new Set()));
    set.add(key);
  }

  private unindex(key: string, node: string): void {
    const set = this.byNode.get(node);
    if (!set) return;
    set.delete(key);
    if (set.size === 0) this.byNode.delete(node);
  }
}

/**
 * A view entry with the same fields in the same order whatever the announcement held (`origin`
 * present or not, fields in any order): every entry shares one hidden class, where a spread of the
 * decoded announcement gave each its own (hundreds of bytes per remote client).
 */
function remoteClient(announcement: Announcement, node: string, revision: number): RemoteClient {
  return {
    clientId: announcement.clientId,
    node,
    incarnation: announcement.incarnation,
    principal: announcement.principal,
    digest: announcement.digest,
    registeredAt: announcement.registeredAt,
    transport: announcement.transport,
    secure: announcement.secure,
    authSource: announcement.authSource,
    origin: announcement.origin,
    revision,
  };
}
