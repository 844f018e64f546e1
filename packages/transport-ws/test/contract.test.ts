/** The transport contract the HTTP loop runs too (`@mdp/test-kit/transport-suite`), over a real websocket. */
import { TestClient } from '@mdp/test-kit';
import { runTransportSuite } from '@mdp/test-kit/transport-suite';
import { startHarness } from './helpers.js';

runTransportSuite('websocket', {
  async start() {
    const harness = await startHarness();
    return {
      router: harness.router,
      async register(client) {
        const ws = await TestClient.register(harness.url, client);
        return {
          get handler() {
            return ws.handler;
          },
          set handler(handler) {
            ws.handler = handler;
          },
          calls: ws.calls,
          async send(message) {
            ws.send(message);
            await ws.roundTrip();
          },
          close: () => ws.close(),
        };
      },
      stop: () => harness.stop(),
    };
  },
});
