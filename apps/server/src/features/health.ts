/**
 * `GET /healthz` (the process answers) and `GET /readyz` (listening and, in a cluster, a leader
 * known: a load balancer sends clients only where calls can be routed), SPEC §15.
 */
import type { ServerFeature } from '../feature.js';
import type { ServerContext } from '../feature.js';
import { readRoute, type ReadGuard } from '../read-route.js';
import type { BusFeature } from './bus.js';
import type { ClusterFeature } from './cluster.js';

/** Why the server is not ready, or `undefined` when it is. */
export function notReadyReason(ctx: ServerContext, cluster: ClusterFeature, bus?: BusFeature): string | undefined {
  if (!ctx.info()) return 'not listening';
  // In a fleet (SPEC §16) a node without the bus reaches only its own clients.
  const fleet = bus?.notReady();
  if (fleet) return fleet;
  const node = cluster.node;
  if (!node) return 'cluster not started';
  if (node.meta().leaderId === '') return 'no cluster leader known';
  // Access tokens cannot be checked without a key set (static tokens still could be).
  const keySet = ctx.accessTokens?.status();
  if (keySet?.state === 'unavailable') return `access token key set not loaded: ${keySet.error ?? 'not fetched yet'}`;
  return undefined;
}

export function healthFeature(ctx: ServerContext, cluster: ClusterFeature, guard: ReadGuard, bus?: BusFeature): ServerFeature {
  return {
    name: 'health',
    routes(app) {
      readRoute(app, '/healthz', guard, (c) => c.json({ status: 'ok' }, 200, { 'cache-control': 'no-store' }));
      readRoute(app, '/readyz', guard, (c) => {
        const reason = notReadyReason(ctx, cluster, bus);
        if (reason) return c.json({ ready: false, reason }, 503, { 'cache-control': 'no-store' });
        const view = cluster.node!.meta();
        const keySet = ctx.accessTokens?.status();
        // A key set that could not be fetched again: cached keys still verify, so still ready, but said.
        const auth = keySet ? { auth: { keySet: keySet.state, ...(keySet.error !== undefined ? { keySetError: keySet.error } : {}) } } : {};
        const figures = bus?.metrics();
        const fleet = figures ? { bus: { connected: figures.connected, nodes: figures.nodes, remoteClients: figures.remoteClients } } : {};
        return c.json({ ready: true, role: view.role, term: view.term, leaderId: view.leaderId, ...auth, ...fleet }, 200, { 'cache-control': 'no-store' });
      });
    },
  };
}
