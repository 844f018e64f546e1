// An MDP server inside a node program of your own: listen, serve, close on a signal.
import { createMdpServer } from '@mdp/server';

const server = createMdpServer({
  host: '127.0.0.1',
  port: Number(process.env.PORT ?? 47372), // 0: any free port
  authTokens: process.env.MDP_AUTH_TOKENS?.split(',').filter((token) => token !== ''),
  logLevel: 'warn', // JSON lines on stderr; or pass `logger` to use your own
});

// Before listening, so that a stop requested as soon as it listens closes it too.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    // Pending calls fail, sockets close, the port is released; close() is idempotent.
    void server.close().then(() => process.exit(0));
  });
}

const info = await server.listen(); // rejects (e.g. EADDRINUSE) with nothing left open
console.log(`MDP server listening on ${info.urls.http} (websocket ${info.urls.ws})`);

// Your program's own work goes here. server.router knows every connected client.
console.log(`${server.router.listClients().length} clients connected`);
