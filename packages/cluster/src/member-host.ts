/**
 * The host API of a cluster member, put together: cluster RPC (rpc.ts) answering peers from the
 * local router while this node leads and carrying its own requests to the leader, and the host
 * (host-routing.ts) that routes each request by the election's view and the links that are up. The node
 * feeds the RPC the frames its links receive (`rpc.receive`) and the peers they lose (`rpc.failPeer`).
 */
import type { HostApi, Logger } from '@mdp/core';
import type { TimerSet } from './clock.js';
import type { ElectionDriver } from './election-driver.js';
import { createClusterHost, routeOf, type ClusterHost } from './host-routing.js';
import type { LinkManager } from './links.js';
import { hostTimingsOf, type ResolvedOptions } from './options.js';
import { ClusterRpc, rpcPageBytes } from './rpc.js';

export interface MemberHostPorts {
  /** This node's own router as a host. */
  readonly local: HostApi;
  /** The election; undefined until the node started. */
  election(): Pick<ElectionDriver, 'view' | 'memberCount'> | undefined;
  /** The control links; undefined until the node started. */
  links(): Pick<LinkManager, 'isUp' | 'send' | 'refusal'> | undefined;
  /** Subscribe to what may change the route (a leader change, a link up or down, a member gone). */
  onRouteChange(listener: () => void): () => void;
}

export interface MemberHost {
  readonly hostApi: ClusterHost;
  readonly rpc: ClusterRpc;
}

export function createMemberHost(o: ResolvedOptions, timers: TimerSet, logger: Logger, ports: MemberHostPorts): MemberHost {
  const { local, election, links } = ports;
  const rpc = new ClusterRpc({
    host: local,
    leads: () => election()?.view().role === 'leader',
    timers,
    logger,
    send: (to, body) => {
      const view = election()?.view();
      // Every cluster message carries the sender's cluster, id and term, and the wall-clock time.
      return (
        view !== undefined &&
        (links()?.send(to, { ...body, clusterId: o.clusterId, serverId: o.serverId, term: view.term, timestamp: o.clock.wallNow() }) ?? false)
      );
    },
    refusal: (peerId) => links()?.refusal(peerId),
    // A listing page must fit in one frame of the link it goes back on.
    maxPageBytes: rpcPageBytes(o.maxPayloadBytes),
  });
  // With no leader, a node that knows no other member answers itself (routeOf).
  const alone = (): boolean => (election()?.memberCount() ?? 1) <= 1;
  const route = () => routeOf(election()?.view(), o.serverId, (id) => links()?.isUp(id) === true, alone());
  const hostApi = createClusterHost({ local, rpc, route, onRouteChange: ports.onRouteChange, clock: o.clock, timers, logger }, hostTimingsOf(o));
  return { hostApi, rpc };
}
