/**
 * The routes as a Hono app, for any runtime Hono runs on (and `app.request` in tests). On
 * @hono/node-server, `c.env.outgoing` is the node response: a polled message whose response
 * closes before it finished goes back to the queue. Elsewhere a returned response counts as
 * delivered.
 */
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode, StatusCode } from 'hono/utils/http-status';
import { headersToMap, readBodyText, type Logger } from '@mdp/core';
import { isResponseLive, nodeResponseOf, watchDelivery } from './delivery.js';
import type { PollConnection } from './mailbox.js';
import { INTERNAL_ERROR, type LoopRequest, type LoopResponse, type LoopRoutes } from './routes.js';
import { SESSION_ID_HEADER } from './session-id.js';

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

function requestOf(c: Context): LoopRequest {
  return {
    method: c.req.method,
    sessionHeader: c.req.header(SESSION_ID_HEADER),
    query: (name) => c.req.queries(name),
    headers: () => headersToMap(c.req.raw.headers),
    readBody: (maxBytes) => readBodyText(c.req.raw, maxBytes),
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

/** The four routes; mount with `app.route('/mdp/http-loop', app)`. */
export function createHonoApp(routes: LoopRoutes, logger: Logger): Hono {
  const app = new Hono();

  // Unknown errors become a plain 500; the message is logged, never echoed.
  app.onError((error, c) => {
    logger.error('request.failed', { path: c.req.path, error });
    return respond(c, INTERNAL_ERROR);
  });

  app.post('/connect', async (c) => respond(c, await routes.connect(requestOf(c))));
  app.post('/send', async (c) => respond(c, await routes.send(requestOf(c))));
  app.get('/poll', async (c) => respond(c, await routes.poll(requestOf(c))));
  app.post('/disconnect', (c) => respond(c, routes.disconnect(requestOf(c))));
  return app;
}
