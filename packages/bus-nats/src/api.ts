/**
 * What core sees of the bus: the seam "resolve a client that lives on another node" and "call it",
 * plus relays for HTTP loop sessions, status events and figures. Core keeps its local path; a
 * client it does not hold locally is looked up here.
 */
import type { CallSignal, InvokeOutcome } from '@mdp/core';
import type { ClientDescriptor } from '@mdp/protocol';
import type { RemoteClient } from './directory.js';
import type { RemoteCall } from './protocol.js';

/** One of this node's clients, as core announces it when it registers or changes its catalog. */
export interface LocalClient {
  /** Its descriptor (catalog); the id is `descriptor.id`. Fetched by other nodes on demand. */
  readonly descriptor: ClientDescriptor;
  /** Core's owner of the id (a hash under an auth policy, a page's origin, or undefined). */
  readonly principal: string | undefined;
  /** ms since the epoch. */
  readonly registeredAt: number;
  /** `websocket`, `http-loop`, … */
  readonly transport: string;
  readonly secure: boolean;
  readonly authSource: string;
  /** The `Origin` of the web page that registered it; undefined for other programs. */
  readonly origin?: string | undefined;
}

export interface IncomingCallOptions {
  /** Time the client has to answer, ms: the caller's time-out. */
  readonly timeoutMs: number;
  /** Aborted when the caller gives up or the bus closes. */
  readonly signal: CallSignal;
}

/** What the node does for requests that other nodes send it. Core implements these. */
export interface BusHandlers {
  /** Call one of this node's clients for a caller elsewhere; same outcome as a local call. */
  call(clientId: string, call: RemoteCall, options: IncomingCallOptions): Promise<InvokeOutcome>;
  /** The descriptor of one of this node's clients, or undefined when it is not here. */
  descriptor(clientId: string): ClientDescriptor | undefined;
  /**
   * A newer registration of `clientId` holds it on `byNode` (SPEC §4, fleet-wide): close the
   * older session here with 4000. The bus has already forgotten it as a local client.
   */
  replaced(clientId: string, byNode: string): void;
  /** A request relayed to this node (`relayToNode`); what it resolves with is the answer. */
  relay?(payload: Uint8Array, signal: AbortSignal): Promise<Uint8Array>;
}

export interface OutgoingOptions {
  /** Time to wait for the answer, ms. */
  readonly timeoutMs?: number;
  /** The caller went away: the request ends at once (and a call is cancelled on its node). An AbortSignal will do. */
  readonly signal?: CallSignal;
}

/** How a relay ended. `unknown`: nobody holds the session (or the node is gone): answer 404. */
export type RelayResult =
  | { readonly ok: true; readonly payload: Uint8Array }
  | {
      readonly ok: false;
      readonly reason: 'unknown' | 'not_ready' | 'timeout' | 'too_large' | 'failed';
      readonly message: string;
      readonly retryAfterMs?: number;
    };

/** Answers one relayed request for a session this node holds. */
export type SessionRelayHandler = (payload: Uint8Array, signal: AbortSignal) => Promise<Uint8Array>;

export type BusStatus =
  /** Connected to a NATS server (first time or again), buckets bound. */
  | { readonly type: 'connected'; readonly server: string; readonly maxPayload: number }
  /** The directory is whole: both watches delivered their snapshot. */
  | { readonly type: 'ready' }
  /** The connection is lost: remote calls fail with `not_ready` until it is back. */
  | { readonly type: 'disconnected'; readonly reason: string }
  | { readonly type: 'nodeUp'; readonly node: string }
  | { readonly type: 'nodeDown'; readonly node: string }
  /** Something failed that the bus retries by itself (a write, a watch); for logs. */
  | { readonly type: 'warning'; readonly message: string }
  | { readonly type: 'closed' };

/** What `onChange` tells: one remote client, or every client of one node at once (it came up or went). */
export type DirectoryChange =
  | { readonly kind: 'added' | 'updated' | 'removed'; readonly clientId: string }
  | { readonly kind: 'added' | 'removed'; readonly node: string; readonly clientIds: readonly string[] };

/** Upper bounds of the call latency histogram, ms. */
export const LATENCY_BUCKETS_MS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000] as const;

/** The bucket of {@link LATENCY_BUCKETS_MS} a latency of `ms` counts in (`length`: over the last bound). */
export function latencyBucket(ms: number): number {
  for (let i = 0; i < LATENCY_BUCKETS_MS.length; i++) if (ms <= LATENCY_BUCKETS_MS[i]!) return i;
  return LATENCY_BUCKETS_MS.length;
}

export interface BusMetrics {
  readonly connected: boolean;
  readonly ready: boolean;
  /** Times the connection came back after a loss. */
  readonly reconnects: number;
  /** Calls and relays this node sent, and how many of them failed (any `ok: false`). */
  readonly requestsSent: number;
  readonly requestsFailed: number;
  /** Calls and relays this node answered for others. */
  readonly requestsServed: number;
  /** Latency of calls sent, ms: counts per bucket of {@link LATENCY_BUCKETS_MS} (and one over), sum, count. */
  readonly latency: { readonly buckets: readonly number[]; readonly sumMs: number; readonly count: number };
  /** Clients of other live nodes in the view, and entries held in memory (live or not). */
  readonly remoteClients: number;
  readonly directoryEntries: number;
  /** Other nodes alive. */
  readonly nodes: number;
  /** The NATS server's `max_payload`, bytes. */
  readonly serverMaxPayload: number;
}

export interface NatsBus {
  readonly nodeId: string;
  /** Connected and the directory is whole. */
  readonly ready: boolean;
  /** Connect, bind the buckets, start watching and announcing. Rejects with a clear message when it cannot. */
  start(): Promise<void>;
  /** Leave the fleet (our keys are deleted, so others drop our clients at once), fail what is pending, disconnect. Idempotent. */
  close(): Promise<void>;

  /** One of this node's clients registered or changed its catalog. */
  announce(client: LocalClient): void;
  /** One of this node's clients left. */
  withdraw(clientId: string): void;

  /** The client `clientId` when another live node holds it. */
  resolve(clientId: string): RemoteClient | undefined;
  remoteClients(): RemoteClient[];
  /**
   * The descriptor of a remote client, fetched from its node (cached by digest); undefined when no
   * live node has it. Rejects with an MdpError (`not_ready`, `transport_error`, `timeout`) when its
   * node cannot be asked.
   */
  descriptor(clientId: string, options?: OutgoingOptions): Promise<ClientDescriptor | undefined>;
  /**
   * The descriptor of a remote client when this node has it cached at the client's current digest,
   * at once (no request, no promise); undefined otherwise: ask {@link descriptor}.
   */
  cachedDescriptor(clientId: string): ClientDescriptor | undefined;
  /** Call a remote client: one request to its node. Never rejects: failures are `ok: false`. */
  call(clientId: string, call: RemoteCall, options?: OutgoingOptions): Promise<InvokeOutcome>;

  /** Send `payload` to node `nodeId`'s `relay` handler. */
  relayToNode(nodeId: string, payload: Uint8Array, options?: OutgoingOptions): Promise<RelayResult>;
  /**
   * Answer relayed requests for HTTP loop session `sessionId` here. Resolves with the release once
   * NATS has the subscription (answer `/connect` after it: the next request may land elsewhere).
   */
  holdSession(sessionId: string, handler: SessionRelayHandler): Promise<() => void>;
  /** Send `payload` to whichever node holds session `sessionId`; `unknown` when none does. */
  relayToSession(sessionId: string, payload: Uint8Array, options?: OutgoingOptions): Promise<RelayResult>;

  onStatus(listener: (status: BusStatus) => void): () => void;
  onChange(listener: (changes: readonly DirectoryChange[]) => void): () => void;
  metrics(): BusMetrics;
}
