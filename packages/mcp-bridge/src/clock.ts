/**
 * Timers on an injected clock (core's `Clock`), so that tests drive the debounce, the return grace
 * and session expiry without waiting (STYLE §6).
 */
// The clock and its timer helper are core's (timers.ts); the bridge imports them from here.
export { Timer, systemClock } from '@mdp/core';
export type { Clock } from '@mdp/core';
