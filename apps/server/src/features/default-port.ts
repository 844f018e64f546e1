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
import { CLUSTER_DEFAULTS } from '@mdp/cluster';
import type { Logger } from '@mdp/core';
import { defaultPortOf, type MdpClusterOptions } from '../cluster.js';
import type { ServerFeature } from '../feature.js';
import type { ServedPort } from '../listener.js';
import type { ClusterFeature } from './cluster.js';

export interface DefaultPortOptions {
  /** The server's cluster options: whether there is a default port to serve, and which. */
  readonly cluster: MdpClusterOptions | undefined;
  /** The address the server binds. */
  readonly host: string;
  readonly logger: Logger;
  /** Serve the server on `port` too (listener.ts `servePort`). */
  serve(port: number): Promise<ServedPort>;
}

/** A feature that does nothing when the server has no default port to serve (`defaultPortOf`). */
export function defaultPortFeature(cluster: ClusterFeature, options: DefaultPortOptions): ServerFeature {
  const { logger } = options;
  const port = defaultPortOf(options.cluster, options.host);
  if (port === undefined) return { name: 'default-port' };
  /** Time between two attempts to bind it while it is wanted and in use, ms: a heartbeat, at most 250. */
  const retryMs = Math.min(250, options.cluster?.heartbeatIntervalMs ?? CLUSTER_DEFAULTS.heartbeatIntervalMs);
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
    timer = setTimeout(tick, retryMs);
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
