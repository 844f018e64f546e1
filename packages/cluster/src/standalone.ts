/**
 * A standalone node: leader of one in term 0, no discovery, no election, no timers of its own (a
 * mirror into an explicit upstream aside). Host requests are answered from the local router.
 */
import { NO_SERVER_IDS, createLocalHost } from '@mdp/core';
import { standaloneClusterView } from '@mdp/protocol';
import type { ClusterNode, ClusterSelf } from './api.js';
import { TimerSet } from './clock.js';
import { UPGRADE_NOT_FOUND } from './links.js';
import type { ResolvedOptions } from './options.js';
import { createUpstreamProxy } from './upstream.js';

export function createStandalone(o: ResolvedOptions): ClusterNode {
  const timers = new TimerSet(o.clock, (error) => o.logger.error('cluster.timer_failed', { error }));
  let self: ClusterSelf | undefined;
  let closing: Promise<void> | undefined;
  const proxy = o.upstreamUrl ? createUpstreamProxy(o, timers) : undefined;
  return {
    serverId: o.serverId,
    clusterId: o.clusterId,
    mode: o.mode,
    start(s) {
      if (self || closing) return;
      self = s;
      proxy?.setUpstream(o.upstreamUrl);
    },
    handleUpgrade(_request, socket) {
      socket.end(UPGRADE_NOT_FOUND);
    },
    // A cluster of one: no server's prefix to alias under, no member to mirror into it.
    isServerId: NO_SERVER_IDS,
    mirrorPeer: () => undefined,
    meta: () => standaloneClusterView(o.clusterId, o.serverId, self?.wsUrl ?? '', o.leaseDurationMs),
    features: () => ({ upstreamProxy: proxy !== undefined, clusterControl: false }),
    // A server that is a cluster of one by choice keeps to its own port.
    servesDefaultPort: () => false,
    onLeaderChange: () => () => undefined,
    onConfigError: () => () => undefined,
    proxyStatus: () => proxy?.status() ?? { state: 'idle' },
    onProxyStatus: (listener) => proxy?.onStatus(listener) ?? (() => undefined),
    hostApi: createLocalHost(o.router, o.tenancy ? { tenancy: o.tenancy } : {}),
    get activeTimers() {
      return timers.size;
    },
    // Takes no control links and no mirrors: no proofs to remember.
    rememberedProofs: 0,
    close() {
      closing ??= (async () => {
        await proxy?.close();
        timers.close();
      })();
      return closing;
    },
  };
}
