/**
 * Baseline: plain node:http answering the skill route with a fixed text. The ceiling of the HTTP
 * side — no relay at all.
 */
import { createServer } from 'node:http';
import { SKILL_CONTENT_TYPE, SKILL_TEXT } from '../fixtures.js';
import { serve, splitSkillUrl } from './serve.js';

const body = Buffer.from(SKILL_TEXT);

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url && splitSkillUrl(req.url)) {
    res.writeHead(200, { 'content-type': SKILL_CONTENT_TYPE, 'content-length': body.length });
    res.end(body);
    return;
  }
  res.writeHead(404).end();
});
server.keepAliveTimeout = 60_000;
serve('bare-http', server);
