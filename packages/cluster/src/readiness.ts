/**
 * Readiness: when a starting node has seen enough of the cluster to vote and stand for election,
 * as a pure transition `step(state, event, now) → { state, wakeAt, ready }` in the manner of
 * `election.ts`. A node that voted before its peers' hellos told it the current term could vote
 * twice in a term its earlier incarnation voted in; one that stood before discovery found a live
 * leader would disturb it.
 *
 *   ┌─────────────┐ first discovery round done ┌──────────┐ every member found so far  ┌───────┐
 *   │ first-round │ ─────────────────────────▶ │ settling │ ─ has a link up ─────────▶ │ ready │
 *   └─────────────┘                            └──────────┘ ─ or the settle deadline ▶ └───────┘
 *         a leader holding quorum seen by discovery before `ready` is remembered, and handed to
 *         the election with `ready` (then the first election waits a whole time-out)
 *
 * The deadline keeps a member that was found but never links (frozen, refusing) from holding
 * elections off. `ready` is reported once.
 */

export interface ReadinessState {
  readonly phase: 'first-round' | 'settling' | 'ready';
  /** Discovery saw a leader holding quorum. */
  readonly leaderSeen: boolean;
  /** Settling: ready at the latest then, ms. Infinity otherwise. */
  readonly settleAt: number;
  /** How long settling may last, ms. */
  readonly settleMs: number;
}

export type ReadinessEvent =
  /** A discovery document showed a leader that holds quorum. */
  | { readonly type: 'leaderSeen' }
  /** A discovery round finished; `allLinked`: every member found so far has a link up. */
  | { readonly type: 'roundDone'; readonly allLinked: boolean }
  /** A link to a peer came up; `allLinked` as above. */
  | { readonly type: 'linkUp'; readonly allLinked: boolean }
  /** The timer set for `wakeAt` fired (ticks at any other time change nothing). */
  | { readonly type: 'tick' };

export interface ReadinessResult {
  readonly state: ReadinessState;
  /** When to tick next, ms; undefined when nothing is scheduled. */
  readonly wakeAt: number | undefined;
  /** Set on the step that made the node ready: what to tell the election. */
  readonly ready: { readonly leaderSeen: boolean } | undefined;
}

export function initialReadiness(settleMs: number): ReadinessState {
  if (!(settleMs >= 0)) throw new RangeError('settleMs must be ≥ 0');
  return { phase: 'first-round', leaderSeen: false, settleAt: Infinity, settleMs };
}

export function step(state: ReadinessState, event: ReadinessEvent, now: number): ReadinessResult {
  if (state.phase === 'ready') return result(state, false);
  switch (event.type) {
    case 'leaderSeen':
      return result({ ...state, leaderSeen: true }, false);
    case 'roundDone':
      if (state.phase === 'first-round') {
        const settling: ReadinessState = { ...state, phase: 'settling', settleAt: now + state.settleMs };
        return event.allLinked ? ready(settling) : result(settling, false);
      }
      return event.allLinked ? ready(state) : result(state, false);
    case 'linkUp':
      return state.phase === 'settling' && event.allLinked ? ready(state) : result(state, false);
    case 'tick':
      return state.phase === 'settling' && now >= state.settleAt ? ready(state) : result(state, false);
  }
}

function ready(state: ReadinessState): ReadinessResult {
  return result({ ...state, phase: 'ready', settleAt: Infinity }, true);
}

function result(state: ReadinessState, becameReady: boolean): ReadinessResult {
  return {
    state,
    wakeAt: Number.isFinite(state.settleAt) ? state.settleAt : undefined,
    ready: becameReady ? { leaderSeen: state.leaderSeen } : undefined,
  };
}
