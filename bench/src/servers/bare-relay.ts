/**
 * Baseline: the floor of the relay design over a websocket. Each GET becomes one JSON message to
 * the websocket of the client named in the URL, and the client's reply becomes the response. No
 * validation, no path resolution, no time-outs, no headers forwarded: only what any relay must do.
 */
import { createServer, type ServerResponse } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { SKILL_CONTENT_TYPE } from '../fixtures.js';
import { serve, splitSkillUrl } from './serve.js';

const clients = new Map<string, WebSocket>();
const pending = new Map<string, ServerResponse>();
let nextRequestId = 0;

const server = createServer((req, res) => {
  const target = req.method === 'GET' && req.url ? splitSkillUrl(req.url) : undefined;
  const socket = target && clients.get(target[0]);
  if (!target || !socket) {
    res.writeHead(404).end();
    return;
  }
  const requestId = String(++nextRequestId);
  pending.set(requestId, res);
  socket.send(JSON.stringify({ type: 'callClient', requestId, clientId: target[0], method: 'GET', path: target[1] }));
});
server.keepAliveTimeout = 60_000;

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws)));
wss.on('connection', (ws: WebSocket) => {
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString());
    if (message.type === 'callClientResult') {
      const res = pending.get(message.requestId);
      if (!res) return;
      pending.delete(message.requestId);
      res.writeHead(200, { 'content-type': SKILL_CONTENT_TYPE });
      res.end(message.data);
    } else if (message.type === 'registerClient') {
      clients.set(message.client.id, ws);
    } else if (message.type === 'ping') {
      ws.send(JSON.stringify({ type: 'pong', timestamp: message.timestamp }));
    }
  });
});

serve('bare-relay', server, () => {
  for (const ws of wss.clients) ws.terminate();
});
