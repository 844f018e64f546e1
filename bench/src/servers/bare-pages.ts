/**
 * Baseline for the listing scenario: plain node:http answering every listing URL with a page as
 * large as the largest the MDP server writes (one item of a 1 MB description, serialised per
 * request), 40 pages a walk linked by `nextCursor`, and `/mdp/meta` with a small JSON document. No
 * registry, no search: what answering megabyte pages costs this machine, the floor the MDP server's
 * figures stand on.
 */
import { createServer } from 'node:http';
import { serve } from './serve.js';

/** Pages in one walk. */
const PAGES = 40;
const description = 'd'.repeat(1_000_000);
const meta = JSON.stringify({ protocol: 'mdp', protocolVersion: '2.0.0', serverId: 'bare-pages', endpoints: {}, cluster: { role: 'leader' } });

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  let body: string;
  if (url.startsWith('/mdp/meta')) {
    body = meta;
  } else {
    const cursor = Number(/[?&]cursor=(\d+)/.exec(url)?.[1] ?? 0);
    const page = {
      clients: [{ id: `c${cursor}`, name: `Client ${cursor}`, description, paths: [] }],
      ...(cursor + 1 < PAGES ? { nextCursor: String(cursor + 1) } : {}),
    };
    body = JSON.stringify(page);
  }
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
serve('bare-pages', server);
