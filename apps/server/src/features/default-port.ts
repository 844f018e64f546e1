/**
 * The default port stays served (SPEC §5, §10): clients know one address, the first port of the
 * discovery range (47372). When the member holding it goes away, the new leader serves that port
 * too, keeping its own, as soon as the port is free; it lets go when it stops leading or closes, and
 * gives the port back when its owner starts on it again and asks (`POST /mdp/cluster/release-port`,
 * proven with the cluster secret; the owner's side is port-claim.ts).
 *
 *   leader change / every `retryMs` ──▶ check ─┬─ wanted, not held ─▶ bind ─┬─ ok ─▶ held
 *                                              │                           └─ in use: next time
 *                                              └─ not wanted, held ─▶ release (stop accepting; its connections live on)
 *   its owner asks, proven ──▶ drop it (stop accepting, end its connections) ──▶ answer ──▶ bind nothing for 10 s
 *
 * The node decides (it leads, and the port was last held by nobody, by itself or by a member of its
 * cluster, never by another user's server); the pure machine of @mdp/cluster (default-port.ts)
 * keeps what is bound and the yield to the owner; this feature binds, lets go and answers. Listed
 * after the cluster feature, it closes first: the port is free for the next leader before this one
 * resigns.
 */
import { bodyLimit } from 'hono/body-limit';
import {
  CLUSTER_DEFAULTS,
  PORT_RELEASE_PATH,
  RELEASE_MAX_BODY_BYTES,
  initialDefaultPort,
  stepDefaultPort,
  type DefaultPortEffect,
  type DefaultPortEvent,
  type DefaultPortResult,
} from '@mdp/cluster';
import { systemClock, type Clock, type Logger } from '@mdp/core';
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
  /** The yield's clock. Default the system's. */
  readonly clock?: Clock;
}

/** Time a drop may take before the owner is answered anyway, ms: ending a connection is immediate. */
const DROP_ANSWER_MS = 1000;

/** Refused requests logged per minute at most: a stranger's requests must not flood the log. */
const REFUSALS_LOGGED_PER_MINUTE = 5;

/** A feature that does nothing when the server has no default port to serve (`defaultPortOf`). */
export function defaultPortFeature(cluster: ClusterFeature, options: DefaultPortOptions): ServerFeature {
  const { logger } = options;
  const port = defaultPortOf(options.cluster, options.host);
  if (port === undefined) return { name: 'default-port' };
  const clock = options.clock ?? systemClock;
  /** Time between two attempts to bind it while it is wanted and in use, ms: a heartbeat, at most 250. */
  const retryMs = Math.min(250, options.cluster?.heartbeatIntervalMs ?? CLUSTER_DEFAULTS.heartbeatIntervalMs);
  let state = initialDefaultPort();
  let held: ServedPort | undefined;
  /** Serving: started on another port than the default one, not closed. */
  let started = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  let refusalsLogged = { minute: 0, count: 0 };

  const feed = (event: DefaultPortEvent): DefaultPortResult => {
    const result = stepDefaultPort(state, event, clock.now());
    state = result.state;
    for (const effect of result.effects) apply(effect);
    return result;
  };

  /** The drop in progress, if any: the owner is answered once the port is free. */
  let dropping: Promise<void> | undefined;

  /** Whether `server.default_port_held` was logged for what is bound (a bind dropped at once is not news). */
  let announced = false;

  const apply = (effect: DefaultPortEffect): void => {
    if (effect.type === 'bind') {
      options.serve(port).then(
        (served) => {
          held = served;
          feed({ type: 'bound' });
          if (state.bound !== 'held') return;
          announced = true;
          logger.info('server.default_port_held', { port, message: 'serving the default port too: its holder is gone' });
        },
        (error: NodeJS.ErrnoException) => {
          feed({ type: 'bindFailed' });
          if (error.code !== 'EADDRINUSE') logger.warn('server.default_port_failed', { port, error });
        },
      );
      return;
    }
    const served = held;
    const wasAnnounced = announced;
    held = undefined;
    announced = false;
    if (!served) return;
    if (effect.type === 'unbind') {
      served.close();
      if (wasAnnounced) logger.info('server.default_port_released', { port });
      return;
    }
    // Its owner asked for it (the route logs that).
    dropping = served.drop();
  };

  const check = (): void => {
    feed({ type: 'check', wanted: !closed && cluster.node?.servesDefaultPort() === true });
  };

  const tick = (): void => {
    check();
    // Retry while wanted: the holder's port frees when its process exits, which nothing announces.
    timer = setTimeout(tick, retryMs);
    timer.unref();
  };

  const refusedLog = (fields: Record<string, unknown>): void => {
    const minute = Math.floor(clock.now() / 60_000);
    if (refusalsLogged.minute !== minute) refusalsLogged = { minute, count: 0 };
    if (++refusalsLogged.count <= REFUSALS_LOGGED_PER_MINUTE) logger.warn('server.port_release_refused', fields);
  };

  return {
    name: 'default-port',
    routes(app) {
      app.use(
        PORT_RELEASE_PATH,
        bodyLimit({ maxSize: RELEASE_MAX_BODY_BYTES, onError: (c) => c.json({ error: `Request body exceeds ${RELEASE_MAX_BODY_BYTES} bytes` }, 413) }),
      );
      app.post(PORT_RELEASE_PATH, async (c) => {
        // Only a server of the cluster asks; a web page never may (browsers always send an Origin).
        if (c.req.header('origin') !== undefined) return c.json({ error: 'Cluster requests are not taken from web pages' }, 403);
        if (!started || closed) return c.json({ error: `Port ${port} is not served here as a second port` }, 409);
        let body: unknown;
        try {
          body = JSON.parse(await c.req.text());
        } catch {
          return c.json({ error: 'The body is not JSON' }, 400);
        }
        const checked = cluster.checkPortRelease(body);
        if (!checked.ok) {
          refusedLog({ port, reason: checked.reason });
          return c.json({ error: checked.reason }, checked.status);
        }
        const { claim } = checked;
        if (claim.port !== port) return c.json({ error: `Port ${claim.port} is not served here as a second port` }, 409);
        dropping = undefined;
        const result = feed({ type: 'release', key: checked.key });
        if (result.answer === 'replayed') {
          refusedLog({ port, reason: 'the request was used before', from: claim.serverId });
          return c.json({ error: 'The request was used before' }, 403);
        }
        logger.info('server.default_port_yielded', {
          port,
          to: claim.serverId,
          message: dropping
            ? 'its owner started on it again: the connections there were closed, and the port is left to it'
            : 'its owner started on it again: the port is left to it',
        });
        if (dropping) await within(dropping, DROP_ANSWER_MS);
        return c.json({ released: true, port }, 200);
      });
      app.all(PORT_RELEASE_PATH, (c) => c.body(null, 405, { allow: 'POST' }));
    },
    start(info) {
      if (info.port === port || !cluster.node) return;
      started = true;
      unsubscribe = cluster.node.onLeaderChange(check);
      tick();
    },
    close() {
      closed = true;
      clearTimeout(timer);
      unsubscribe?.();
      check();
    },
  };
}

/** Resolves when `promise` does, or after `ms`, whichever comes first; no timer is left behind. */
function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}
