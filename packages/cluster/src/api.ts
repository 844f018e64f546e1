/** The public shape of a cluster node (`createClusterNode` in node.ts). */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HeaderMap, HostApi } from '@mdp/core';
import type { ClusterView, FeaturesView } from '@mdp/protocol';
import type { ClusterConfigError } from './join-rules.js';
import type { LeaderView } from './election-driver.js';
import type { MirrorPeer } from './mirror-proof.js';
import type { ClusterMode } from './options.js';
import type { ProxyStatus } from './proxy.js';

/** Where this server can be reached; known once it listens. */
export interface ClusterSelf {
  /** MDP websocket URL (what followers mirror into when this node leads). */
  readonly wsUrl: string;
  /** Control websocket URL, `ws://host:port/mdp/cluster`. */
  readonly clusterUrl: string;
  readonly metaUrl: string;
}

export interface LeaderChange {
  readonly role: LeaderView['role'];
  readonly term: number;
  /** Undefined while no leader is known. */
  readonly leaderId: string | undefined;
  readonly leaderUrl: string | undefined;
  readonly previousLeaderId: string | undefined;
}

export interface ClusterNode {
  readonly serverId: string;
  readonly clusterId: string;
  readonly mode: ClusterMode;
  /** Join the cluster: discovery, links and timers start. Call once the server listens. */
  start(self: ClusterSelf): void;
  /** Take an HTTP upgrade for `/mdp/cluster`. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** The `cluster` object of GET /mdp/meta, live. */
  meta(): ClusterView;
  /**
   * Whether `id` is this server's id or a member's (present or departed): the prefixes a mirrored
   * client id may carry, so the only ones under which client ids alias each other (`isServerId` of
   * `createLocalHost`). Always false for a standalone node: no aliases.
   */
  isServerId(id: string): boolean;
  /**
   * The member a websocket upgrade proves it is a mirror link of (its `x-mdp-cluster-mirror` header,
   * an HMAC under the cluster secret meant for this server), and the principal of the client it
   * mirrors; `undefined` when it proves nothing (always without a cluster secret, and standalone).
   * Under an auth policy only such a link registers that member's mirrored ids (`Router` of
   * `@mdp/core`, opened with it as the session's `peer`).
   */
  mirrorPeer(headers: HeaderMap): MirrorPeer | undefined;
  /** The `features` object of GET /mdp/meta. */
  features(): FeaturesView;
  /**
   * Whether this server should also serve the first port of the discovery range (the port clients
   * know) when it is free: it leads, and that port was last held by nobody, by itself or by a member
   * of this cluster (never by another cluster's or another user's server). Ask again on every leader
   * change; the server binds and releases the port.
   */
  servesDefaultPort(): boolean;
  /** Role, term or leader changed. Returns the unsubscribe. */
  onLeaderChange(listener: (change: LeaderChange) => void): () => void;
  onConfigError(listener: (error: ClusterConfigError) => void): () => void;
  proxyStatus(): ProxyStatus;
  onProxyStatus(listener: (status: ProxyStatus) => void): () => void;
  /**
   * The host contract (`@mdp/core`): answered from the local router while this node leads (or is
   * standalone), by the leader over cluster RPC while another node leads; during an election a
   * request waits for the next leader.
   */
  readonly hostApi: HostApi;
  /** Timers this node holds (0 after close). */
  readonly activeTimers: number;
  /** Cluster proofs this node remembers, to accept each once (proof-memory.ts); 0 after close. */
  readonly rememberedProofs: number;
  /** Resign when leading, close every link, clear every timer. Idempotent. */
  close(): Promise<void>;
}
