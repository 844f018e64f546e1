/**
 * `GET /SKILL.md` on the real server (issue 31): the guide names this server's real URLs, its
 * counts follow clients as they come and go, its example skill reads; the host API's origin and auth
 * rules; bad methods; a client named `SKILL.md`. And the same text as the MCP resource, through the
 * SDK's own client.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TestClient, descriptor, endpoint, skill, stopAll } from '@mdp/test-kit';
import { httpAgent } from './mcp-harness.js';
import { clientChange, rawRequest, registeredClient, registeredLoopClient, startServer } from './harness.js';

afterEach(stopAll);

const MARKDOWN = 'text/markdown; charset=utf-8';

/** The `GET …` URLs the guide lists as its example skill. */
function exampleUrls(text: string): string[] {
  const section = text.slice(text.indexOf('A connected client publishes this one'), text.indexOf('## When a read fails'));
  return [...section.matchAll(/`GET (\S+)`/g)].map((m) => m[1]!);
}

describe('GET /SKILL.md', () => {
  it("names this server's URLs, and its counts and example follow the clients", async () => {
    const t = await startServer();
    const empty = await fetch(`${t.http}/SKILL.md`);
    expect(empty.status).toBe(200);
    expect(empty.headers.get('content-type')).toBe(MARKDOWN);
    expect(empty.headers.get('cache-control')).toBe('no-store');
    const first = await empty.text();
    expect(first).toContain('No client is connected right now');
    for (const path of ['/mdp/clients', '/mdp/paths', '/mdp/call', '/mdp/call-many', '/mcp', '/skills/<clientId>/<path>', '/<clientId>/skills/<path>']) {
      expect(first).toContain(`http://127.0.0.1:${t.port}${path}`);
    }
    expect(first).toContain(`# MDP server 127.0.0.1:${t.port}`);
    expect(exampleUrls(first)).toEqual([]);

    // A websocket client with a deep and a shallow skill, an HTTP loop client with an endpoint.
    const ws = await registeredClient(
      t,
      descriptor('app', [endpoint('/status'), skill('/docs/deep/skill.md'), skill('/topics/:topic/skill.md'), skill('/docs/skill.md')]),
    );
    ws.handler = (call) => `# read ${call.path}`;
    const loop = await registeredLoopClient(t, descriptor('loop', [endpoint('/ping', 'POST')]));
    const two = await (await fetch(`${t.http}/SKILL.md`)).text();
    expect(two).toContain('2 clients connected here, publishing 5 paths in all.');
    const urls = exampleUrls(two);
    expect(urls).toEqual([`http://127.0.0.1:${t.port}/skills/app/docs/skill.md`, `http://127.0.0.1:${t.port}/app/skills/docs/skill.md`]);
    for (const url of urls) {
      const read = await fetch(url);
      expect(read.status, url).toBe(200);
      expect(await read.text()).toBe('# read /docs/skill.md');
    }

    const gone = clientChange(t.server, 'app', false);
    await ws.close();
    await gone;
    const one = await (await fetch(`${t.http}/SKILL.md`)).text();
    expect(one).toContain('1 client connected here, publishing 1 path in all.');
    expect(exampleUrls(one)).toEqual([]);
    await loop.close();
  });

  it('HEAD answers the headers of GET without a body; other methods are 405 with Allow', async () => {
    const t = await startServer();
    const get = await fetch(`${t.http}/SKILL.md`);
    const length = Number(get.headers.get('content-length'));
    expect(length).toBe(Buffer.byteLength(await get.text()));
    const head = await rawRequest(t.http, '/SKILL.md', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe(MARKDOWN);
    expect(Number(head.headers['content-length'])).toBe(length);
    expect(head.body).toBe('');
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await rawRequest(t.http, '/SKILL.md', method);
      expect(res.status, method).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD, OPTIONS');
      expect(res.body).toBe('');
    }
    // A query changes nothing; a longer path is not the guide.
    expect((await fetch(`${t.http}/SKILL.md?x=1`)).status).toBe(200);
    expect((await fetch(`${t.http}/SKILL.md/more`)).status).toBe(404);
    expect((await fetch(`${t.http}/skill.md`)).status).toBe(404);
  });

  it('a client named SKILL.md keeps both skill routes, and /SKILL.md stays the guide', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('SKILL.md', [skill('/docs/skill.md'), skill('/SKILL.md')]));
    client.handler = (call) => `client ${call.path}`;
    const guide = await fetch(`${t.http}/SKILL.md`);
    expect(guide.headers.get('content-type')).toBe(MARKDOWN);
    expect(await guide.text()).toContain('1 client connected here, publishing 2 paths in all.');
    expect(client.calls).toEqual([]);
    for (const [route, path] of [
      ['/SKILL.md/skills/docs/skill.md', '/docs/skill.md'],
      ['/skills/SKILL.md/docs', '/docs/skill.md'],
      ['/SKILL.md/skills/SKILL.md', '/SKILL.md'],
      ['/skills/SKILL.md/SKILL.md', '/SKILL.md'],
    ] as const) {
      const res = await fetch(`${t.http}${route}`);
      expect(res.status, route).toBe(200);
      expect(await res.text(), route).toBe(`client ${path}`);
    }
    // Its example is the shallowest skill: the client's own /SKILL.md.
    expect(exampleUrls(await (await fetch(`${t.http}/SKILL.md`)).text())).toEqual([
      `http://127.0.0.1:${t.port}/skills/SKILL.md/SKILL.md`,
      `http://127.0.0.1:${t.port}/SKILL.md/skills/SKILL.md`,
    ]);
  });

  it("follows the host API's origin rules (browser-policy.e2e.test.ts has it among the guarded routes)", async () => {
    const t = await startServer();
    const evil = await fetch(`${t.http}/SKILL.md`, { headers: { origin: 'https://evil.example' } });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    expect(((await evil.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    const local = await fetch(`${t.http}/SKILL.md`, { headers: { origin: 'http://localhost:3000' } });
    expect(local.status).toBe(200);
    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:3000');
  });

  it('under an auth policy needs a credential, and says so', async () => {
    const t = await startServer({ authTokens: ['s3cret'] });
    const refused = await fetch(`${t.http}/SKILL.md`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect(await refused.json()).toEqual({ error: { code: 'unauthorized', message: 'Unauthorized' } });
    expect((await rawRequest(t.http, '/SKILL.md', 'HEAD')).status).toBe(401);
    const ok = await fetch(`${t.http}/SKILL.md`, { headers: { authorization: 'Bearer s3cret' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('send `Authorization: Bearer <token>` with every request below');
  });

  // Review finding: a page registered the id "\ud800x" (a lone surrogate, valid in JSON) with a
  // skill; the next GET /SKILL.md threw in encodeURIComponent and ended the server.
  it('a client id no URL can name is refused at registration; the guide and the server go on', async () => {
    const t = await startServer();
    const client = await TestClient.connect(t.ws, { headers: { origin: 'http://evil.example' } });
    client.sendRaw('{"type":"registerClient","client":{"id":"\\ud800x","name":"n","paths":[{"type":"skill","path":"/a/skill.md"}]}}');
    expect(await client.closed).toEqual({ code: 1008, reason: expect.stringContaining('client.id: must be well-formed Unicode') });
    const guide = await fetch(`${t.http}/SKILL.md`);
    expect(guide.status).toBe(200);
  });

  it('says when /mcp is not served', async () => {
    const t = await startServer({ mcp: { http: false } });
    const text = await (await fetch(`${t.http}/SKILL.md`)).text();
    expect(text).toContain('does not serve MCP over HTTP');
    expect(text).not.toContain(`${t.http}/mcp`);
  });

  it('GET / points at it', async () => {
    const t = await startServer();
    expect(((await (await fetch(`${t.http}/`)).json()) as { links: Record<string, string> }).links.guide).toBe('/SKILL.md');
    expect(await (await fetch(`${t.http}/`, { headers: { accept: 'text/html' } })).text()).toContain('<a href="/SKILL.md">');
  });
});

describe('the guide as an MCP resource', () => {
  it('is listed first and reads the text GET /SKILL.md serves', async () => {
    const agent = await httpAgent();
    const { resources } = await agent.client.listResources();
    expect(resources[0]).toMatchObject({ uri: 'mdp:///SKILL.md', name: 'SKILL.md', mimeType: 'text/markdown' });
    const read = await agent.client.readResource({ uri: 'mdp:///SKILL.md' });
    const text = (read.contents[0] as { text: string }).text;
    expect(text).toBe(await (await fetch(`${agent.http}/SKILL.md`)).text());
    expect(text).toContain(`${agent.http}/mcp`);
  });
});
