/**
 * The impure side of `departures.ts`: every `intervalMs`, probe `GET /mdp/meta` at the address of
 * each member that has no control link up and lives on the discovery host, and report what each
 * probe showed. One probe per member at a time; a probe that outlives the watch reports nothing.
 */
import type { TimerSet } from './clock.js';
import type { ProbeOutcome } from './departures.js';
import { probeOutcome } from './departures.js';
import type { MemberEntry } from './membership.js';
import { probeMeta, type ProbeResult } from './meta-probe.js';
import type { ResolvedOptions } from './options.js';

export interface DepartureWatchOptions {
  /** Time between two probes of one silent member, ms. */
  readonly intervalMs: number;
  /** Time allowed for one probe, ms. */
  readonly probeTimeoutMs: number;
  readonly timers: TimerSet;
  /** Members to probe now: no link up, an address on the discovery host. */
  absent(): Iterable<MemberEntry>;
  report(id: string, outcome: ProbeOutcome): void;
  readonly probe?: (url: string, options: { timeoutMs: number; signal: AbortSignal }) => Promise<ProbeResult>;
}

export class DepartureWatch {
  private readonly abort = new AbortController();
  private readonly probing = new Set<string>();
  private cancel: (() => void) | undefined;
  private closed = false;

  constructor(private readonly options: DepartureWatchOptions) {}

  start(): void {
    this.schedule();
  }

  private schedule(): void {
    this.cancel = this.options.timers.after(this.options.intervalMs, () => {
      this.schedule();
      this.round();
    });
  }

  private round(): void {
    const probe = this.options.probe ?? probeMeta;
    for (const entry of this.options.absent()) {
      const url = entry.metaUrl;
      if (url === undefined || this.probing.has(entry.id)) continue;
      this.probing.add(entry.id);
      void probe(url, { timeoutMs: this.options.probeTimeoutMs, signal: this.abort.signal }).then(
        (result) => this.settle(entry.id, probeOutcome(result, entry.id)),
        // A probe is not supposed to throw; if one does, it proved nothing.
        () => this.settle(entry.id, 'silent'),
      );
    }
  }

  private settle(id: string, outcome: ProbeOutcome): void {
    this.probing.delete(id);
    if (!this.closed) this.options.report(id, outcome);
  }

  close(): void {
    this.closed = true;
    this.cancel?.();
    this.abort.abort();
  }
}

/** The watch of node `o`: a probe of each absent member every half heartbeat (at least every 10 ms). */
export function departureWatchFor(o: ResolvedOptions, timers: TimerSet, ports: Pick<DepartureWatchOptions, 'absent' | 'report'>): DepartureWatch {
  return new DepartureWatch({ intervalMs: Math.max(10, o.heartbeatIntervalMs / 2), probeTimeoutMs: o.discovery.probeTimeoutMs, timers, ...ports });
}
