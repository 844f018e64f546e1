/**
 * `GET /healthz` (the process answers) and `GET /readyz` (listening and, in a cluster, a leader
 * known: a load balancer sends clients only where calls can be routed), SPEC §15.
 */
import type { ServerFeature } from '../feature.js';
import type { ServerContext } from '../feature.js';
import { readRoute, type ReadGuard } from '../read-route.js';
import type { ClusterFeature } from './cluster.js';

/** Why the server is not ready, or `undefined` when it is. */
export function notReadyReason(ctx: ServerContext, cluster: ClusterFeature): string | undefined {
  if (!ctx.info()) return 'not listening';
  const node = cluster.node;
  if (!node) return 'cluster not started';
  return node.meta().leaderId === '' ? 'no cluster leader known' : undefined;
}

export function healthFeature(ctx: ServerContext, cluster: ClusterFeature, guard: ReadGuard): ServerFeature {
  return {
    name: 'health',
    routes(app) {
      readRoute(app, '/healthz', guard, (c) => c.json({ status: 'ok' }, 200, { 'cache-control': 'no-store' }));
      readRoute(app, '/readyz', guard, (c) => {
        const reason = notReadyReason(ctx, cluster);
        if (reason) return c.json({ ready: false, reason }, 503, { 'cache-control': 'no-store' });
        const view = cluster.node!.meta();
        return c.json({ ready: true, role: view.role, term: view.term, leaderId: view.leaderId }, 200, { 'cache-control': 'no-store' });
      });
    },
  };
}
