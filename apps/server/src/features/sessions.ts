/**
 * The router's sessions as a feature: shutdown drains them, then ends them, before the transports
 * listed ahead of it tear their sockets down.
 *
 *   stopping ──▶ new calls fail with not_ready ──▶ calls in flight finish ─┐
 *            └─ deadline (drainTimeoutMs from now) ───────────────────────┤ whichever comes first
 *   close ───▶ wait for that ──▶ end every session: what is left fails with transport_error,
 *              and every HTTP reader waiting on a call gets its answer
 */
import type { ServerContext, ServerFeature } from '../feature.js';

export interface SessionsFeatureOptions {
  /** Time the calls in flight get to finish once shutdown begins, ms; 0 for none. */
  readonly drainTimeoutMs: number;
}

export function sessionsFeature(ctx: ServerContext, options: SessionsFeatureOptions): ServerFeature {
  let drained: Promise<void> | undefined;
  let deadline: NodeJS.Timeout | undefined;
  return {
    name: 'sessions',
    stopping() {
      const { router, logger } = ctx;
      // Calls sent to clients of other nodes of a fleet are callers' calls too (SPEC §16).
      const pending = router.pendingCount + router.remotePendingCount;
      // From now on no new call is taken, also while the features listed after this one close.
      const idle = router.drain();
      if (options.drainTimeoutMs <= 0 || pending === 0) return;
      logger.info('server.draining', { pending, deadlineMs: options.drainTimeoutMs });
      drained = Promise.race([
        idle,
        new Promise<void>((resolve) => {
          deadline = setTimeout(() => {
            logger.info('server.drain_deadline', { pending: router.pendingCount + router.remotePendingCount });
            resolve();
          }, options.drainTimeoutMs);
        }),
      ]);
    },
    async close() {
      await drained;
      clearTimeout(deadline);
      await ctx.router.close();
    },
  };
}
