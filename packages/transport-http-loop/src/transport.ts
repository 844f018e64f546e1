/**
 * The HTTP loop transport (SPEC §6): one set of framework-free routes (`routes.ts`) behind thin
 * adapters: a bare node request handler (`handleNode`) here, and Hono routes in the package's
 * `./hono` entry (`hono.ts`), which finds a transport's routes with {@link loopRoutesOf}. Both
 * share the sessions, so a client may use either. Nothing this module reaches imports Hono.
 */
import {
  DEFAULT_MAX_INFLIGHT_BYTES,
  InflightBudget,
  MAX_TIMER_MS,
  extractTransportAuth,
  silentLogger,
  type HeaderMap,
  type Logger,
  type Router,
  type Scopes,
} from '@mdp/core';
import type { AuthContext } from '@mdp/protocol';
import { HTTP_LOOP_DEFAULTS } from './defaults.js';
import { createNodeHandler, type NodeExtraHeaders, type NodeHandler } from './node-adapter.js';
import { LoopSessionRegistry } from './registry.js';
import { RELAY_POLL_HEADER, RelayedLoopRequest, RelayedPolls, type LoopRelay, type RelayedAnswer, type RelayedRequest } from './relay.js';
import { createLoopRoutes, type LoopRoutes } from './routes.js';

export interface HttpLoopOptions {
  /** How long a poll waits when it gives no valid `waitMs`, ms. Default 25000. */
  longPollTimeoutMs?: number;
  /** Largest accepted request body, bytes. Default 1 MiB (1048576). */
  maxBodyBytes?: number;
  /**
   * A session with no poll waiting and none started for this long ends, and its pending calls fail
   * at once (a page closed without `disconnect`), ms. Default 10000. Live clients keep a poll
   * waiting, also while their handlers run.
   */
  idleTimeoutMs?: number;
  /** Reads the transport auth of a request. Default: extractTransportAuth. */
  extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /**
   * Whether a connect with this transport auth opens a session; refused ones get 401. Default: all.
   * When set, every later call (send, poll, disconnect) needs an accepted credential too.
   */
  authorize?: (auth: AuthContext | undefined) => boolean;
  /**
   * The principal of a credential `authorize` accepted (`AuthGate.principalOf`): later calls on a
   * session must come from the principal that connected it (else 401), and the client ids it
   * registers belong to that principal (another one's `registerClient` is 403).
   */
  principalOf?: (auth: AuthContext | undefined) => string | undefined;
  /**
   * The scopes of a credential `authorize` accepted (`AuthGate.scopesOf`; `undefined`: every scope):
   * a `registerClient` its register scope does not grant is refused, 403
   * (core's `missing_scope`). Read at connect and again at every send.
   */
  scopesOf?: (auth: AuthContext | undefined) => Scopes;
  /** Most sessions at once; more connects get 503 with `Retry-After`. Default 10000. */
  maxSessions?: number;
  /** Most sessions at once from one remote address; more connects get 503. Default 2000. */
  maxSessionsPerAddress?: number;
  /**
   * Most messages queued for one session. A call that would pass it (after dropping ended calls)
   * fails at once with `not_ready` (retry in 1 s) and the session goes on; other messages past
   * twice it end the session. Default 10000.
   */
  maxQueuedMessages?: number;
  /** Most bytes of JSON queued for one session, with the same rules. Default 8 MiB. */
  maxQueuedBytes?: number;
  /**
   * `handleNode` only: headers merged into every answer (e.g. CORS), computed from the request when
   * it is answered. Names in lower case; they cannot replace `content-type`, `content-length`,
   * `allow` or `connection`.
   */
  extraHeaders?: NodeExtraHeaders;
  /**
   * The node's budget on bytes received but not yet a whole message (core's `InflightBudget`),
   * shared with the other edges: a body counts against it while it is read. Past it, the body whose
   * reading began first is answered 503 `{error}` with `Retry-After: 1` and the connection closes.
   * Default: a budget of this transport's own, 64 MiB.
   */
  inflight?: InflightBudget;
  /**
   * In a fleet (SPEC §16.7): requests for sessions another node holds go there, and every session
   * opened here is held for the others before `/connect` answers. Answer what other nodes pass on
   * with `answerRelayed`. Default: none (a session unknown here is 404).
   */
  relay?: LoopRelay;
  logger?: Logger;
}

export interface HttpLoopTransport {
  /**
   * The same routes on a node `request` listener, without Fetch objects: call it for requests
   * under the mount point with `subPath` the rest of the pathname (`'/connect'`, `'/send'`,
   * `'/poll'`, `'/disconnect'`; anything else is 404). It answers every request it gets, so write
   * nothing before; OPTIONS (CORS preflight) belongs to the server.
   */
  readonly handleNode: NodeHandler;
  /** HTTP loop sessions currently open. */
  readonly sessionCount: number;
  /** Messages queued for every session and not yet polled (walks every session). */
  readonly queuedMessages: number;
  /** Whether the idle watch holds a timer; false once closed. */
  readonly idleTimerArmed: boolean;
  /**
   * Answer a request another node of the fleet passed on for a session held here (relay.ts), as if
   * it had come straight in; `signal` aborts when that node gives up on it. Never relayed again: a
   * session no longer here is 404.
   */
  answerRelayed(request: RelayedRequest, signal: AbortSignal): Promise<RelayedAnswer>;
  /** End every session (pending calls fail) and answer waiting polls. Idempotent. */
  close(): Promise<void>;
}

/** What the other adapters of this package need of a transport: its routes, where to log, what bodies count against. */
interface LoopInternals {
  readonly routes: LoopRoutes;
  readonly logger: Logger;
  readonly inflight: InflightBudget;
}

const internals = new WeakMap<HttpLoopTransport, LoopInternals>();

/** The framework-free routes of a transport made by {@link createHttpLoopTransport}. Not exported by the package. */
export function loopRoutesOf(transport: HttpLoopTransport): LoopInternals {
  const found = internals.get(transport);
  if (found === undefined) throw new TypeError('Not an HTTP loop transport made by createHttpLoopTransport');
  return found;
}

export function createHttpLoopTransport(router: Router, options: HttpLoopOptions = {}): HttpLoopTransport {
  const longPollTimeoutMs = options.longPollTimeoutMs ?? HTTP_LOOP_DEFAULTS.longPollTimeoutMs;
  const maxBodyBytes = options.maxBodyBytes ?? HTTP_LOOP_DEFAULTS.maxBodyBytes;
  if (!Number.isFinite(longPollTimeoutMs) || longPollTimeoutMs < 0) {
    throw new RangeError('longPollTimeoutMs must be a non-negative number of milliseconds');
  }
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes <= 0) throw new RangeError('maxBodyBytes must be a positive integer');
  const idleTimeoutMs = options.idleTimeoutMs ?? HTTP_LOOP_DEFAULTS.idleTimeoutMs;
  if (!Number.isFinite(idleTimeoutMs) || idleTimeoutMs <= 0 || idleTimeoutMs > MAX_TIMER_MS) {
    throw new RangeError(`idleTimeoutMs must be a positive number of milliseconds, at most ${MAX_TIMER_MS}`);
  }
  const queueLimits = {
    maxMessages: options.maxQueuedMessages ?? HTTP_LOOP_DEFAULTS.maxQueuedMessages,
    maxBytes: options.maxQueuedBytes ?? HTTP_LOOP_DEFAULTS.maxQueuedBytes,
  };
  for (const [name, value] of Object.entries(queueLimits)) {
    if (!Number.isInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer`);
  }
  const logger = (options.logger ?? silentLogger).child({ transport: 'http-loop' });
  const inflight = options.inflight ?? new InflightBudget(DEFAULT_MAX_INFLIGHT_BYTES, { logger });
  const registry = new LoopSessionRegistry(router, logger, {
    idleTimeoutMs,
    sessionLimits: {
      total: options.maxSessions ?? HTTP_LOOP_DEFAULTS.maxSessions,
      perAddress: options.maxSessionsPerAddress ?? HTTP_LOOP_DEFAULTS.maxSessionsPerAddress,
    },
    queueLimits,
    onForget: options.relay ? (id) => options.relay?.release(id) : undefined,
  });
  const polls = new RelayedPolls();
  let closed = false;
  const routes = createLoopRoutes({
    registry,
    logger,
    longPollTimeoutMs,
    maxBodyBytes,
    extractAuth: options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers)),
    authorize: options.authorize,
    principalOf: options.principalOf,
    scopesOf: options.scopesOf,
    isClosed: () => closed,
    relay: options.relay,
  });

  const transport: HttpLoopTransport = {
    handleNode: createNodeHandler(routes, logger, options.extraHeaders, inflight),
    get sessionCount() {
      return registry.size;
    },
    get queuedMessages() {
      return registry.queuedMessages;
    },
    get idleTimerArmed() {
      return registry.idleTimerArmed;
    },
    async answerRelayed(request, signal) {
      const mark = request.target.indexOf('?');
      const path = mark < 0 ? request.target : request.target.slice(0, mark);
      const pollId = request.headers[RELAY_POLL_HEADER];
      if (request.method === 'POST' && (path === '/abandon' || path === '/requeue')) {
        if (pollId !== undefined) {
          if (path === '/abandon') polls.abandon(pollId);
          else polls.requeue(pollId);
        }
        return { status: 204, headers: {}, body: '' };
      }
      const poll = path === '/poll' ? pollId : undefined;
      let putBack: (() => void) | undefined;
      try {
        const response = await routes.handle(path, new RelayedLoopRequest(request, polls.connection(poll, signal)));
        putBack = response.onLost;
        return { status: response.status, headers: { ...response.headers }, body: response.body ?? '' };
      } catch (error) {
        logger.error('request.failed', { path, relayed: true, error });
        return { status: 500, headers: {}, body: JSON.stringify({ error: 'Internal error' }) };
      } finally {
        polls.ended(poll, putBack);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      registry.endAll('transport closed');
    },
  };
  internals.set(transport, { routes, logger, inflight });
  return transport;
}
