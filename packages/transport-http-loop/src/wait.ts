/** The `waitMs` query parameter of `GET /poll` (SPEC §6). */

/** Upper bound of one long poll, ms. Larger `waitMs` values are clamped to it. */
export const MAX_WAIT_MS = 60_000;

/**
 * How long a poll may wait for a message, ms. Values above {@link MAX_WAIT_MS} are clamped;
 * missing, empty, non-numeric or negative values fall back to `fallbackMs` (the configured
 * long-poll time-out, clamped the same way); `0` means answer at once. Fractions are rounded down.
 */
export function resolveWaitMs(raw: string | undefined, fallbackMs: number): number {
  const fallback = Math.min(fallbackMs, MAX_WAIT_MS);
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (Number.isNaN(value) || value < 0) return fallback;
  return Math.min(Math.floor(value), MAX_WAIT_MS);
}
