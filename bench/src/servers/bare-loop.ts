/**
 * Baseline: the floor of the relay design over the HTTP loop (same routes and bodies as the MDP
 * HTTP loop). Sessions hold a queue and at most one waiting poll; each skill GET is queued as one
 * JSON message for the client named in the URL; the client's `callClientResult` sent back answers
 * it. No validation, no path resolution, no auth, no CORS: only what any HTTP loop relay must do.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { SKILL_CONTENT_TYPE } from '../fixtures.js';
import { serve, splitSkillUrl } from './serve.js';

interface LoopSession {
  readonly queue: string[];
  poll: { readonly res: ServerResponse; readonly timer: NodeJS.Timeout } | undefined;
}

const sessions = new Map<string, LoopSession>();
const clients = new Map<string, LoopSession>();
const pending = new Map<string, ServerResponse>();
let nextRequestId = 0;
const PREFIX = '/mdp/http-loop/';
const JSON_TYPE = { 'content-type': 'application/json' };

function readBody(req: IncomingMessage, done: (text: string) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => done(Buffer.concat(chunks).toString()));
}

function deliver(session: LoopSession, message: object): void {
  const text = JSON.stringify(message);
  const poll = session.poll;
  if (!poll) {
    session.queue.push(text);
    return;
  }
  session.poll = undefined;
  clearTimeout(poll.timer);
  poll.res.writeHead(200, JSON_TYPE).end(`{"message":${text}}`);
}

function sessionOf(req: IncomingMessage, url: URL): LoopSession | undefined {
  const id = (req.headers['x-mdp-session-id'] as string | undefined) ?? url.searchParams.get('sessionId') ?? '';
  return sessions.get(id);
}

const server = createServer((req, res) => {
  const rawUrl = req.url ?? '/';
  if (!rawUrl.startsWith(PREFIX)) {
    const target = req.method === 'GET' ? splitSkillUrl(rawUrl) : undefined;
    const session = target && clients.get(target[0]);
    if (!target || !session) {
      res.writeHead(404).end();
      return;
    }
    const requestId = String(++nextRequestId);
    pending.set(requestId, res);
    deliver(session, { type: 'callClient', requestId, clientId: target[0], method: 'GET', path: target[1] });
    return;
  }
  const url = new URL(rawUrl, 'http://127.0.0.1');
  switch (url.pathname.slice(PREFIX.length)) {
    case 'connect':
      return readBody(req, () => {
        const id = randomUUID();
        sessions.set(id, { queue: [], poll: undefined });
        res.writeHead(200, JSON_TYPE).end(JSON.stringify({ sessionId: id }));
      });
    case 'send':
      return readBody(req, (text) => {
        const session = sessionOf(req, url);
        if (!session) return res.writeHead(404).end();
        const message = JSON.parse(text).message;
        if (message.type === 'callClientResult') {
          const reader = pending.get(message.requestId);
          if (reader) {
            pending.delete(message.requestId);
            reader.writeHead(200, { 'content-type': SKILL_CONTENT_TYPE }).end(message.data);
          }
        } else if (message.type === 'registerClient') {
          clients.set(message.client.id, session);
        } else if (message.type === 'ping') {
          deliver(session, { type: 'pong', timestamp: message.timestamp });
        }
        res.writeHead(202, JSON_TYPE).end('{"ok":true}');
      });
    case 'poll': {
      const session = sessionOf(req, url);
      if (!session) return void res.writeHead(404).end();
      const queued = session.queue.shift();
      if (queued !== undefined) return void res.writeHead(200, JSON_TYPE).end(`{"message":${queued}}`);
      if (session.poll) {
        clearTimeout(session.poll.timer);
        session.poll.res.writeHead(204).end();
      }
      const waitMs = Math.min(Number(url.searchParams.get('waitMs') ?? 25_000) || 0, 60_000);
      // The long-poll time-out: an empty poll is answered 204 after waitMs.
      const timer = setTimeout(() => {
        if (session.poll?.res === res) session.poll = undefined;
        res.writeHead(204).end();
      }, waitMs);
      session.poll = { res, timer };
      return;
    }
    case 'disconnect': {
      const session = sessionOf(req, url);
      if (session) {
        for (const [id, s] of sessions) if (s === session) sessions.delete(id);
        for (const [id, s] of clients) if (s === session) clients.delete(id);
        if (session.poll) {
          clearTimeout(session.poll.timer);
          session.poll.res.writeHead(204).end();
        }
      }
      return void res.writeHead(204).end();
    }
    default:
      res.writeHead(404).end();
  }
});
server.keepAliveTimeout = 60_000;

serve('bare-loop', server, () => {
  for (const session of sessions.values()) if (session.poll) clearTimeout(session.poll.timer);
});
