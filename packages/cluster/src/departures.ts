/**
 * Departures: when a member of a dynamic cluster is gone for good, as a pure transition
 * `step(state, event) → { state, effects }` in the manner of `election.ts`. A gone member stops
 * counting towards the quorum (the election's `memberGone`), so that the last one or two servers
 * on a machine keep a leader when the others stop or crash.
 *
 *   member ── says it leaves (clusterLeaderResign, leaving) ──────────────────────────▶ gone
 *          ── its address, probed while no link to it is up:
 *               refuses connections, or another MDP server answers ──▶ strike ─┬─ N in a row ─▶ gone
 *               answers as this member, anything else, or nothing ──▶ strikes cleared
 *          ── a link to it comes up ───────────────────────────────────▶ strikes cleared
 *
 * "No answer in time" is not proof: a paused or overloaded process still holds its port (the kernel
 * accepts for it) and may come back, still counting itself a member; while it may, it keeps
 * counting, and the quorum stays where a returning member cannot make a second majority. A refused
 * connection is proof only where a refusal means no process listens: on the discovery host (this
 * machine's loopback, or the host whose port range discovery probes). Members elsewhere, and every
 * member of a static list, keep strict quorum.
 */
import type { ProbeResult } from './meta-probe.js';

/** What one probe of a member's address showed. */
export type ProbeOutcome =
  /** The member answered: it is there. */
  | 'present'
  /** The connection was refused: nothing listens at its address. */
  | 'refused'
  /** Another MDP server answers at its address. */
  | 'elsewhere'
  /** No answer in time, or the connection broke: proves nothing. */
  | 'silent';

export interface DepartureConfig {
  /** False for static membership: the list is the whole truth and the quorum never shrinks. */
  readonly dynamic: boolean;
  /** Probes in a row that must show the member's address empty or taken (default 3). */
  readonly strikes: number;
}

export interface DepartureState {
  readonly config: DepartureConfig;
  /** Members with at least one strike, and how many in a row. */
  readonly strikes: ReadonlyMap<string, number>;
}

export type DepartureEvent =
  /** `id` said it leaves the cluster. */
  | { readonly type: 'left'; readonly id: string }
  /** A probe of `id`'s address (on the discovery host) showed `outcome`. */
  | { readonly type: 'probed'; readonly id: string; readonly outcome: ProbeOutcome }
  /** A link to `id` came up. */
  | { readonly type: 'linkUp'; readonly id: string };

export type DepartureEffect = { readonly type: 'gone'; readonly id: string; readonly reason: 'left' | 'refused' | 'elsewhere' };

export interface DepartureResult {
  readonly state: DepartureState;
  readonly effects: readonly DepartureEffect[];
}

/** Probes in a row that prove a member gone, by default: one refusal could be a restart's gap. */
export const DEPARTURE_STRIKES = 3;

export function initialDepartures(config: DepartureConfig): DepartureState {
  if (!Number.isInteger(config.strikes) || config.strikes < 1) throw new RangeError('strikes must be a whole number ≥ 1');
  return { config, strikes: new Map() };
}

export function step(state: DepartureState, event: DepartureEvent): DepartureResult {
  if (!state.config.dynamic) return { state, effects: [] };
  switch (event.type) {
    case 'left':
      return { state: withStrikes(state, event.id, 0), effects: [{ type: 'gone', id: event.id, reason: 'left' }] };
    case 'linkUp':
      return { state: withStrikes(state, event.id, 0), effects: [] };
    case 'probed': {
      if (event.outcome === 'present' || event.outcome === 'silent') return { state: withStrikes(state, event.id, 0), effects: [] };
      const strikes = (state.strikes.get(event.id) ?? 0) + 1;
      if (strikes < state.config.strikes) return { state: withStrikes(state, event.id, strikes), effects: [] };
      return { state: withStrikes(state, event.id, 0), effects: [{ type: 'gone', id: event.id, reason: event.outcome }] };
    }
  }
}

function withStrikes(state: DepartureState, id: string, strikes: number): DepartureState {
  if ((state.strikes.get(id) ?? 0) === strikes) return state;
  const next = new Map(state.strikes);
  if (strikes === 0) next.delete(id);
  else next.set(id, strikes);
  return { ...state, strikes: next };
}

/**
 * What a probe of member `id`'s address shows about it. Only an MDP document naming another server
 * counts as "elsewhere": an answer that is not MDP may come from the member itself under load (a
 * connection limit that hangs up, a 503), and proves nothing.
 */
export function probeOutcome(result: ProbeResult, id: string): ProbeOutcome {
  if (result.ok) return result.meta.serverId === id ? 'present' : 'elsewhere';
  return result.refused === true ? 'refused' : 'silent';
}
