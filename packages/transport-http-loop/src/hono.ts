/**
 * The HTTP loop as Hono routes (`@mdp/transport-http-loop/hono`), for embedders whose server is a
 * Hono app, on any runtime Hono runs on (and `app.request` in tests). The MDP server answers these
 * routes on node's request (`transport.handleNode`); both adapters serve the same routes and
 * sessions, and the package's main entry never loads Hono.
 *
 * On @hono/node-server, `c.env.outgoing` is the node response: a polled message whose response
 * closes before it finished goes back to the queue. Elsewhere a returned response counts as
 * delivered.
 */
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode, StatusCode } from 'hono/utils/http-status';
import { headersToMap, readBodyText, type InflightBudget } from '@mdp/core';
import { isResponseLive, nodeResponseOf, watchDelivery } from './delivery.js';
import type { PollConnection } from './mailbox.js';
import { EMPTY_404, INTERNAL_ERROR, type LoopRequest, type LoopResponse } from './routes.js';
import { SESSION_ID_HEADER } from './session-id.js';
import { loopRoutesOf, type HttpLoopTransport } from './transport.js';

const JSON_TYPE = { 'content-type': 'application/json' } as const;

/** A poll's connection seen through the request's abort signal and, on node, its response. */
function connectionOf(c: Context): PollConnection {
  const signal = c.req.raw.signal;
  const response = nodeResponseOf(c.env);
  return {
    isLive: () => !signal.aborted && (response === undefined || isResponseLive(response)),
    onGone(listener) {
      signal.addEventListener('abort', listener, { once: true });
      return () => signal.removeEventListener('abort', listener);
    },
  };
}

/** On @hono/node-server, the remote address of `env.incoming`'s socket. */
function remoteAddressOf(env: unknown): string | undefined {
  const incoming = (env as { incoming?: { socket?: { remoteAddress?: unknown } } } | undefined)?.incoming;
  const address = incoming?.socket?.remoteAddress;
  return typeof address === 'string' ? address : undefined;
}

function requestOf(c: Context, inflight: InflightBudget): LoopRequest {
  return {
    method: c.req.method,
    sessionHeader: c.req.header(SESSION_ID_HEADER),
    query: (name) => c.req.queries(name),
    headers: () => headersToMap(c.req.raw.headers),
    readBody: (maxBytes) => readBodyText(c.req.raw, maxBytes, inflight),
    connection: () => connectionOf(c),
    remoteAddress: () => remoteAddressOf(c.env),
    // Read only by a connect.
    get secure() {
      return c.req.url.startsWith('https:');
    },
  };
}

function respond(c: Context, response: LoopResponse): Response {
  if (response.onLost) {
    const outgoing = nodeResponseOf(c.env);
    if (outgoing) watchDelivery(outgoing, response.onLost);
  }
  if (response.body === undefined) return c.body(null, response.status as StatusCode, response.headers);
  return c.body(response.body, response.status as ContentfulStatusCode, response.headers ? { ...response.headers, ...JSON_TYPE } : JSON_TYPE);
}

/**
 * The four routes of `transport`, sharing its sessions with `transport.handleNode`; mount with
 * `app.route('/mdp/http-loop', createHttpLoopRoutes(transport))`. Like `handleNode`, they answer
 * every request under the mount point (another sub-path or method is 404 with an empty body) but
 * OPTIONS, which goes on to the app's CORS middleware.
 */
export function createHttpLoopRoutes(transport: HttpLoopTransport): Hono {
  const { routes, logger, inflight } = loopRoutesOf(transport);
  const app = new Hono();
  app.all('/:route', async (c, next) => {
    if (c.req.method === 'OPTIONS') return next();
    const path = `/${c.req.param('route')}`;
    try {
      return respond(c, await routes.handle(path, requestOf(c, inflight)));
    } catch (error) {
      // Unknown errors become a plain 500; the message is logged, never echoed.
      logger.error('request.failed', { path, error });
      return respond(c, INTERNAL_ERROR);
    }
  });
  app.all('*', (c, next) => (c.req.method === 'OPTIONS' ? next() : respond(c, EMPTY_404)));
  return app;
}
