/**
 * Claiming a port back (SPEC §10 *beyond*): a server that starts on its own port and finds it held
 * by a member of its cluster serving it as a second port (the default port, taken by a leader after
 * this server went away) asks for it back and binds it; anything else holding it keeps the bind
 * error. A pure transition `step(state, event, now) → { state, effects, wakeAt }` in the manner of
 * `election.ts`; the server binds, probes, asks and keeps the one timer (apps/server port-claim.ts).
 *
 *   start (the bind failed: in use)
 *     ▼
 *   look (GET /mdp/meta there) ─┬─ a member of this cluster serving it as a second port ─▶ ask it to let go
 *     ▲                         │     (at most once a second per holder)                   │
 *     │                         ├─ nothing answers (its holder exiting, or paused) ─▶ wait  ├─ released ─▶ bind at once
 *     │                         └─ anything else (another cluster, a server on its own     ├─ holder unreachable or busy ─▶ wait
 *     │                            port, another program) ─▶ give up                       └─ refused (our proof, an older server) ─▶ give up
 *   bind ◀── wait (50 ms, doubling up to 800 ms) ◀──┘
 *     ├─ bound ─▶ done
 *     └─ in use ─▶ look again; past the deadline (5 s after the start) ─▶ give up
 *
 * Looking again after every failed bind settles the races: a second server started on the same port
 * that bound it first is a server on its own port (give up); another member that took the port
 * meanwhile is asked in turn; a holder that died while asked frees the port when its process exits.
 */
import type { MetaDocument } from '@mdp/protocol';
import { endpointKey } from './membership.js';
import { normalizeTarget, type ProbeResult } from './meta-probe.js';

export interface ClaimConfig {
  /** Time from the first failed bind to giving up, ms. Default 5000. */
  readonly timeoutMs: number;
  /** First and longest wait between two binds, ms. Default 50 and 800. */
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  /** Least time between two requests to the same holder, ms. Default 1000. */
  readonly askEveryMs: number;
}

export const PORT_CLAIM_DEFAULTS: ClaimConfig = Object.freeze({ timeoutMs: 5000, retryMinMs: 50, retryMaxMs: 800, askEveryMs: 1000 });

/** Who holds the port, as its /mdp/meta says. */
export type PortHolder =
  /** A member of this cluster serving the port as a second port; `url` is its own base URL. */
  | { readonly kind: 'member'; readonly id: string; readonly url: string }
  /** Nothing answered (a process that is exiting or paused holds it): it may free soon. */
  | { readonly kind: 'none'; readonly reason: string }
  /** Anything that will not give it back. */
  | { readonly kind: 'other'; readonly reason: string };

/** How a request to the holder ended. */
export type AskOutcome =
  | { readonly kind: 'released' }
  /** It refused (our proof, the port, or it has no such request: an older server). */
  | { readonly kind: 'refused'; readonly reason: string }
  /** No answer (it is exiting, or gone), or an answer that says later (not started yet). */
  | { readonly kind: 'unreachable' | 'busy'; readonly reason: string };

export type ClaimPhase = 'looking' | 'asking' | 'waiting' | 'binding' | 'bound' | 'failed';

export interface ClaimState {
  readonly config: ClaimConfig;
  readonly phase: ClaimPhase;
  /** When it gives up (monotonic ms). */
  readonly deadline: number;
  /** Waits so far (the next one is `retryMinMs · 2^waits`, at most `retryMaxMs`). */
  readonly waits: number;
  /** The last request: to whom, when. */
  readonly asked: { readonly id: string; readonly at: number } | undefined;
  /** When a wait ends. */
  readonly wakeAt: number | undefined;
  /** Why it gave up. */
  readonly reason: string | undefined;
}

export type ClaimEvent =
  /** A bind failed: the port is in use. */
  | { readonly type: 'inUse' }
  | { readonly type: 'bound' }
  | { readonly type: 'looked'; readonly holder: PortHolder }
  | { readonly type: 'asked'; readonly outcome: AskOutcome }
  | { readonly type: 'tick' };

export type ClaimEffect =
  | { readonly type: 'look' }
  | { readonly type: 'ask'; readonly holder: { readonly id: string; readonly url: string } }
  | { readonly type: 'bind' }
  | { readonly type: 'giveUp'; readonly reason: string };

export interface ClaimResult {
  readonly state: ClaimState;
  readonly effects: readonly ClaimEffect[];
  /** When to feed `tick` (while waiting). */
  readonly wakeAt: number | undefined;
}

/** The claim once its first bind failed at `now`: it looks at who holds the port. */
export function startClaim(now: number, config: ClaimConfig = PORT_CLAIM_DEFAULTS): ClaimResult {
  const state: ClaimState = { config, phase: 'looking', deadline: now + config.timeoutMs, waits: 0, asked: undefined, wakeAt: undefined, reason: undefined };
  return { state, effects: [{ type: 'look' }], wakeAt: undefined };
}

export function step(state: ClaimState, event: ClaimEvent, now: number): ClaimResult {
  const done = (next: ClaimState, effects: ClaimEffect[] = []): ClaimResult => ({
    state: next,
    effects,
    wakeAt: next.phase === 'waiting' ? next.wakeAt : undefined,
  });
  const giveUp = (reason: string): ClaimResult => done({ ...state, phase: 'failed', wakeAt: undefined, reason }, [{ type: 'giveUp', reason }]);
  const wait = (): ClaimResult => {
    const { retryMinMs, retryMaxMs } = state.config;
    const wakeAt = Math.min(now + Math.min(retryMaxMs, retryMinMs * 2 ** state.waits), state.deadline);
    return done({ ...state, phase: 'waiting', waits: state.waits + 1, wakeAt });
  };
  const bind = (): ClaimResult => done({ ...state, phase: 'binding', wakeAt: undefined }, [{ type: 'bind' }]);
  const late = now >= state.deadline;
  switch (event.type) {
    case 'inUse':
      if (state.phase !== 'binding') return done(state);
      if (late) return giveUp(`still in use ${state.config.timeoutMs} ms later`);
      return done({ ...state, phase: 'looking' }, [{ type: 'look' }]);
    case 'bound':
      return state.phase === 'binding' ? done({ ...state, phase: 'bound' }) : done(state);
    case 'looked': {
      if (state.phase !== 'looking') return done(state);
      const { holder } = event;
      if (holder.kind === 'other') return giveUp(holder.reason);
      if (late) return giveUp(`still in use ${state.config.timeoutMs} ms later`);
      if (holder.kind === 'none') return wait();
      const { asked } = state;
      if (asked && asked.id === holder.id && now - asked.at < state.config.askEveryMs) return wait();
      return done({ ...state, phase: 'asking', asked: { id: holder.id, at: now } }, [{ type: 'ask', holder: { id: holder.id, url: holder.url } }]);
    }
    case 'asked':
      if (state.phase !== 'asking') return done(state);
      if (event.outcome.kind === 'refused') return giveUp(`its holder refused: ${event.outcome.reason}`);
      // Let go: the port is free now (the holder answers once its listener is closed).
      return event.outcome.kind === 'released' ? bind() : wait();
    case 'tick':
      return state.phase === 'waiting' && state.wakeAt !== undefined && now >= state.wakeAt ? bind() : done(state);
  }
}

/**
 * Who holds `port` (on this machine), from a probe of /mdp/meta there, for a server of cluster
 * `clusterId`: a member of it only when the document names the cluster, cluster control, and its
 * own endpoints on another port (a second port names its server's own endpoints, features/meta.ts
 * of apps/server). The document is not proof of membership; the holder asks for the cluster secret.
 */
export function holderOf(probe: ProbeResult, port: number, clusterId: string): PortHolder {
  if (!probe.ok) {
    if (probe.kind === 'not-mdp') return { kind: 'other', reason: `another program holds it (${probe.reason})` };
    return { kind: 'none', reason: probe.reason };
  }
  const meta: MetaDocument = probe.meta;
  if (meta.cluster.id !== clusterId) return { kind: 'other', reason: `an MDP server of cluster ${JSON.stringify(meta.cluster.id)} holds it` };
  if (!meta.features.clusterControl) return { kind: 'other', reason: 'a standalone MDP server holds it' };
  const key = endpointKey(meta.endpoints.cluster);
  const ownPort = key === undefined ? undefined : Number(key.slice(key.lastIndexOf(':') + 1));
  if (ownPort === undefined || ownPort === port) return { kind: 'other', reason: `MDP server ${JSON.stringify(meta.serverId)} holds it as its own port` };
  let url: string;
  try {
    url = normalizeTarget(meta.endpoints.cluster);
  } catch {
    return { kind: 'other', reason: `MDP server ${JSON.stringify(meta.serverId)} names no usable address` };
  }
  return { kind: 'member', id: meta.serverId, url };
}
