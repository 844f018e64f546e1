/** The HTTP loop (SPEC §6) at `/mdp/http-loop/*`, answered on node's request without Hono. */
import { createHttpLoopTransport, type HttpLoopTransport, type LoopRelay, type RelayedAnswer, type RelayedRequest } from '@mdp/transport-http-loop';
import type { ServerContext, ServerFeature } from '../feature.js';

const PREFIX = '/mdp/http-loop/';

export interface HttpLoopFeatureOptions {
  /** Default long-poll wait, ms. */
  readonly longPollTimeoutMs: number;
  /** A session with no poll waiting and none started this long ends, ms. */
  readonly idleTimeoutMs: number;
  /** Most sessions, in all and from one remote address. */
  readonly maxSessions: number;
  readonly maxSessionsPerAddress: number;
  /** Bounds of one session's queue: a call past either is refused (503), the session goes on. */
  readonly maxQueuedMessages: number;
  readonly maxQueuedBytes: number;
  /**
   * In a fleet (SPEC §16.7): makes the relay of HTTP loop requests between nodes, given what
   * answers the requests other nodes pass on (the bus feature's `loopRelay`).
   */
  readonly relay?: ((answer: (request: RelayedRequest, signal: AbortSignal) => Promise<RelayedAnswer>) => LoopRelay) | undefined;
}

export interface HttpLoopFeature extends ServerFeature {
  /** Messages queued for HTTP loop sessions and not yet polled (walks every session). */
  readonly queuedMessages: number;
}

export function httpLoopFeature(ctx: ServerContext, options: HttpLoopFeatureOptions): HttpLoopFeature {
  const { relay, ...limits } = options;
  const transport: HttpLoopTransport = createHttpLoopTransport(ctx.router, {
    maxBodyBytes: ctx.maxMessageBytes,
    extractAuth: ctx.extractAuth,
    authorize: ctx.authorize,
    principalOf: ctx.principalOf,
    // Registering a client needs the register scope (SPEC §17).
    scopesOf: ctx.gate.scopesOf,
    extraHeaders: ctx.corsFor,
    inflight: ctx.inflight,
    ...limits,
    ...(relay ? { relay: relay((request, signal) => transport.answerRelayed(request, signal)) } : {}),
    logger: ctx.logger,
  });
  return {
    name: 'http-loop',
    get queuedMessages() {
      return transport.queuedMessages;
    },
    handle(request, response, url) {
      if (!url.startsWith(PREFIX)) return false;
      const end = url.indexOf('?');
      transport.handleNode(request, response, (end < 0 ? url : url.slice(0, end)).slice(PREFIX.length - 1));
      return true;
    },
    close: () => transport.close(),
  };
}
