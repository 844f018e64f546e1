/**
 * Issue 18, finding 6: registered paths had no length limit (a 100,000-character path and a
 * 50,000-segment path were accepted, and could never be read: the URL limit answers 431). Now a
 * catalog over the path length, segment count or path count is refused (websocket 1008 with the
 * reason, HTTP loop 400 {error}), catalog changes over the rate close 1013 / answer 429, and a
 * catalog past the paths of all catalogs together closes 1013 / answers 503; the server keeps
 * serving everyone else.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PathDescriptor } from '@mdp/protocol';
import { TestClient, descriptor, endpoint, stopAll } from '@mdp/test-kit';
import { startServer, type TestServer } from '../harness.js';
import { read, wsClientWithSkill } from './clients.js';

afterEach(stopAll);

async function registerOverWs(t: TestServer, paths: PathDescriptor[]): Promise<{ code: number; reason: string }> {
  const client = await TestClient.connect(t.ws);
  client.send({ type: 'registerClient', client: descriptor('greedy', paths) });
  return client.closed;
}

describe('catalog limits', () => {
  it.each([
    ['a 100,000-character path', [endpoint(`/${'a'.repeat(99_999)}`)], 'paths[0].path is 100000 characters long; at most 1024 are allowed'],
    ['a 50,000-segment path', [endpoint('/a'.repeat(50_000))], 'paths[0].path is 100000 characters long; at most 1024 are allowed'],
    ['a path of 33 segments', [endpoint('/a'.repeat(33))], 'paths[0].path has 33 segments; at most 32 are allowed'],
    ['10,001 paths', Array.from({ length: 10_001 }, (_, i) => endpoint(`/p${i}`)), 'Catalog has 10001 paths; at most 10000 are allowed'],
  ])('refuse %s over the websocket with 1008 and keep serving others', async (_label, paths, reason) => {
    const t = await startServer();
    await wsClientWithSkill(t.ws, 'healthy', 'fine');
    expect(await registerOverWs(t, paths)).toEqual({ code: 1008, reason });
    expect(t.server.router.hasClient('greedy')).toBe(false);
    expect(await read(t.http, '/skills/healthy/s')).toMatchObject({ status: 200, body: 'fine' });
  });

  it('refuse a catalog past the paths of all catalogs together: 1013 over the websocket, 503 over the loop; others served', async () => {
    const t = await startServer({ maxTotalPaths: 25 });
    const tens = (prefix: string): PathDescriptor[] => Array.from({ length: 10 }, (_, i) => endpoint(`/${prefix}${i}`));
    await wsClientWithSkill(t.ws, 'healthy', 'fine');
    await TestClient.register(t.ws, descriptor('first', tens('a')));
    // 1 + 10 held: 10 more fit, then 10 more would make 31.
    await TestClient.register(t.ws, descriptor('second', tens('b')));
    const reason = 'The server holds 21 paths; 10 more would pass its limit of 25 paths in all catalogs; try again later';
    expect(await registerOverWs(t, tens('c'))).toEqual({ code: 1013, reason });
    const { sessionId } = (await (await fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST' })).json()) as { sessionId: string };
    const sent = await fetch(`${t.http}/mdp/http-loop/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId },
      body: JSON.stringify({ message: { type: 'registerClient', client: descriptor('looped', tens('d')) } }),
    });
    expect(sent.status).toBe(503);
    expect(sent.headers.get('retry-after')).toBe('1');
    expect(await sent.json()).toEqual({ error: reason });
    expect(await read(t.http, '/skills/healthy/s')).toMatchObject({ status: 200, body: 'fine' });
    // A smaller catalog still fits.
    const small = await fetch(`${t.http}/mdp/http-loop/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId },
      body: JSON.stringify({ message: { type: 'registerClient', client: descriptor('looped', [endpoint('/x')]) } }),
    });
    expect(small.status).toBe(202);
  });

  it('refuse an over-long path over the HTTP loop with 400 {error}, keeping the session', async () => {
    const t = await startServer({ maxPathLength: 64 });
    const { sessionId } = (await (await fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST' })).json()) as { sessionId: string };
    const send = (paths: PathDescriptor[]): Promise<Response> =>
      fetch(`${t.http}/mdp/http-loop/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId },
        body: JSON.stringify({ message: { type: 'registerClient', client: descriptor('greedy', paths) } }),
      });
    const refused = await send([endpoint(`/${'a'.repeat(64)}`)]);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: 'paths[0].path is 65 characters long; at most 64 are allowed' });
    expect((await send([endpoint('/short')])).status).toBe(202);
  });

  it('close a client changing its catalog faster than the rate with 1013', async () => {
    const t = await startServer({ maxCatalogUpdatesPerMinute: 3 });
    const healthy = await wsClientWithSkill(t.ws, 'healthy', 'fine');
    const busy = await wsClientWithSkill(t.ws, 'busy');
    for (let i = 0; i < 3; i++) busy.send({ type: 'updateClientCatalog', clientId: 'busy', paths: [endpoint(`/v${i}`)] });
    const closed = await busy.closed;
    expect(closed.code).toBe(1013);
    expect(closed.reason).toMatch(/^Catalog changes over the limit of 3 per minute; retry in \d+ ms$/);
    expect(await read(t.http, '/skills/healthy/s')).toMatchObject({ status: 200, body: 'fine' });
    expect(healthy.calls).toHaveLength(1);
  });
});
