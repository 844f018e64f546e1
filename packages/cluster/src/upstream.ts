/**
 * Upstream choice (SPEC §10): which hub this node's clients are mirrored into, and the proxy that
 * mirrors them. An explicit upstream always wins; otherwise a follower mirrors into the leader and
 * a leader into nobody.
 */
import { uniqueStamps, type TimerSet } from './clock.js';
import { mirrorProofHeader } from './mirror-proof.js';
import type { LeaderView } from './election-driver.js';
import type { MemberEntry } from './membership.js';
import type { ResolvedOptions } from './options.js';
import { UpstreamProxy } from './proxy.js';
import { probeWith } from './meta-probe.js';

export function createUpstreamProxy(o: ResolvedOptions, timers: TimerSet): UpstreamProxy {
  const secret = o.clusterSecrets[0];
  // The hub accepts a proof once (proof-memory.ts): mirrors connecting in the same millisecond get distinct ones.
  const stamp = uniqueStamps(o.clock);
  return new UpstreamProxy({
    router: o.router,
    serverId: o.serverId,
    clock: o.clock,
    timers,
    logger: o.logger.child({ component: 'proxy' }),
    random: o.random,
    reconnectMinMs: o.proxyReconnectMinMs,
    reconnectMaxMs: o.proxyReconnectMaxMs,
    connectTimeoutMs: Math.max(1000, o.discovery.probeTimeoutMs * 2),
    maxPayloadBytes: o.maxPayloadBytes,
    backlog: o.backlog,
    ...(o.upstreamHeaders ? { headers: o.upstreamHeaders } : {}),
    // With a cluster secret every mirror link proves it comes from this member (mirror-proof.ts).
    ...(secret !== undefined
      ? {
          proof: (to: string, principal: string | undefined) =>
            mirrorProofHeader(secret, o.clusterId, { serverId: o.serverId, to, timestamp: stamp(), ...(principal !== undefined ? { principal } : {}) }),
        }
      : {}),
    ...(o.tls ? { tls: o.tls } : {}),
    probe: probeWith(o.tls),
    probeTimeoutMs: Math.max(1000, o.discovery.probeTimeoutMs),
    recheckMs: Math.max(o.discovery.intervalMs, 1000),
  });
}

/**
 * Where to mirror now: a URL, `undefined` to stop mirroring, or `'keep'` to leave the mirrors as they
 * are (no leader known yet: a client should not flap between registered and gone during an election).
 * `leader` is the directory entry of the leader, when it has one.
 */
export function upstreamTarget(
  explicitUrl: string | undefined,
  selfId: string,
  view: LeaderView,
  leader: MemberEntry | undefined,
): string | undefined | 'keep' {
  if (explicitUrl) return explicitUrl;
  if (view.role === 'leader') return undefined;
  if (view.leaderId === undefined || view.leaderId === selfId) return 'keep';
  return (leader?.metaUrl ?? view.leaderUrl ?? leader?.clusterUrl) || 'keep';
}
