/**
 * The host API as Hono routes, for embedders whose server is a Hono app (`@mdp/host-api/hono`).
 * The MDP server itself answers these routes on node's request (`createNodeHostHandler`); both go
 * through the same handler.
 */
import { Hono } from 'hono';
import { DEFAULT_MAX_INFLIGHT_BYTES, InflightBudget, headersToMap, readBodyText, type HostApi } from '@mdp/core';
import { HOST_ROUTES, createHostHandler, type HostApiOptions } from './handler.js';

/** The four routes; mount at the root (`app.route('/', createHostRoutes(host))`). */
export function createHostRoutes(host: HostApi, options: HostApiOptions = {}): Hono {
  const handle = createHostHandler(host, options);
  const inflight = options.inflight ?? new InflightBudget(DEFAULT_MAX_INFLIGHT_BYTES, { ...(options.logger ? { logger: options.logger } : {}) });
  const app = new Hono();
  for (const path of Object.keys(HOST_ROUTES)) {
    app.all(path, async (c) => {
      const answer = await handle({
        method: c.req.method,
        path,
        query: (name) => c.req.query(name),
        // A Request built in process (app.request) has no Host header; its URL's host stands for it.
        headers: () => {
          const map = headersToMap(c.req.raw.headers);
          return map.host === undefined ? { ...map, host: new URL(c.req.url).host } : map;
        },
        readBody: (maxBytes) => readBodyText(c.req.raw, maxBytes, inflight),
        signal: () => c.req.raw.signal,
      });
      const headers = new Headers(answer.headers);
      if (answer.body !== undefined) headers.set('content-type', 'application/json; charset=utf-8');
      return new Response(answer.body ?? null, { status: answer.status, headers });
    });
  }
  return app;
}
