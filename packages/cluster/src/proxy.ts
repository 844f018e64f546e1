/**
 * Upstream proxy (SPEC §10): while this node has an upstream hub (the leader, or an explicit
 * upstream URL), every local client is mirrored into it, one websocket per client (`mirror.ts`).
 * Before mirroring, the hub's metadata is read and our protocol version checked against its
 * `supportedProtocolRanges`; an incompatible hub is refused and logged, and checked again later.
 */
import { redactUrl, type ClientEvent, type ClientInfo } from '@mdp/core';
import { PROTOCOL_VERSION, proxyMarker } from '@mdp/protocol';
import { probeMeta, type ProbeResult } from './meta-probe.js';
import { Mirror, type MirrorOptions } from './mirror.js';
import { upstreamAccepts } from './version.js';

export type ProxyStatus =
  | { readonly state: 'idle' }
  | { readonly state: 'checking'; readonly upstream: string }
  | { readonly state: 'mirroring'; readonly upstream: string; readonly upstreamServerId: string; readonly wsUrl: string }
  | { readonly state: 'refused'; readonly upstream: string; readonly reason: string }
  | { readonly state: 'unreachable'; readonly upstream: string; readonly reason: string };

export interface ProxyOptions extends Omit<MirrorOptions, 'wsUrl' | 'upstreamServerId'> {
  /** Time allowed for reading the upstream's metadata, ms. */
  readonly probeTimeoutMs: number;
  /** Wait before checking an unreachable or refused upstream again, ms. */
  readonly recheckMs: number;
  readonly probe?: (url: string, options: { timeoutMs: number }) => Promise<ProbeResult>;
}

export class UpstreamProxy {
  private upstream: string | undefined;
  private current: ProxyStatus = { state: 'idle' };
  private readonly mirrors = new Map<string, Mirror>();
  private readonly listeners = new Set<(status: ProxyStatus) => void>();
  private readonly unsubscribe: () => void;
  private cancelRecheck: (() => void) | undefined;
  /** Bumped on every change of upstream, so that a late probe answer for an old one is dropped. */
  private generation = 0;
  private lastReported: string | undefined;
  private closed = false;

  constructor(private readonly options: ProxyOptions) {
    this.unsubscribe = options.router.onClientEvent((event) => this.onClientEvent(event));
  }

  status(): ProxyStatus {
    return this.current;
  }

  onStatus(listener: (status: ProxyStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Mirror into `url` (any form `probeMeta` accepts), or stop mirroring with `undefined`. */
  setUpstream(url: string | undefined): void {
    if (this.closed || url === this.upstream) return;
    this.upstream = url;
    this.generation += 1;
    this.cancelRecheck?.();
    this.stopMirrors();
    if (url === undefined) {
      this.setStatus({ state: 'idle' });
      return;
    }
    this.options.logger.info('proxy.upstream_selected', { upstream: redactUrl(url) });
    this.spawnCheck(this.generation);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.generation += 1;
    this.unsubscribe();
    this.cancelRecheck?.();
    this.stopMirrors();
    this.listeners.clear();
  }

  private spawnCheck(generation: number): void {
    this.check(generation).catch((error: unknown) => this.options.logger.error('proxy.check_failed', { error }));
  }

  private async check(generation: number): Promise<void> {
    const url = this.upstream as string;
    this.setStatus({ state: 'checking', upstream: url });
    const probe = this.options.probe ?? probeMeta;
    let result: ProbeResult;
    try {
      result = await probe(url, { timeoutMs: this.options.probeTimeoutMs });
    } catch (error) {
      result = { ok: false, url, kind: 'unreachable', reason: String(error) };
    }
    if (generation !== this.generation || this.closed) return;
    if (!result.ok) return this.retryLater(generation, { state: 'unreachable', upstream: url, reason: result.reason });
    const meta = result.meta;
    if (meta.serverId === this.options.serverId) {
      return this.retryLater(generation, { state: 'refused', upstream: url, reason: 'the upstream is this server' });
    }
    if (!upstreamAccepts(meta.supportedProtocolRanges)) {
      const reason = `upstream accepts ${JSON.stringify(meta.supportedProtocolRanges)}, not protocol ${PROTOCOL_VERSION}`;
      return this.retryLater(generation, { state: 'refused', upstream: url, reason });
    }
    this.lastReported = undefined;
    this.setStatus({ state: 'mirroring', upstream: url, upstreamServerId: meta.serverId, wsUrl: meta.endpoints.ws });
    for (const client of this.options.router.listClients()) this.startMirror(client);
  }

  private retryLater(generation: number, status: ProxyStatus): void {
    // Log a refusal or an outage once per upstream and reason, not on every re-check.
    const key = `${status.state}|${'upstream' in status ? status.upstream : ''}|${'reason' in status ? status.reason : ''}`;
    const changed = key !== this.lastReported;
    this.lastReported = key;
    this.setStatus(status);
    if (changed) {
      if (status.state === 'refused') this.options.logger.error('proxy.upstream_refused', { upstream: redactUrl(status.upstream), reason: status.reason });
      else if (status.state === 'unreachable')
        this.options.logger.warn('proxy.upstream_unreachable', { upstream: redactUrl(status.upstream), reason: status.reason });
    }
    this.cancelRecheck = this.options.timers.after(this.options.recheckMs, () => {
      this.cancelRecheck = undefined;
      if (generation === this.generation) this.spawnCheck(generation);
    });
  }

  private setStatus(status: ProxyStatus): void {
    this.current = status;
    for (const listener of this.listeners) {
      try {
        listener(status);
      } catch (error) {
        this.options.logger.error('proxy.status_listener_failed', { error });
      }
    }
  }

  private onClientEvent(event: ClientEvent): void {
    try {
      if (event.type === 'unregistered') {
        this.mirrors.get(event.clientId)?.stop();
        this.mirrors.delete(event.clientId);
      } else if (event.type === 'registered') {
        this.startMirror(event.client);
      } else {
        const mirror = this.mirrors.get(event.client.id);
        if (mirror) mirror.update(event.client);
        else this.startMirror(event.client);
      }
    } catch (error) {
      this.options.logger.error('proxy.client_event_failed', { event: event.type, error });
    }
  }

  private startMirror(client: ClientInfo): void {
    if (this.current.state !== 'mirroring' || this.closed) return;
    // A client that is itself a mirror (registered here by another server) is never mirrored on.
    if (proxyMarker(client.descriptor)) return;
    this.mirrors.get(client.id)?.stop();
    const mirror = new Mirror({ ...this.options, wsUrl: this.current.wsUrl, upstreamServerId: this.current.upstreamServerId }, client);
    this.mirrors.set(client.id, mirror);
    mirror.start();
  }

  private stopMirrors(): void {
    for (const mirror of this.mirrors.values()) mirror.stop();
    this.mirrors.clear();
  }
}
