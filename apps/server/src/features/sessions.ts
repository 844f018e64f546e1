/**
 * The router's sessions as a feature: closing it ends every session (pending calls fail, waiting
 * reads answer) before the transports listed ahead of it tear their sockets down.
 */
import type { ServerContext, ServerFeature } from '../feature.js';

export function sessionsFeature(ctx: ServerContext): ServerFeature {
  return {
    name: 'sessions',
    close: () => ctx.router.close(),
  };
}
