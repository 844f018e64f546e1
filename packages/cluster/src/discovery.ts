/**
 * Dynamic discovery (SPEC §10): every interval, probe `GET /mdp/meta` on a port range of one host
 * and on seed URLs. The probes of a round start together under one short deadline, and each reports
 * as soon as it answers, so a frozen peer delays nothing but its own answer. Rounds never overlap.
 */
import { urlHost, type Logger } from '@mdp/core';
import { DEFAULT_PORT, type MetaDocument } from '@mdp/protocol';
import { childSignal } from './child-signal.js';
import type { Clock, TimerSet } from './clock.js';
import { isProbeable } from './membership.js';
import { probeMeta, probeWith, type ProbeResult } from './meta-probe.js';
import type { ResolvedOptions } from './options.js';

export interface DiscoveryOptions {
  /** Host whose port range is probed. Default 127.0.0.1. */
  readonly host: string;
  /** First port of the range. Default 47372. */
  readonly startPort: number;
  /** Number of ports probed from `startPort`; 0 probes no range. Default 100. */
  readonly attempts: number;
  /** Time between the starts of two rounds, ms. Default 2000. */
  readonly intervalMs: number;
  /** Extra addresses probed every round (URL, HOST:PORT or PORT). Default none. */
  readonly seedUrls: readonly string[];
  /** Time allowed for one probe, ms. Default 500. */
  readonly probeTimeoutMs: number;
}

export const DISCOVERY_DEFAULTS: DiscoveryOptions = Object.freeze({
  host: '127.0.0.1',
  startPort: DEFAULT_PORT,
  attempts: 100,
  intervalMs: 2000,
  seedUrls: Object.freeze([]) as readonly string[],
  probeTimeoutMs: 500,
});

export type Probe = (url: string, options: { timeoutMs: number; signal: AbortSignal }) => Promise<ProbeResult>;

export interface DiscoveryHooks {
  /** One address answered with a valid metadata document. */
  found(meta: MetaDocument, url: string): void;
  /** A round finished (every probe answered or timed out); `timedOut` lists the addresses that gave no answer in time. */
  roundDone(round: number, timedOut: readonly string[]): void;
  /** Extra targets for this round (static members' addresses). */
  extraTargets?(): readonly string[];
}

/**
 * Discovery for a member node: its options' range and seeds, plus the static members named
 * `host:port`, probed directly wherever they listen.
 */
export function discoveryFor(o: ResolvedOptions, timers: TimerSet, logger: Logger, hooks: Omit<DiscoveryHooks, 'extraTargets'>): Discovery {
  const statics = o.membership.mode === 'static' ? o.membership.members.filter((id) => id !== o.serverId && isProbeable(id)) : [];
  return new Discovery(o.discovery, { ...hooks, extraTargets: () => statics }, o.clock, timers, logger, probeWith(o.tls));
}

export class Discovery {
  private readonly abort = new AbortController();
  private cancelNext: (() => void) | undefined;
  private round = 0;
  private running = false;
  private closed = false;

  constructor(
    private readonly options: DiscoveryOptions,
    private readonly hooks: DiscoveryHooks,
    private readonly clock: Clock,
    private readonly timers: TimerSet,
    private readonly logger: Logger,
    private readonly probe: Probe = probeMeta,
  ) {}

  start(): void {
    this.spawnRound();
  }

  private spawnRound(): void {
    this.runRound().catch((error: unknown) => this.logger.error('cluster.discovery_round_failed', { error }));
  }

  /** The addresses of one round. The range's are `HOST:PORT`: the probe gives them its scheme (https under TLS). */
  targets(): string[] {
    const { host, startPort, attempts, seedUrls } = this.options;
    const hostPart = urlHost(host);
    const list: string[] = [];
    for (let port = startPort; port < startPort + attempts && port <= 65535; port += 1) list.push(`${hostPart}:${port}`);
    list.push(...seedUrls, ...(this.hooks.extraTargets?.() ?? []));
    return [...new Set(list)];
  }

  private async runRound(): Promise<void> {
    if (this.closed || this.running) return;
    this.running = true;
    const round = ++this.round;
    const startedAt = this.clock.now();
    let targets: string[] = [];
    let timedOut: string[] = [];
    // One deadline and one signal for the whole round, rather than a pair per probe: a round is a
    // hundred probes every two seconds for as long as the server runs.
    const roundAbort = childSignal(this.abort.signal);
    let pastDeadline = false;
    const deadline = this.clock.setTimeout(() => {
      pastDeadline = true;
      roundAbort.controller.abort();
    }, this.options.probeTimeoutMs);
    try {
      targets = this.targets();
      const outcomes = await Promise.all(targets.map((url) => this.probeOne(url, roundAbort.controller.signal, () => pastDeadline)));
      timedOut = targets.filter((_, i) => outcomes[i] === 'timed-out');
    } catch (error) {
      this.logger.error('cluster.discovery_round_failed', { error });
      timedOut = targets;
    } finally {
      this.clock.clearTimeout(deadline);
      // Nothing of a round outlives it, whatever ended it.
      roundAbort.controller.abort();
      roundAbort.release();
      this.running = false;
    }
    if (this.closed) return;
    try {
      this.hooks.roundDone(round, timedOut);
    } catch (error) {
      this.logger.error('cluster.discovery_hook_failed', { error });
    }
    const wait = Math.max(0, this.options.intervalMs - (this.clock.now() - startedAt));
    this.cancelNext = this.timers.after(wait, () => this.spawnRound());
  }

  /** Probe one address; says whether it answered in time (whatever it answered). */
  private async probeOne(url: string, signal: AbortSignal, pastDeadline: () => boolean): Promise<'answered' | 'timed-out'> {
    let result: ProbeResult;
    try {
      result = await this.probe(url, { timeoutMs: this.options.probeTimeoutMs + 1000, signal });
    } catch (error) {
      // A probe is not supposed to throw; if one does, it is one address without an answer.
      this.logger.error('cluster.discovery_probe_failed', { url, error });
      return pastDeadline() && !this.closed ? 'timed-out' : 'answered';
    }
    if (this.closed) return 'answered';
    // The round's deadline tells "no answer in time" apart from "refused" or "not MDP".
    if (!result.ok) return pastDeadline() ? 'timed-out' : 'answered';
    try {
      this.hooks.found(result.meta, result.url);
    } catch (error) {
      this.logger.error('cluster.discovery_hook_failed', { url, error });
    }
    return 'answered';
  }

  close(): void {
    this.closed = true;
    this.cancelNext?.();
    this.abort.abort();
  }
}
