/** The MDP websocket endpoint (SPEC §5): upgrades on any path but `/mdp/cluster`. */
import type { HeaderMap } from '@mdp/core';
import type { MirrorPeer } from '@mdp/cluster';
import { createWebSocketTransport } from '@mdp/transport-ws';
import type { ServerContext, ServerFeature } from '../feature.js';

/** The cluster control websocket's path, which is not an MDP client endpoint. */
const CLUSTER_PATH = '/mdp/cluster';

export interface WebSocketFeatureOptions {
  /** Most bytes waiting for one peer; calls past it are refused while it reads. */
  readonly maxBufferedBytes: number;
  /** How long a peer over `maxBufferedBytes` may go without reading before it is closed 1013, ms. */
  readonly stallTimeoutMs: number;
  /** Time from the handshake to the first registerClient, ms. */
  readonly registerTimeoutMs: number;
  /** Most connections, in all and from one remote address. */
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
}

/** `mirrorPeer`: the cluster member an upgrade proves it is a mirror link of (the cluster feature's). */
export function websocketFeature(
  ctx: ServerContext,
  options: WebSocketFeatureOptions,
  mirrorPeer: (headers: HeaderMap) => MirrorPeer | undefined = () => undefined,
): ServerFeature {
  const transport = createWebSocketTransport(ctx.router, {
    maxMessageBytes: ctx.maxMessageBytes,
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
    principalOf: ctx.principalOf,
    // Registering a client needs the register scope (SPEC §17).
    scopesOf: ctx.gate.scopesOf,
    peerOf: mirrorPeer,
    inflight: ctx.inflight,
    ...options,
    logger: ctx.logger,
  });
  return {
    name: 'websocket',
    upgrade(request, socket, head, path) {
      if (path === CLUSTER_PATH) return false;
      transport.handleUpgrade(request, socket, head);
      return true;
    },
    close: () => transport.close(),
  };
}
