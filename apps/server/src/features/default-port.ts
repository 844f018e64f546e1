/**
 * The default port stays served (SPEC §5, §10): clients know one address, the first port of the
 * discovery range (47372). When the member holding it goes away, the new leader serves that port
 * too, keeping its own, as soon as the port is free; it lets go when it stops leading or closes.
 *
 *   leader change / every `retryMs` ──▶ node.servesDefaultPort()? ─┬─ yes, not held ─▶ bind ─┬─ ok ─▶ held
 *                                                                  │                        └─ in use: next time
 *                                                                  └─ no, held ───▶ release (stop accepting;
 *                                                                                   its connections live on)
 *
 * The node decides (it leads, and the port was last held by nobody, by itself or by a member of its
 * cluster, never by another user's server); this feature binds and releases. Listed after the
 * cluster feature, it closes first: the port is free for the next leader before this one resigns.
 */
import type { Logger } from '@mdp/core';
import type { ServerFeature } from '../feature.js';
import type { ServedPort } from '../listener.js';
import type { ClusterFeature } from './cluster.js';

export interface DefaultPortOptions {
  /** The port clients know: the first of the discovery range. */
  readonly port: number;
  /** Time between two attempts to bind it while it is wanted and in use, ms. */
  readonly retryMs: number;
  readonly logger: Logger;
  /** Serve the server on `port` too (listener.ts `servePort`). */
  serve(port: number): Promise<ServedPort>;
}

export function defaultPortFeature(cluster: ClusterFeature, options: DefaultPortOptions): ServerFeature {
  const { port, logger } = options;
  let held: ServedPort | undefined;
  let binding = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;

  const wanted = (): boolean => !closed && cluster.node?.servesDefaultPort() === true;

  const reconcile = (): void => {
    if (wanted()) {
      if (held || binding) return;
      binding = true;
      options.serve(port).then(
        (served) => {
          binding = false;
          // It may have stopped leading while the port was being bound.
          if (!wanted()) return served.close();
          held = served;
          logger.info('server.default_port_held', { port, message: 'serving the default port too: its holder is gone' });
        },
        (error: NodeJS.ErrnoException) => {
          binding = false;
          if (error.code !== 'EADDRINUSE') logger.warn('server.default_port_failed', { port, error });
        },
      );
    } else if (held) {
      held.close();
      held = undefined;
      logger.info('server.default_port_released', { port });
    }
  };

  const tick = (): void => {
    reconcile();
    // Retry while wanted: the holder's port frees when its process exits, which nothing announces.
    timer = setTimeout(tick, options.retryMs);
    timer.unref();
  };

  return {
    name: 'default-port',
    start(info) {
      if (info.port === port || !cluster.node) return;
      unsubscribe = cluster.node.onLeaderChange(reconcile);
      tick();
    },
    close() {
      closed = true;
      clearTimeout(timer);
      unsubscribe?.();
      reconcile();
    },
  };
}
