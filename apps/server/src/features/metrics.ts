/**
 * `GET /metrics` (SPEC §15): the Prometheus text format. Calls are counted by the call-end
 * observer into flat arrays (call-stats.ts); everything else is read when scraped. Bytes in and
 * out are the totals of every connection's socket, closed ones added as they close.
 *
 * prom-client (with the OpenTelemetry API it imports, a tenth of the server's code) is imported by
 * the first scrape, not at start: every metric is read from these sources when scraped, so one made
 * then reports what one made at start would.
 */
import type { Socket } from 'node:net';
import { CallStats } from '../call-stats.js';
import type { ServerContext, ServerFeature } from '../feature.js';
import type { MetricsSources, ServerMetrics } from '../metrics.js';
import { readRoute, type ReadGuard } from '../read-route.js';
import type { BusFeature } from './bus.js';
import type { ClusterFeature } from './cluster.js';
import type { HttpLoopFeature } from './http-loop.js';

export interface MetricsFeatureOptions {
  readonly cluster: ClusterFeature;
  readonly httpLoop: HttpLoopFeature;
  /** Who may scrape; `undefined` lets everyone. */
  readonly guard: ReadGuard;
  /** The fleet bus, in bus mode: its figures join the scrape. */
  readonly bus?: BusFeature | undefined;
}

export function metricsFeature(ctx: ServerContext, options: MetricsFeatureOptions): ServerFeature {
  const stats = new CallStats();
  ctx.observeCalls((record) => stats.record(record));
  const open = new Set<Socket>();
  let closedReceived = 0;
  let closedSent = 0;
  let leaderChanges = 0;
  let unsubscribe: (() => void) | undefined;

  // One function for every socket, with the socket as `this` ('close' comes once): no closure per connection.
  function onSocketClosed(this: Socket): void {
    open.delete(this);
    closedReceived += this.bytesRead;
    closedSent += this.bytesWritten;
  }

  const sources: MetricsSources = {
    router: ctx.router,
    stats,
    queuedMessages: () => options.httpLoop.queuedMessages,
    bytes() {
      let received = closedReceived;
      let sent = closedSent;
      for (const socket of open) {
        received += socket.bytesRead;
        sent += socket.bytesWritten;
      }
      return { received, sent };
    },
    cluster: () => options.cluster.node,
    leaderChanges: () => leaderChanges,
    ...(ctx.accessTokens ? { keySet: () => ctx.accessTokens?.status() } : {}),
    ...(options.bus ? { bus: () => options.bus?.metrics() } : {}),
  };
  let loading: Promise<ServerMetrics> | undefined;
  const serverMetrics = (): Promise<ServerMetrics> => {
    loading ??= import('../metrics.js').then(
      ({ createServerMetrics }) => createServerMetrics(sources),
      (error: unknown) => {
        // The next scrape tries again.
        loading = undefined;
        throw error;
      },
    );
    return loading;
  };

  return {
    name: 'metrics',
    routes(app) {
      readRoute(app, '/metrics', options.guard, async (c) => {
        const metrics = await serverMetrics();
        return c.body(await metrics.text(), 200, { 'content-type': metrics.contentType });
      });
    },
    connection(socket) {
      open.add(socket);
      socket.on('close', onSocketClosed);
    },
    // Listed after the cluster feature, so its node exists by now.
    start() {
      unsubscribe = options.cluster.node?.onLeaderChange((change) => {
        if (change.leaderId !== change.previousLeaderId) leaderChanges++;
      });
    },
    close() {
      unsubscribe?.();
      unsubscribe = undefined;
    },
  };
}
