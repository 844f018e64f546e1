/**
 * A fleet node on NATS: the thin wiring around the directory state machine (directory.ts), the
 * wire (wire.ts) and the buckets (store.ts). It owns the connection, one subscription for what is
 * addressed to this node, one for replies, one per HTTP loop session it holds, the two KV watches,
 * and one timer for the directory.
 *
 *   start ─▶ connect ─▶ check server (headers, JetStream, max_payload) ─▶ setup ─▶ running
 *                                                                          ▲  │ disconnect: pending
 *                                                         reconnect ───────┘  ▼ calls fail (not_ready)
 *   setup = open buckets, directory `connected` (heartbeat, every key written again), watch both
 *   buckets from a snapshot; both snapshots in → `synced` → ready.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { connect, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { CallCancel, MdpError, silentLogger, systemClock, type CallSignal, type Clock, type InvokeOutcome, type Logger } from '@mdp/core';
import type { ClientDescriptor } from '@mdp/protocol';
import {
  LATENCY_BUCKETS_MS,
  latencyBucket,
  type BusHandlers,
  type BusMetrics,
  type BusStatus,
  type DirectoryChange,
  type LocalClient,
  type NatsBus,
  type OutgoingOptions,
  type RelayResult,
  type SessionRelayHandler,
} from './api.js';
import { DescriptorCache } from './descriptor-cache.js';
import { Directory, directoryConfig, type DirectoryEffect, type DirectoryEvent, type RemoteClient } from './directory.js';
import { BUS_DEFAULTS } from './defaults.js';
import { ENVELOPE_BYTES, MIN_SERVER_PAYLOAD, connectionOptions, optionsProblem, type NatsBusOptions } from './options.js';
import {
  CancelSchema,
  CatalogAnswerSchema,
  CatalogRequestSchema,
  decodeCallEnvelope,
  remoteCallOf,
  decodeJson,
  decodeOutcome,
  descriptorDigest,
  encodeJson,
  serverFailure,
  type CatalogAnswer,
  type RemoteCall,
} from './protocol.js';
import { decodeAnnouncement, decodeBeat, encodeAnnouncement, encodeBeat } from './records.js';
import { Bucket, isConflict, type Watch, type WatchedEntry } from './store.js';
import { FleetNames } from './subjects.js';
import { Wire, WireError } from './wire.js';

/** Extra time a caller waits past the call's own time-out, ms: the holder answers `timeout` first. */
const CALL_GRACE_MS = 1000;
/** KV writes in flight at once (a node with 20,000 clients writes them all on reconnect). */
const MAX_WRITES_IN_FLIGHT = 64;
/** Wait before trying the buckets and watches again after they failed, ms. */
const SETUP_RETRY_MS = 1000;
/** Largest heartbeat value and client announcement, bytes (the bucket refuses more). */
const MAX_BEAT_BYTES = 4096;
const MAX_ANNOUNCEMENT_BYTES = 16 * 1024;
/** Longest client id and principal a node announces, bytes (both fit in one announcement). */
export const MAX_FLEET_ID_BYTES = 4096;
/** Longest wait for each step of leaving (deleting our keys, draining the connection), ms. */
const LEAVE_MS = 2000;
/** Relay answer tags: the first byte says whether the rest is the answer or a failure message. */
const RELAY_OK = 0;
const RELAY_FAILED = 1;

type Lifecycle = 'new' | 'starting' | 'running' | 'closing' | 'closed';

/** Create a fleet node; nothing happens until `start()`. */
export function createNatsBus(options: NatsBusOptions, handlers: BusHandlers): NatsBus {
  return new NatsBusNode(options, handlers);
}

class NatsBusNode implements NatsBus {
  readonly nodeId: string;
  private readonly names: FleetNames;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly directory: Directory;
  private readonly ttlMs: number;
  private readonly maxBodyBytes: number;
  private readonly callTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private state: Lifecycle = 'new';
  private nc: NatsConnection | undefined;
  /** Calls addressed to this node (its node subject). */
  private nodeSub: Subscription | undefined;
  private wire: Wire | undefined;
  private nodesBucket: Bucket | undefined;
  private clientsBucket: Bucket | undefined;
  private watches: Watch[] = [];
  /** Bumped at each setup: callbacks of older watches and setups are ignored. */
  private generation = 0;
  private connected = false;
  private setupTimer: unknown;
  private wakeTimer: unknown;
  private wakeAt: number | undefined;
  private readonly nodeKeys = new Map<string, string>();
  private readonly statusListeners = new Set<(status: BusStatus) => void>();
  private readonly changeListeners = new Set<(changes: readonly DirectoryChange[]) => void>();
  private readonly writeQueue: Array<() => Promise<void>> = [];
  private writesInFlight = 0;
  /** Incoming calls and relays being answered, by cancel id (calls get a CallCancel: no AbortController each). */
  private readonly incoming = new Map<string, AbortController | CallCancel>();
  private readonly sessions = new Map<string, Subscription>();
  private readonly descriptors = new DescriptorCache();
  private counters = { reconnects: 0, requestsSent: 0, requestsFailed: 0, requestsServed: 0, latencySum: 0, latencyCount: 0 };
  private readonly latencyBuckets = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);

  constructor(
    private readonly options: NatsBusOptions,
    private readonly handlers: BusHandlers,
  ) {
    const problem = optionsProblem(options);
    if (problem) throw new TypeError(problem);
    this.nodeId = options.nodeId;
    this.names = new FleetNames(options.prefix ?? BUS_DEFAULTS.prefix, options.nodeId);
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger).child({ component: 'bus', node: options.nodeId });
    this.ttlMs = options.ttlMs ?? BUS_DEFAULTS.ttlMs;
    this.maxBodyBytes = (options.maxMessageBytes ?? BUS_DEFAULTS.maxMessageBytes) + ENVELOPE_BYTES;
    this.callTimeoutMs = options.callTimeoutMs ?? BUS_DEFAULTS.callTimeoutMs;
    this.requestTimeoutMs = options.requestTimeoutMs ?? BUS_DEFAULTS.requestTimeoutMs;
    const incarnation = options.incarnation ?? randomBytes(8).toString('hex');
    this.directory = new Directory(directoryConfig(options.nodeId, incarnation, { ttlMs: this.ttlMs, clientKey: (id) => this.names.clientKey(id) }));
  }

  get ready(): boolean {
    return this.state === 'running' && this.connected && this.directory.ready;
  }

  // ----------------------------------------------------------------------------------------------
  // Lifecycle

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error('bus: start() may be called once');
    this.state = 'starting';
    const servers = typeof this.options.servers === 'string' ? this.options.servers : this.options.servers.join(',');
    let nc: NatsConnection;
    try {
      nc = await connect(connectionOptions(this.options, this.names.inboxPrefix, `mdp ${this.nodeId}`));
    } catch (error) {
      this.state = 'closed';
      throw new Error(`bus: cannot connect to NATS at ${servers}: ${(error as Error).message}`, { cause: error });
    }
    const info = nc.info;
    const refusal = !info
      ? 'the NATS server sent no INFO'
      : !info.headers
        ? 'the NATS server does not support headers (needs nats-server 2.2 or later)'
        : !info.jetstream
          ? 'the NATS server has no JetStream: start it with -js (the fleet directory is a JetStream KV bucket)'
          : info.max_payload < MIN_SERVER_PAYLOAD
            ? `the NATS server's max_payload is ${info.max_payload} bytes; the bus needs at least ${MIN_SERVER_PAYLOAD}`
            : undefined;
    if (refusal) {
      this.state = 'closed';
      await nc.close().catch(() => undefined);
      throw new Error(`bus: ${refusal}`);
    }
    this.nc = nc;
    this.wire = new Wire(nc, this.names.inboxPrefix, { maxBodyBytes: this.maxBodyBytes, maxAssemblies: 64, assemblyTimeoutMs: 30_000 }, this.clock);
    this.wire.start();
    this.nodeSub = nc.subscribe(this.names.nodeWildcard, { callback: (_error, msg) => this.onNodeMessage(msg) });
    this.connected = true;
    try {
      await this.setup(this.generation + 1);
    } catch (error) {
      this.state = 'closed';
      this.connected = false;
      this.wire.close();
      await nc.close().catch(() => undefined);
      throw new Error(`bus: cannot open the fleet directory on NATS: ${(error as Error).message}`, { cause: error });
    }
    this.state = 'running';
    this.log.info('bus.started', { servers, prefix: this.names.prefix, maxPayload: info?.max_payload });
    this.emit({ type: 'connected', server: nc.getServer(), maxPayload: this.wire.serverMaxPayload });
    void this.followStatus(nc);
  }

  async close(): Promise<void> {
    if (this.state === 'closing' || this.state === 'closed') return;
    const wasRunning = this.state === 'running';
    this.state = 'closing';
    this.clock.clearTimeout(this.setupTimer);
    this.clock.clearTimeout(this.wakeTimer);
    const leaving = this.directory.leave();
    if (wasRunning && this.connected) {
      // Leave: delete our keys so that other nodes drop our clients now. Bounded: a NATS that does
      // not answer must not hold the shutdown.
      await this.within(Promise.allSettled(leaving.map((effect) => this.leaveWrite(effect))), LEAVE_MS);
    }
    for (const watch of this.watches) watch.stop();
    this.watches = [];
    this.wire?.abortNode(undefined);
    for (const controller of this.incoming.values()) controller.abort();
    this.incoming.clear();
    this.wire?.close();
    this.nodeSub?.unsubscribe();
    this.nodeSub = undefined;
    for (const sub of this.sessions.values()) sub.unsubscribe();
    this.sessions.clear();
    this.writeQueue.length = 0;
    const nc = this.nc;
    this.connected = false;
    if (nc && !nc.isClosed()) {
      await this.within(
        nc.drain().catch(() => nc.close()),
        LEAVE_MS,
      );
      if (!nc.isClosed()) await nc.close().catch(() => undefined);
    }
    this.state = 'closed';
    this.log.info('bus.closed');
    this.emit({ type: 'closed' });
  }

  /** Buckets, directory `connected`, watches. Throws when a bucket cannot be opened. */
  private async setup(generation: number): Promise<void> {
    const nc = this.nc;
    if (!nc) return;
    this.generation = generation;
    for (const watch of this.watches) watch.stop();
    this.watches = [];
    const replicas = this.options.replicas ?? BUS_DEFAULTS.replicas;
    const refreshMs = 30 * 60_000;
    this.nodesBucket = await Bucket.open(
      nc,
      { name: this.names.nodesBucket, maxAgeMs: this.ttlMs, replicas, maxValueBytes: MAX_BEAT_BYTES },
      this.names.inboxPrefix,
    );
    this.clientsBucket = await Bucket.open(
      nc,
      { name: this.names.clientsBucket, maxAgeMs: 2 * refreshMs, replicas, maxValueBytes: MAX_ANNOUNCEMENT_BYTES },
      this.names.inboxPrefix,
    );
    if (generation !== this.generation) return;
    if (this.nodesBucket.maxAgeMs !== this.ttlMs) {
      this.warn(
        `bucket ${this.names.nodesBucket} exists with max_age ${this.nodesBucket.maxAgeMs} ms, not this node's TTL of ${this.ttlMs} ms; give every node of the fleet the same TTL`,
      );
    }
    const clientsAge = this.clientsBucket.maxAgeMs;
    this.directory.setRefreshMs(clientsAge > 0 ? Math.max(1000, Math.floor(clientsAge / 2)) : refreshMs);
    this.step({ type: 'connected' });
    let pending = 2;
    const synced = (): void => {
      pending -= 1;
      if (pending === 0 && generation === this.generation) {
        this.step({ type: 'synced' });
        this.log.info('bus.ready', { remoteClients: this.directory.size });
        this.emit({ type: 'ready' });
      }
    };
    const ended = (what: string) => (error: unknown) => {
      if (generation !== this.generation || this.state !== 'running' || !this.connected) return;
      this.warn(`the watch of ${what} ended${error ? `: ${(error as Error).message}` : ''}; watching again`);
      this.scheduleSetup();
    };
    const nodesWatch = await this.nodesBucket.watch(
      (entry) => generation === this.generation && this.onNodeEntry(entry),
      synced,
      ended(this.names.nodesBucket),
    );
    this.watches.push(nodesWatch);
    const clientsWatch = await this.clientsBucket.watch(
      (entry) => generation === this.generation && this.onClientEntry(entry),
      synced,
      ended(this.names.clientsBucket),
    );
    this.watches.push(clientsWatch);
    if (generation !== this.generation) {
      nodesWatch.stop();
      clientsWatch.stop();
    }
  }

  private scheduleSetup(): void {
    this.clock.clearTimeout(this.setupTimer);
    this.setupTimer = this.clock.setTimeout(() => {
      if (this.state !== 'running' || !this.connected) return;
      this.setup(this.generation + 1).catch((error: unknown) => {
        this.warn(`cannot open the fleet directory: ${(error as Error).message}; trying again`);
        this.scheduleSetup();
      });
    }, SETUP_RETRY_MS);
  }

  /** Follow the connection's status events until it closes. */
  private async followStatus(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (this.state !== 'running') continue;
      switch (status.type) {
        case 'disconnect':
          this.onDisconnected(`lost the connection to ${status.server}`);
          break;
        case 'reconnect':
          this.onReconnected(status.server);
          break;
        case 'error':
          this.warn(`NATS error: ${status.error.message}`);
          break;
        case 'slowConsumer':
          this.warn(`NATS: this node reads too slowly (${status.pending} messages pending)`);
          break;
        default:
          break;
      }
    }
    if (this.state === 'running') this.onDisconnected('the NATS connection closed');
  }

  private onDisconnected(reason: string): void {
    if (!this.connected) return;
    this.connected = false;
    this.generation += 1;
    this.clock.clearTimeout(this.setupTimer);
    for (const watch of this.watches) watch.stop();
    this.watches = [];
    this.wire?.disconnected();
    this.step({ type: 'disconnected' });
    this.log.warn('bus.disconnected', { reason });
    this.emit({ type: 'disconnected', reason });
  }

  private onReconnected(server: string): void {
    this.connected = true;
    this.counters.reconnects += 1;
    this.wire?.connected();
    this.log.info('bus.reconnected', { server });
    this.emit({ type: 'connected', server, maxPayload: this.wire?.serverMaxPayload ?? 0 });
    this.setup(this.generation + 1).catch((error: unknown) => {
      this.warn(`cannot open the fleet directory: ${(error as Error).message}; trying again`);
      this.scheduleSetup();
    });
  }

  // ----------------------------------------------------------------------------------------------
  // Directory

  announce(client: LocalClient): void {
    if (this.state === 'closing' || this.state === 'closed') return;
    const clientId = client.descriptor.id;
    const problem = announcementProblem(client);
    if (problem) throw new MdpError('bad_request', problem);
    const digest = descriptorDigest(client.descriptor);
    this.step({
      type: 'register',
      announcement: {
        clientId,
        principal: client.principal,
        digest,
        registeredAt: client.registeredAt,
        transport: client.transport,
        secure: client.secure,
        authSource: client.authSource,
        origin: client.origin,
      },
    });
  }

  withdraw(clientId: string): void {
    if (this.state === 'closing' || this.state === 'closed') return;
    this.step({ type: 'unregister', clientId });
  }

  resolve(clientId: string): RemoteClient | undefined {
    return this.directory.resolve(clientId);
  }

  remoteClients(): RemoteClient[] {
    return [...this.directory.remoteClients()];
  }

  private onNodeEntry(entry: WatchedEntry): void {
    if (entry.operation === 'PUT') {
      const beat = decodeBeat(entry.key, Buffer.from(entry.value).toString('utf8'));
      if (!beat) return;
      this.nodeKeys.set(entry.key, beat.node);
      this.step({ type: 'nodePut', beat, revision: entry.revision });
    } else {
      const node = this.nodeKeys.get(entry.key);
      if (node !== undefined) this.step({ type: 'nodeDeleted', node, revision: entry.revision });
    }
  }

  private onClientEntry(entry: WatchedEntry): void {
    if (entry.operation === 'PUT') {
      const announcement = decodeAnnouncement(entry.key, Buffer.from(entry.value).toString('utf8'));
      if (announcement) this.step({ type: 'clientPut', announcement, revision: entry.revision });
    } else {
      this.step({ type: 'clientDeleted', key: entry.key, revision: entry.revision });
    }
  }

  /** Feed the directory one event and carry out its effects. */
  private step(event: DirectoryEvent): void {
    const effects = this.directory.step(event, this.clock.now());
    let changes: DirectoryChange[] | undefined;
    for (const effect of effects) {
      if (effect.type === 'change') (changes ??= []).push({ kind: effect.kind, clientId: effect.clientId });
      else if (effect.type === 'nodeChange') (changes ??= []).push({ kind: effect.kind, node: effect.node, clientIds: effect.clientIds });
      else this.apply(effect);
    }
    if (changes) {
      for (const change of changes) {
        if (change.kind === 'added') continue;
        if ('clientIds' in change) this.descriptors.forgetClients(change.clientIds);
        else this.descriptors.forgetClient(change.clientId);
      }
      // One call per step: a node's death reaches the listeners as one change naming all its clients.
      for (const listener of [...this.changeListeners]) this.safely(() => listener(changes));
    }
    this.armWake();
  }

  private apply(effect: Exclude<DirectoryEffect, { type: 'change' | 'nodeChange' }>): void {
    switch (effect.type) {
      case 'beat': {
        const bucket = this.nodesBucket;
        if (!bucket) return;
        // Ahead of every queued client write: thousands of registrations at once must not hold the
        // heartbeat back past the others' silence limit (they would take this node for dead).
        this.enqueueWrite(async () => {
          try {
            await bucket.put(this.names.nodeKey(effect.beat.node), encodeBeat(effect.beat));
          } catch (error) {
            if (this.connected) this.warn(`cannot write the heartbeat: ${(error as Error).message}`);
          }
        }, true);
        return;
      }
      case 'put': {
        const bucket = this.clientsBucket;
        const clientId = effect.announcement.clientId;
        if (!bucket) return;
        const key = this.names.clientKey(clientId);
        this.enqueueWrite(async () => {
          try {
            const revision = await bucket.put(key, encodeAnnouncement(effect.announcement), effect.expect);
            this.step({ type: 'writeDone', clientId, revision });
          } catch (error) {
            if (isConflict(error)) {
              try {
                const conflict = await bucket.clientKeyState(key);
                this.step({ type: 'writeFailed', clientId, conflict });
                return;
              } catch {
                // Fall through: treated as a failed write, tried again.
              }
            }
            this.step({ type: 'writeFailed', clientId });
          }
        });
        return;
      }
      case 'delete': {
        const bucket = this.clientsBucket;
        if (!bucket) return;
        const clientId = effect.clientId;
        this.enqueueWrite(async () => {
          try {
            await bucket.delete(this.names.clientKey(clientId), effect.expect);
            if (effect.janitor) this.log.debug('bus.swept', { clientId });
            this.step({ type: 'deleteDone', clientId });
          } catch {
            this.step({ type: 'deleteFailed', clientId });
          }
        });
        return;
      }
      case 'deleteNode': {
        const bucket = this.nodesBucket;
        if (!bucket) return;
        this.enqueueWrite(() => bucket.delete(this.names.nodeKey(effect.node), effect.expect).catch(() => undefined));
        return;
      }
      case 'replaced':
        this.log.info('bus.replaced', { clientId: effect.clientId, byNode: effect.byNode });
        this.safely(() => this.handlers.replaced(effect.clientId, effect.byNode));
        return;
      case 'nodeUp':
        this.log.info('bus.node_up', { peer: effect.node });
        this.emit({ type: 'nodeUp', node: effect.node });
        return;
      case 'nodeDown':
        this.log.info('bus.node_down', { peer: effect.node });
        this.wire?.abortNode(effect.node);
        this.emit({ type: 'nodeDown', node: effect.node });
        return;
    }
  }

  /** A write while leaving: straight to the bucket, not through the queue. */
  private async leaveWrite(effect: DirectoryEffect): Promise<void> {
    if (effect.type === 'delete') await this.clientsBucket?.delete(this.names.clientKey(effect.clientId), effect.expect);
    else if (effect.type === 'deleteNode') await this.nodesBucket?.delete(this.names.nodeKey(effect.node), effect.expect);
  }

  private enqueueWrite(write: () => Promise<void>, first = false): void {
    if (first) this.writeQueue.unshift(write);
    else this.writeQueue.push(write);
    this.pumpWrites();
  }

  private pumpWrites(): void {
    while (this.writesInFlight < MAX_WRITES_IN_FLIGHT && this.writeQueue.length > 0) {
      const write = this.writeQueue.shift() as () => Promise<void>;
      this.writesInFlight += 1;
      void write()
        .catch((error: unknown) => this.log.error('bus.write_failed', { error }))
        .finally(() => {
          this.writesInFlight -= 1;
          this.pumpWrites();
        });
    }
  }

  private armWake(): void {
    if (this.state === 'closing' || this.state === 'closed') return;
    const at = this.directory.wakeAt();
    if (at === this.wakeAt) return;
    this.clock.clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    if (at === undefined) return;
    // The directory's next deadline: a heartbeat, a node's TTL, a refresh or a retry.
    this.wakeTimer = this.clock.setTimeout(
      () => {
        this.wakeAt = undefined;
        this.step({ type: 'tick' });
      },
      Math.max(0, at - this.clock.now()),
    );
  }

  // ----------------------------------------------------------------------------------------------
  // Outgoing

  async call(clientId: string, call: RemoteCall, options: OutgoingOptions = {}): Promise<InvokeOutcome> {
    const started = this.clock.now();
    const outcome = await this.callOnce(clientId, call, options);
    const ms = this.clock.now() - started;
    this.counters.requestsSent += 1;
    if (!outcome.ok) this.counters.requestsFailed += 1;
    this.counters.latencySum += ms;
    this.counters.latencyCount += 1;
    const bucket = latencyBucket(ms);
    this.latencyBuckets[bucket] = (this.latencyBuckets[bucket] ?? 0) + 1;
    return outcome;
  }

  private async callOnce(clientId: string, call: RemoteCall, options: OutgoingOptions): Promise<InvokeOutcome> {
    const unavailable = this.unavailable();
    if (unavailable) return unavailable;
    const entry = this.directory.resolve(clientId);
    if (!entry) return serverFailure('not_found', `Client ${JSON.stringify(clientId)} is not connected to any node of the fleet`);
    const timeoutMs = options.timeoutMs ?? this.callTimeoutMs;
    const id = randomUUID();
    const body = encodeJson({ id, clientId, timeoutMs: Math.max(1, Math.ceil(timeoutMs)), ...call });
    if (body.length > this.maxBodyBytes) return serverFailure('bad_request', `The call is ${body.length} bytes; the bus carries at most ${this.maxBodyBytes}`);
    const subject = this.names.toNode(entry.node, 'call', clientId);
    try {
      const answer = await this.requestToNode(entry.node, subject, body, timeoutMs + CALL_GRACE_MS, options.signal);
      const outcome = decodeOutcome(answer);
      if (!outcome) return serverFailure('transport_error', `Node ${JSON.stringify(entry.node)} sent an answer that is not a call outcome`);
      return outcome.ok ? { ok: true, data: outcome.data } : { ok: false, error: outcome.error, source: outcome.source };
    } catch (error) {
      if (error instanceof WireError && error.kind === 'node_gone') {
        return serverFailure('transport_error', `Node ${JSON.stringify(entry.node)} left the fleet during the call`);
      }
      if (error instanceof WireError && error.kind === 'aborted') {
        this.wire?.notify(this.names.toNode(entry.node, 'cancel'), encodeJson({ id }));
        return serverFailure('transport_error', 'The caller went away');
      }
      if (error instanceof WireError && error.kind === 'timeout') {
        return serverFailure('timeout', `Client ${JSON.stringify(clientId)} did not answer within ${timeoutMs} ms`);
      }
      return this.wireFailure(error, entry.node);
    }
  }

  /** A request to `node` that fails at once (`node_gone`) when the directory sees the node leave. */
  private requestToNode(node: string, subject: string, body: Uint8Array, timeoutMs: number, signal?: CallSignal): Promise<Uint8Array> {
    const wire = this.wire;
    if (!wire) return Promise.reject(new WireError('not_connected', 'not started'));
    return wire.request(subject, body, timeoutMs, signal, node);
  }

  /** Why no request can go out now (`not_ready`, with when to try again), or undefined. */
  private unavailable(): InvokeOutcome | undefined {
    if (this.state === 'closing' || this.state === 'closed') return serverFailure('transport_error', 'The fleet bus is closed');
    if (this.state !== 'running' || !this.connected) {
      return serverFailure('not_ready', 'The fleet bus (NATS) is not reachable from this node; try again shortly', { retryAfterMs: this.retryAfterMs() });
    }
    return undefined;
  }

  private retryAfterMs(): number {
    return (this.options.reconnectWaitMs ?? BUS_DEFAULTS.reconnectWaitMs) + 1000;
  }

  private wireFailure(error: unknown, node: string): InvokeOutcome {
    if (!(error instanceof WireError)) return serverFailure('transport_error', `Request to node ${JSON.stringify(node)} failed`);
    switch (error.kind) {
      case 'not_connected':
      case 'disconnected':
        return serverFailure('not_ready', 'The fleet bus (NATS) was lost during the call; try again shortly', { retryAfterMs: this.retryAfterMs() });
      case 'no_responders':
        return serverFailure('transport_error', `Node ${JSON.stringify(node)} does not answer: it left the fleet or lost NATS`);
      case 'timeout':
        return serverFailure('timeout', `Node ${JSON.stringify(node)} did not answer in time`);
      case 'too_large':
        return serverFailure('transport_error', `The answer of node ${JSON.stringify(node)} is too large: ${error.message}`);
      default:
        return serverFailure('transport_error', `Request to node ${JSON.stringify(node)} failed: ${error.message}`);
    }
  }

  cachedDescriptor(clientId: string): ClientDescriptor | undefined {
    const entry = this.directory.resolve(clientId);
    return entry && this.descriptors.cached(clientId, entry.digest);
  }

  async descriptor(clientId: string, options: OutgoingOptions = {}): Promise<ClientDescriptor | undefined> {
    const entry = this.directory.resolve(clientId);
    if (!entry) return undefined;
    return this.descriptors.get(clientId, entry.digest, async () => {
      const unavailable = this.unavailable();
      if (unavailable && !unavailable.ok)
        throw new MdpError(unavailable.error.code as 'not_ready', unavailable.error.message, { details: unavailable.error.details as Record<string, unknown> });
      const subject = this.names.toNode(entry.node, 'catalog', clientId);
      let answer: Uint8Array;
      try {
        answer = await this.requestToNode(entry.node, subject, encodeJson({ clientId }), options.timeoutMs ?? this.requestTimeoutMs, options.signal);
      } catch (error) {
        const failed = this.wireFailure(error, entry.node);
        if (!failed.ok && failed.error.code === 'transport_error' && error instanceof WireError && error.kind === 'no_responders') return undefined;
        if (failed.ok) return undefined;
        throw new MdpError(failed.error.code as 'transport_error', failed.error.message, { details: failed.error.details as Record<string, unknown> });
      }
      const parsed = decodeJson(CatalogAnswerSchema, answer);
      if (!parsed) throw new MdpError('transport_error', `Node ${JSON.stringify(entry.node)} sent a catalog that is not valid`);
      if (!parsed.ok || parsed.descriptor.id !== clientId) return undefined;
      return parsed.descriptor;
    });
  }

  async relayToNode(nodeId: string, payload: Uint8Array, options: OutgoingOptions = {}): Promise<RelayResult> {
    return this.relay(this.names.toNode(nodeId, 'relay'), nodeId, payload, options);
  }

  async relayToSession(sessionId: string, payload: Uint8Array, options: OutgoingOptions = {}): Promise<RelayResult> {
    return this.relay(this.names.session(sessionId), undefined, payload, options);
  }

  private async relay(subject: string, node: string | undefined, payload: Uint8Array, options: OutgoingOptions): Promise<RelayResult> {
    this.counters.requestsSent += 1;
    const result = await this.relayOnce(subject, node, payload, options);
    if (!result.ok) this.counters.requestsFailed += 1;
    return result;
  }

  private async relayOnce(subject: string, node: string | undefined, payload: Uint8Array, options: OutgoingOptions): Promise<RelayResult> {
    const unavailable = this.unavailable();
    if (unavailable && !unavailable.ok) {
      return unavailable.error.code === 'not_ready'
        ? { ok: false, reason: 'not_ready', message: unavailable.error.message, retryAfterMs: this.retryAfterMs() }
        : { ok: false, reason: 'failed', message: unavailable.error.message };
    }
    if (payload.length > this.maxBodyBytes)
      return { ok: false, reason: 'too_large', message: `The request is ${payload.length} bytes; the bus carries at most ${this.maxBodyBytes}` };
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    let answer: Uint8Array;
    try {
      answer =
        node === undefined
          ? await (this.wire as Wire).request(subject, payload, timeoutMs, options.signal)
          : await this.requestToNode(node, subject, payload, timeoutMs, options.signal);
    } catch (error) {
      const kind = error instanceof WireError ? error.kind : 'failed';
      switch (kind) {
        case 'no_responders':
          return { ok: false, reason: 'unknown', message: 'No node answers for it' };
        case 'timeout':
          return { ok: false, reason: 'timeout', message: `No answer within ${timeoutMs} ms` };
        case 'not_connected':
        case 'disconnected':
          return { ok: false, reason: 'not_ready', message: 'The fleet bus (NATS) was lost; try again shortly', retryAfterMs: this.retryAfterMs() };
        case 'too_large':
          return { ok: false, reason: 'too_large', message: (error as Error).message };
        case 'node_gone':
          return { ok: false, reason: 'unknown', message: 'The relay was cut short' };
        case 'aborted':
          return { ok: false, reason: 'failed', message: 'The relay was cut short' };
        default:
          return { ok: false, reason: 'failed', message: (error as Error).message };
      }
    }
    if (answer[0] === RELAY_OK) return { ok: true, payload: answer.subarray(1) };
    return { ok: false, reason: 'failed', message: Buffer.from(answer.subarray(1)).toString('utf8') || 'The node could not answer' };
  }

  async holdSession(sessionId: string, handler: SessionRelayHandler): Promise<() => void> {
    const nc = this.nc;
    if (!nc || this.state !== 'running') throw new Error('bus: holdSession() needs a started bus');
    this.sessions.get(sessionId)?.unsubscribe();
    const sub = nc.subscribe(this.names.session(sessionId), {
      callback: (_error, msg) => {
        const incoming = this.wire?.receive(msg);
        if (incoming?.reply) this.answerRelay(incoming.reply, incoming.body, handler);
      },
    });
    this.sessions.set(sessionId, sub);
    const release = (): void => {
      if (this.sessions.get(sessionId) !== sub) return;
      this.sessions.delete(sessionId);
      sub.unsubscribe();
    };
    // Once the server has the subscription (a PING answered after the SUB), a request for the
    // session from any node reaches it: the client may send its next request elsewhere at once.
    if (this.connected) await nc.flush().catch(() => undefined);
    return release;
  }

  // ----------------------------------------------------------------------------------------------
  // Incoming

  private onNodeMessage(msg: Msg): void {
    const wire = this.wire;
    if (!wire || this.state !== 'running') return;
    const parsed = this.names.parseNodeSubject(msg.subject);
    if (!parsed) return;
    const incoming = wire.receive(msg);
    if (!incoming) return;
    switch (parsed.op) {
      case 'call':
        if (incoming.reply) void this.answerCall(incoming.reply, incoming.body, parsed.client as string);
        return;
      case 'catalog':
        if (incoming.reply) this.answerCatalog(incoming.reply, incoming.body, parsed.client as string);
        return;
      case 'cancel': {
        const cancel = decodeJson(CancelSchema, incoming.body);
        if (cancel) this.incoming.get(cancel.id)?.abort();
        return;
      }
      case 'relay': {
        const relay = this.handlers.relay?.bind(this.handlers);
        if (!incoming.reply) return;
        if (!relay) {
          this.respond(incoming.reply, tagged(RELAY_FAILED, 'This node takes no relayed requests'));
          return;
        }
        this.answerRelay(incoming.reply, incoming.body, relay);
        return;
      }
    }
  }

  private async answerCall(reply: string, body: Uint8Array, clientToken: string): Promise<void> {
    const envelope = decodeCallEnvelope(body);
    if (!envelope || this.names.token(envelope.clientId) !== clientToken) {
      // The id in the body must be the one the subject names: no id answers for another.
      this.respond(reply, encodeJson(serverFailure('bad_request', 'Malformed bus call')));
      return;
    }
    if (!this.directory.isLocal(envelope.clientId)) {
      this.respond(
        reply,
        encodeJson(serverFailure('not_found', `Client ${JSON.stringify(envelope.clientId)} is not connected to node ${JSON.stringify(this.nodeId)}`)),
      );
      return;
    }
    const controller = new CallCancel();
    this.incoming.set(envelope.id, controller);
    this.counters.requestsServed += 1;
    let outcome: InvokeOutcome;
    try {
      outcome = await this.handlers.call(envelope.clientId, remoteCallOf(envelope), { timeoutMs: envelope.timeoutMs, signal: controller });
    } catch (error) {
      this.log.error('bus.call_handler_failed', { clientId: envelope.clientId, error });
      outcome = serverFailure('handler_error', 'Internal error');
    } finally {
      this.incoming.delete(envelope.id);
    }
    if (controller.aborted) return; // the caller went away: nobody reads the answer
    let answer = encodeJson(outcome);
    if (answer.length > this.maxBodyBytes) {
      answer = encodeJson(serverFailure('transport_error', `The answer is ${answer.length} bytes; the bus carries at most ${this.maxBodyBytes}`));
    }
    this.respond(reply, answer);
  }

  private answerCatalog(reply: string, body: Uint8Array, clientToken: string): void {
    const request = decodeJson(CatalogRequestSchema, body);
    let answer: CatalogAnswer;
    if (!request || this.names.token(request.clientId) !== clientToken) {
      answer = { ok: false, error: { code: 'bad_request', message: 'Malformed catalog request' } };
    } else {
      const descriptor = this.directory.isLocal(request.clientId) ? this.handlers.descriptor(request.clientId) : undefined;
      answer = descriptor ? { ok: true, descriptor } : { ok: false, error: { code: 'not_found', message: 'Client not on this node' } };
    }
    this.counters.requestsServed += 1;
    this.respond(reply, encodeJson(answer));
  }

  private answerRelay(reply: string, body: Uint8Array, handler: (payload: Uint8Array, signal: AbortSignal) => Promise<Uint8Array>): void {
    const controller = new AbortController();
    const id = randomUUID();
    this.incoming.set(id, controller);
    this.counters.requestsServed += 1;
    void (async () => {
      let answer: Uint8Array;
      try {
        answer = tagged(RELAY_OK, await handler(body, controller.signal));
      } catch (error) {
        this.log.error('bus.relay_handler_failed', { error });
        answer = tagged(RELAY_FAILED, 'Internal error');
      } finally {
        this.incoming.delete(id);
      }
      if (answer.length > this.maxBodyBytes) answer = tagged(RELAY_FAILED, 'The answer is too large for the bus');
      this.respond(reply, answer);
    })();
  }

  private respond(reply: string, body: Uint8Array): void {
    if (!this.wire?.respond(reply, body)) this.log.debug('bus.answer_dropped', { reason: 'not connected' });
  }

  // ----------------------------------------------------------------------------------------------
  // Status and figures

  onStatus(listener: (status: BusStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  onChange(listener: (changes: readonly DirectoryChange[]) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  metrics(): BusMetrics {
    let remote = 0;
    for (const _ of this.directory.remoteClients()) remote += 1;
    return {
      connected: this.connected,
      ready: this.ready,
      reconnects: this.counters.reconnects,
      requestsSent: this.counters.requestsSent,
      requestsFailed: this.counters.requestsFailed,
      requestsServed: this.counters.requestsServed,
      latency: { buckets: [...this.latencyBuckets], sumMs: this.counters.latencySum, count: this.counters.latencyCount },
      remoteClients: remote,
      directoryEntries: this.directory.size,
      nodes: this.directory.liveNodes().length,
      serverMaxPayload: this.wire?.serverMaxPayload ?? 0,
    };
  }

  /** `promise`, or nothing after `ms`; the timer goes with it (close leaves no timer behind). */
  private async within(promise: Promise<unknown>, ms: number): Promise<void> {
    let timer: unknown;
    await Promise.race([promise, new Promise<void>((resolve) => (timer = this.clock.setTimeout(resolve, ms)))]);
    this.clock.clearTimeout(timer);
  }

  private emit(status: BusStatus): void {
    for (const listener of [...this.statusListeners]) this.safely(() => listener(status));
  }

  private warn(message: string): void {
    this.log.warn('bus.warning', { message });
    this.emit({ type: 'warning', message });
  }

  private safely(run: () => void): void {
    try {
      run();
    } catch (error) {
      this.log.error('bus.listener_failed', { error });
    }
  }
}

/**
 * Why a client cannot be announced to the fleet, or undefined. Its announcement must fit in one
 * value of the clients bucket; core refuses such a registration in bus mode.
 */
export function announcementProblem(client: Pick<LocalClient, 'descriptor' | 'principal'>): string | undefined {
  if (Buffer.byteLength(client.descriptor.id) > MAX_FLEET_ID_BYTES) return `Client id is longer than ${MAX_FLEET_ID_BYTES} bytes, the most a fleet announces`;
  if (client.principal !== undefined && Buffer.byteLength(client.principal) > MAX_FLEET_ID_BYTES)
    return `Client principal is longer than ${MAX_FLEET_ID_BYTES} bytes`;
  return undefined;
}

function tagged(tag: number, body: Uint8Array | string): Uint8Array {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const out = new Uint8Array(bytes.length + 1);
  out[0] = tag;
  out.set(bytes, 1);
  return out;
}
