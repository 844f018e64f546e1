/**
 * The transport contract the websocket runs too (`@mdp/test-kit/transport-suite`), over the HTTP
 * loop, once per adapter (`handleNode` on node:http and the Hono routes).
 */
import { Router } from '@mdp/core';
import { LoopTestClient } from '@mdp/test-kit';
import { runTransportSuite } from '@mdp/test-kit/transport-suite';
import { createHttpLoopTransport } from '../src/index.js';
import { ADAPTERS, MOUNT, stopServing } from './helpers.js';

for (const [name, serve] of ADAPTERS) {
  runTransportSuite(`HTTP loop, ${name}`, {
    async start() {
      const router = new Router({ invocationTimeoutMs: 2_000, heartbeatIntervalMs: 60_000, heartbeatTimeoutMs: 120_000 });
      const transport = createHttpLoopTransport(router);
      const { server, port } = await serve(transport);
      const base = `http://127.0.0.1:${port}${MOUNT}`;
      return {
        router,
        async register(client) {
          const loop = await LoopTestClient.register(base, client);
          return {
            get handler() {
              return loop.handler;
            },
            set handler(handler) {
              loop.handler = handler ?? (() => 'ok');
            },
            calls: loop.calls,
            async send(message) {
              const response = await loop.send(message);
              await response.body?.cancel();
              if (response.status !== 202) throw new Error(`send answered ${response.status}`);
            },
            close: () => loop.close(),
          };
        },
        stop: () => stopServing(transport, router, server),
      };
    },
  });
}
