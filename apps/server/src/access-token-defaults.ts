/**
 * Defaults of the access token verifier (`access-tokens.ts`), in a module that imports nothing:
 * the settings table shows them, and reading the command line must not load jose.
 */
export const ACCESS_TOKEN_DEFAULTS = {
  /** Clock skew allowed on `exp` and `nbf`, s. */
  clockSkewS: 60,
  /** Longest token looked at, characters: longer ones are refused unread. */
  maxTokenChars: 8192,
  /** Verified tokens remembered, entries (the oldest goes first). */
  maxCached: 10_000,
  /** How long one verification is trusted at most, ms, even when the token lives longer. */
  maxCacheMs: 5 * 60_000,
  /** Background refresh of the key set, ms. */
  refreshIntervalMs: 10 * 60_000,
  /** Least time between two fetches of the key set for unknown `kid`s (jose's cooldown), ms. */
  cooldownMs: 30_000,
  /** Time-out of one fetch (discovery or key set), ms. */
  fetchTimeoutMs: 5000,
} as const;
