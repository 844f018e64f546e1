/**
 * The Prometheus metrics of one server (prom-client): gauges read the router, the HTTP loop and the
 * cluster when scraped; the invocation counter and histogram read {@link CallStats}, which the
 * call-end observer fills. Node's process metrics are collected once per process, however many
 * servers it runs (tests run dozens), and rendered ahead of the server's own.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { CLUSTER_ROLES, proxyMarker } from '@mdp/protocol';
import { systemClock, type Router } from '@mdp/core';
import type { ClusterNode } from '@mdp/cluster';
import type { BusMetrics } from '@mdp/bus-nats/lite';
import type { KeySetStatus } from './access-tokens.js';
import { busGauges } from './bus-metrics.js';
import { CALL_OUTCOMES, CALL_ROUTES, DURATION_BUCKETS_S, type CallStats } from './call-stats.js';

export interface MetricsSources {
  readonly router: Router;
  readonly stats: CallStats;
  /** Messages queued for HTTP loop sessions, not yet polled. */
  queuedMessages(): number;
  /** Bytes read from and written to every connection since the server started. */
  bytes(): { readonly received: number; readonly sent: number };
  /** The cluster node, once the server listens. */
  cluster(): ClusterNode | undefined;
  /** Times the known leader changed. */
  leaderChanges(): number;
  /** The access tokens' key set, when the server takes access tokens (SPEC §17). */
  keySet?(): KeySetStatus | undefined;
  /** The fleet bus's figures, in bus mode (SPEC §16; bus-metrics.ts). */
  bus?(): BusMetrics | undefined;
}

export interface ServerMetrics {
  readonly contentType: string;
  /** The exposition text: process metrics, then the server's. */
  text(): Promise<string>;
}

let processRegistry: Registry | undefined;

/**
 * CPU, memory, handles, event loop lag and GC of this process: one collector per process, started
 * by the first scrape (its event loop monitor samples every 10 ms; a server nobody scrapes skips it).
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * What prom-client's registry reads of a metric to render it. (Its typings call `type` an enum; at
 * run time, and in the text it writes, it is the Prometheus type name.)
 */
interface RenderedMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'histogram';
  readonly aggregator: 'sum';
  readonly values: Array<{ readonly metricName: string; readonly labels: Record<string, string>; readonly value: number }>;
}

/**
 * The latency histogram, rendered by prom-client from the arrays of CallStats: prom-client's own
 * Histogram hashes its labels on every observation, which is what the arrays avoid. The registry
 * takes it like any metric; it reads only `get` (and `reset` when asked to reset).
 */
function scrapedHistogram(name: string, help: string, stats: CallStats): Metric {
  const get = async (): Promise<RenderedMetric> => {
    const values: RenderedMetric['values'] = [];
    for (const route of CALL_ROUTES) {
      const { cumulative, sum } = stats.histogram(route);
      DURATION_BUCKETS_S.forEach((le, i) => {
        values.push({ metricName: `${name}_bucket`, labels: { route, le: String(le) }, value: cumulative[i] as number });
      });
      const count = cumulative[cumulative.length - 1] as number;
      values.push({ metricName: `${name}_bucket`, labels: { route, le: '+Inf' }, value: count });
      values.push({ metricName: `${name}_sum`, labels: { route }, value: sum });
      values.push({ metricName: `${name}_count`, labels: { route }, value: count });
    }
    return { name, help, type: 'histogram', aggregator: 'sum', values };
  };
  const metric = { name, help, type: 'histogram', aggregator: 'sum', get, reset: () => undefined };
  return metric as unknown as Metric;
}

export function createServerMetrics(sources: MetricsSources): ServerMetrics {
  const { router, stats } = sources;
  const registry = new Registry();
  const registers = [registry];

  new Gauge({
    name: 'mdp_sessions',
    help: 'Open client sessions by transport',
    labelNames: ['transport'],
    registers,
    collect() {
      this.reset();
      for (const [transport, count] of router.sessionCounts()) this.set({ transport }, count);
    },
  });
  new Gauge({
    name: 'mdp_clients',
    help: 'Registered clients by transport',
    labelNames: ['transport'],
    registers,
    collect() {
      this.reset();
      const counts = new Map<string, number>();
      for (const client of router.listClients()) counts.set(client.transportKind, (counts.get(client.transportKind) ?? 0) + 1);
      for (const [transport, count] of counts) this.set({ transport }, count);
    },
  });
  new Gauge({
    name: 'mdp_paths',
    help: 'Paths published by registered clients, by type',
    labelNames: ['type'],
    registers,
    collect() {
      const counts: Record<string, number> = { endpoint: 0, prompt: 0, skill: 0 };
      for (const client of router.listClients()) for (const path of client.paths) counts[path.type] = (counts[path.type] ?? 0) + 1;
      for (const [type, count] of Object.entries(counts)) this.set({ type }, count);
    },
  });
  new Gauge({
    name: 'mdp_catalog_bytes',
    help: 'Bytes of JSON in all registered catalogs together (what --max-total-catalog-bytes caps)',
    registers,
    collect() {
      this.set(router.catalogBytes);
    },
  });
  new Counter({
    name: 'mdp_invocations_total',
    help: 'Calls routed to clients, by route (skill, host, mcp, cluster) and outcome (ok or error code)',
    labelNames: ['route', 'outcome'],
    registers,
    collect() {
      this.reset();
      for (const route of CALL_ROUTES) {
        for (const outcome of CALL_OUTCOMES) {
          const count = stats.count(route, outcome);
          if (count > 0) this.inc({ route, outcome }, count);
        }
      }
    },
  });
  registry.registerMetric(scrapedHistogram('mdp_invocation_duration_seconds', 'Time from a call to its outcome, by route', stats));
  new Gauge({
    name: 'mdp_http_loop_queued_messages',
    help: 'Messages queued for HTTP loop sessions and not yet polled',
    registers,
    collect() {
      this.set(sources.queuedMessages());
    },
  });
  new Counter({
    name: 'mdp_bytes_received_total',
    help: 'Bytes read from HTTP and websocket connections',
    registers,
    collect() {
      this.reset();
      this.inc(sources.bytes().received);
    },
  });
  new Counter({
    name: 'mdp_bytes_sent_total',
    help: 'Bytes written to HTTP and websocket connections',
    registers,
    collect() {
      this.reset();
      this.inc(sources.bytes().sent);
    },
  });
  new Gauge({
    name: 'mdp_cluster_role',
    help: 'This server’s cluster role (1 for the current one)',
    labelNames: ['role'],
    registers,
    collect() {
      const role = sources.cluster()?.meta().role;
      for (const candidate of CLUSTER_ROLES) this.set({ role: candidate }, candidate === role ? 1 : 0);
    },
  });
  new Gauge({
    name: 'mdp_cluster_term',
    help: 'Current election term (0 standalone)',
    registers,
    collect() {
      this.set(sources.cluster()?.meta().term ?? 0);
    },
  });
  new Gauge({
    name: 'mdp_cluster_leader_known',
    help: '1 when this server knows the cluster leader (itself included), else 0',
    registers,
    collect() {
      this.set(sources.cluster()?.meta().leaderId ? 1 : 0);
    },
  });
  new Counter({
    name: 'mdp_cluster_leader_changes_total',
    help: 'Times the known cluster leader changed',
    registers,
    collect() {
      this.reset();
      this.inc(sources.leaderChanges());
    },
  });
  new Gauge({
    name: 'mdp_cluster_mirroring',
    help: '1 while this server mirrors its clients into an upstream hub, else 0',
    registers,
    collect() {
      this.set(sources.cluster()?.proxyStatus().state === 'mirroring' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'mdp_cluster_mirrored_clients',
    help: 'Clients registered here that mirror another server’s clients',
    registers,
    collect() {
      let count = 0;
      for (const client of router.listClients()) if (proxyMarker(client.descriptor)) count++;
      this.set(count);
    },
  });

  if (sources.keySet) {
    const keySet = sources.keySet;
    new Gauge({
      name: 'mdp_auth_key_set_state',
      help: 'The access tokens’ key set (1 for the current state): ok, stale (the last fetch failed, cached keys in use) or unavailable (no keys)',
      labelNames: ['state'],
      registers,
      collect() {
        const state = keySet()?.state;
        for (const candidate of ['ok', 'stale', 'unavailable']) this.set({ state: candidate }, candidate === state ? 1 : 0);
      },
    });
    new Gauge({
      name: 'mdp_auth_key_set_age_seconds',
      help: 'Seconds since the access tokens’ key set was last fetched (-1 before the first fetch)',
      registers,
      collect() {
        const at = keySet()?.fetchedAt;
        this.set(at === undefined ? -1 : (systemClock.wallNow() - at) / 1000);
      },
    });
    new Counter({
      name: 'mdp_auth_key_set_fetch_failures_total',
      help: 'Fetches of the access tokens’ key set (or of the issuer’s discovery document) that failed',
      registers,
      collect() {
        this.reset();
        this.inc(keySet()?.failures ?? 0);
      },
    });
  }

  if (sources.bus) busGauges(registers, sources.bus);

  return {
    contentType: registry.contentType,
    async text() {
      const [own, process] = await Promise.all([registry.metrics(), processMetrics().metrics()]);
      return `${process}\n${own}`;
    },
  };
}
