/** The public shape of a cluster node (`createClusterNode` in node.ts). */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HostApi } from '@mdp/core';
import type { MetaDocument } from '@mdp/protocol';
import type { ClusterConfigError } from './admission.js';
import type { LeaderView } from './election-driver.js';
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

export type ClusterView = MetaDocument['cluster'];
export type ClusterFeatures = MetaDocument['features'];

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
  /** The `features` object of GET /mdp/meta. */
  features(): ClusterFeatures;
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
  readonly host: HostApi;
  /** Timers this node holds (0 after close). */
  readonly activeTimers: number;
  /** Resign when leading, close every link, clear every timer. Idempotent. */
  close(): Promise<void>;
}

