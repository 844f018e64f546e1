/**
 * The default port on the holder's side (SPEC §10 *beyond*): a leader serves the first port of the
 * discovery range too while `servesDefaultPort()` says so, and gives it back to its owner, a member
 * that starts on that port again (port-claim.ts), when asked with a proven request
 * (port-release.ts). A pure transition `step(state, event, now) → { state, effects, answer }`; the
 * server binds, lets go and answers (apps/server features/default-port.ts).
 *
 *   check (leader change, every retry) ── wanted, not yielding, unbound ─▶ bind ─┬─ bound ─▶ held
 *                                                                               └─ failed ─▶ unbound (next check)
 *   check ── not wanted, held ─▶ unbind (stop accepting; its connections live on)
 *   release (proven, not seen before) ─▶ yield for `yieldMs`: drop it if held (stop accepting, end its
 *                                        connections: they reconnect to the owner), bind nothing meanwhile
 *
 * Yielding is what lets the owner in: without it the next check, a quarter of a second later, would
 * take the port again before the owner's bind. It outlasts the owner's claim (5 s), after which a
 * port nobody took is served again. Every proven request is answered `released` (asking twice is
 * harmless); a request seen before (a replay of a copied one) changes nothing.
 */

export interface DefaultPortConfig {
  /** How long the port is left to its owner after a release, ms. Default 10 000 (twice the owner's claim). */
  readonly yieldMs: number;
  /** How long a request's key is remembered (its validity, `RELEASE_MAX_AGE_MS`), ms. */
  readonly rememberMs: number;
  /** Most keys remembered; the oldest go first. Default 256. */
  readonly maxRemembered: number;
}

export const DEFAULT_PORT_DEFAULTS: DefaultPortConfig = Object.freeze({ yieldMs: 10_000, rememberMs: 30_000, maxRemembered: 256 });

export interface DefaultPortState {
  readonly config: DefaultPortConfig;
  /** What the node said at the last check. */
  readonly wanted: boolean;
  readonly bound: 'none' | 'binding' | 'held';
  /** Until when the port is left to its owner (monotonic ms), if it is. */
  readonly yieldUntil: number | undefined;
  /** Keys of the releases acted on, with when each is forgotten (monotonic ms). */
  readonly seen: ReadonlyMap<string, number>;
}

export type DefaultPortEvent =
  /** Whether the node wants the port served now (`servesDefaultPort()`). */
  | { readonly type: 'check'; readonly wanted: boolean }
  | { readonly type: 'bound' }
  | { readonly type: 'bindFailed' }
  /** A proven release request for this port (`checkPortRelease`), named by its key. */
  | { readonly type: 'release'; readonly key: string };

export type DefaultPortEffect =
  | { readonly type: 'bind' }
  /** Stop accepting on the port; the connections it accepted live on (a step-down). */
  | { readonly type: 'unbind' }
  /** Stop accepting and end the connections it accepted: its owner takes it back. */
  | { readonly type: 'drop' };

export interface DefaultPortResult {
  readonly state: DefaultPortState;
  readonly effects: readonly DefaultPortEffect[];
  /** The answer to a `release`: `released`, or `replayed` for a request acted on before. */
  readonly answer?: 'released' | 'replayed';
}

export function initialDefaultPort(config: DefaultPortConfig = DEFAULT_PORT_DEFAULTS): DefaultPortState {
  return { config, wanted: false, bound: 'none', yieldUntil: undefined, seen: new Map() };
}

/** Whether the port is left to its owner at `now`. */
export function yielding(state: DefaultPortState, now: number): boolean {
  return state.yieldUntil !== undefined && now < state.yieldUntil;
}

export function step(state: DefaultPortState, event: DefaultPortEvent, now: number): DefaultPortResult {
  switch (event.type) {
    case 'check': {
      const next: DefaultPortState = { ...state, wanted: event.wanted, yieldUntil: yielding(state, now) ? state.yieldUntil : undefined };
      if (event.wanted && !yielding(next, now) && next.bound === 'none') return { state: { ...next, bound: 'binding' }, effects: [{ type: 'bind' }] };
      if (!event.wanted && next.bound === 'held') return { state: { ...next, bound: 'none' }, effects: [{ type: 'unbind' }] };
      return { state: next, effects: [] };
    }
    case 'bound': {
      if (state.bound !== 'binding') return { state, effects: [] };
      if (yielding(state, now)) return { state: { ...state, bound: 'none' }, effects: [{ type: 'drop' }] };
      // It may have stopped leading while the port was being bound.
      if (!state.wanted) return { state: { ...state, bound: 'none' }, effects: [{ type: 'unbind' }] };
      return { state: { ...state, bound: 'held' }, effects: [] };
    }
    case 'bindFailed':
      return { state: state.bound === 'binding' ? { ...state, bound: 'none' } : state, effects: [] };
    case 'release': {
      const seen = remembered(state, now);
      if (seen.has(event.key)) return { state: { ...state, seen }, effects: [], answer: 'replayed' };
      const { config } = state;
      const kept = new Map(seen).set(event.key, now + config.rememberMs);
      for (const key of kept.keys()) {
        if (kept.size <= config.maxRemembered) break;
        kept.delete(key);
      }
      const next: DefaultPortState = { ...state, seen: kept, yieldUntil: Math.max(state.yieldUntil ?? 0, now + config.yieldMs) };
      // A bind in flight is dropped when it completes (`bound` while yielding).
      if (state.bound === 'held') return { state: { ...next, bound: 'none' }, effects: [{ type: 'drop' }], answer: 'released' };
      return { state: next, effects: [], answer: 'released' };
    }
  }
}

/** The keys not yet forgotten at `now`. */
function remembered(state: DefaultPortState, now: number): ReadonlyMap<string, number> {
  let expired = false;
  for (const until of state.seen.values()) if (until <= now) expired = true;
  if (!expired) return state.seen;
  return new Map([...state.seen].filter(([, until]) => until > now));
}
