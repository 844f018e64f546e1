/**
 * The fleet bus's figures in /metrics (SPEC §15, §16), read from `bus.metrics()` when scraped:
 * whether it is connected, requests sent, failed and answered for other nodes, their latency, the
 * directory's size, reconnects.
 */
import { Counter, Gauge, type Metric, type Registry } from 'prom-client';
import { LATENCY_BUCKETS_MS, type BusMetrics } from '@mdp/bus-nats/lite';

/** Register the bus's metrics in `registers`; `figures` is read at each scrape (undefined before the bus exists). */
export function busGauges(registers: Registry[], figures: () => BusMetrics | undefined): void {
  const gauge = (name: string, help: string, read: (bus: BusMetrics) => number): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const bus = figures();
        this.set(bus ? read(bus) : 0);
      },
    });
  };
  const counter = (name: string, help: string, read: (bus: BusMetrics) => number): void => {
    new Counter({
      name,
      help,
      registers,
      collect() {
        this.reset();
        const bus = figures();
        if (bus) this.inc(read(bus));
      },
    });
  };
  gauge('mdp_bus_connected', '1 while this node is connected to NATS, else 0', (bus) => (bus.connected ? 1 : 0));
  gauge('mdp_bus_ready', '1 while connected and the fleet directory is whole, else 0', (bus) => (bus.ready ? 1 : 0));
  gauge('mdp_bus_nodes', 'Other live nodes of the fleet', (bus) => bus.nodes);
  gauge('mdp_bus_remote_clients', 'Clients of other live nodes in this node’s directory', (bus) => bus.remoteClients);
  gauge('mdp_bus_directory_entries', 'Entries the directory holds in memory, live or not', (bus) => bus.directoryEntries);
  gauge('mdp_bus_server_max_payload_bytes', 'The NATS server’s max_payload (larger messages go in parts)', (bus) => bus.serverMaxPayload);
  counter('mdp_bus_reconnects_total', 'Times the NATS connection came back after a loss', (bus) => bus.reconnects);
  counter('mdp_bus_requests_total', 'Calls and relays this node sent to other nodes', (bus) => bus.requestsSent);
  counter('mdp_bus_request_failures_total', 'Calls and relays this node sent that failed (any ok: false)', (bus) => bus.requestsFailed);
  counter('mdp_bus_requests_served_total', 'Calls, catalogs and relays this node answered for other nodes', (bus) => bus.requestsServed);
  for (const registry of registers) registry.registerMetric(latencyHistogram(figures));
}

/** Latency of the calls this node sent over the bus, from the bus's own buckets (ms, not cumulative). */
function latencyHistogram(figures: () => BusMetrics | undefined): Metric {
  const name = 'mdp_bus_request_duration_seconds';
  const help = 'Time from a call sent to another node to its outcome';
  const get = async () => {
    const latency = figures()?.latency;
    const counts = latency?.buckets ?? [];
    const values: Array<{ metricName: string; labels: Record<string, string>; value: number }> = [];
    let cumulative = 0;
    LATENCY_BUCKETS_MS.forEach((le, i) => {
      cumulative += counts[i] ?? 0;
      values.push({ metricName: `${name}_bucket`, labels: { le: String(le / 1000) }, value: cumulative });
    });
    const count = latency?.count ?? 0;
    values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf' }, value: count });
    values.push({ metricName: `${name}_sum`, labels: {}, value: (latency?.sumMs ?? 0) / 1000 });
    values.push({ metricName: `${name}_count`, labels: {}, value: count });
    return { name, help, type: 'histogram', aggregator: 'sum', values };
  };
  return { name, help, type: 'histogram', aggregator: 'sum', get, reset: () => undefined } as unknown as Metric;
}
