/**
 * Baseline: a bare `ws` server holding connections, for bytes per connection and connection rate.
 * It reads every frame (answering `ping` with `pong`, so clients can confirm they were heard) and
 * keeps nothing else.
 */
import { createServer } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { serve } from './serve.js';

const server = createServer((_req, res) => res.writeHead(404).end());
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws)));
wss.on('connection', (ws: WebSocket) => {
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString());
    if (message.type === 'ping') ws.send(JSON.stringify({ type: 'pong', timestamp: message.timestamp }));
  });
});

serve('bare-ws', server, () => {
  for (const ws of wss.clients) ws.terminate();
});
