/**
 * Tenancy by principal (issue 36, item 5), end to end with two static tokens: under `--tenancy
 * principal` each token's holder lists, reads and calls only the clients registered with it and the
 * shared ones, by every way in (skill routes, host API, MCP, inspector), and another's client looks
 * exactly like one nobody registered. `shared` (the default) keeps every client for everyone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { descriptor, endpoint, skill, stopAll, track } from '@mdp/test-kit';
import { createMdpServer, parseCliArgs } from '../src/index.js';
import { registeredClient, registeredLoopClient, startServer, type TestServer } from './harness.js';

afterEach(stopAll);

const ALICE = 'alice-token';
const BOB = 'bob-token';
const as = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
const post = (token: string, body: unknown): RequestInit => ({
  method: 'POST',
  headers: { ...as(token), 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const paths = (...own: ReturnType<typeof endpoint>[]) => [skill('/docs/skill.md'), endpoint('/ping', 'GET'), ...own];

/** A server under `options` with Alice's IDE (websocket), Bob's IDE (HTTP loop) and a lobby of Bob's. */
async function world(options: Parameters<typeof startServer>[0]) {
  const t = await startServer({ authTokens: [ALICE, BOB], ...options });
  const alice = await registeredClient(t, descriptor('alice-ide', paths(endpoint('/editor/open', 'POST'))), as(ALICE));
  alice.handler = (call) => `alice-ide ${call.path}`;
  const bob = await registeredLoopClient(t, descriptor('bob-ide', paths(endpoint('/terminal/run', 'POST'))), as(BOB));
  bob.handler = (call) => `bob-ide ${call.path}`;
  const lobby = await registeredClient(t, descriptor('lobby', paths()), as(BOB));
  lobby.handler = (call) => `lobby ${call.path}`;
  return { t, alice, bob, lobby };
}

const ids = async (response: Response): Promise<string[]> => ((await response.json()) as { clients: { id: string }[] }).clients.map((c) => c.id);

/** An MCP agent on the server's /mcp with `token`. */
async function agent(t: TestServer, token: string): Promise<Client> {
  const client = new Client({ name: 'tenancy-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.http}/mcp`), { requestInit: { headers: as(token) } }));
  track({ close: () => client.close().catch(() => undefined) });
  return client;
}

/** The first `clients` event of the inspector's stream, read with `token`. */
async function inspectorClients(t: TestServer, token: string): Promise<string[]> {
  const controller = new AbortController();
  const response = await fetch(`${t.http}/mdp/inspector/events`, { headers: as(token), signal: controller.signal });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before an event: ${text}`);
      text += Buffer.from(value).toString('utf8');
      const event = /event: clients\ndata: (.*)\n\n/.exec(text);
      if (event) return (JSON.parse(event[1]!) as { clients: { id: string }[] }).clients.map((c) => c.id);
    }
  } finally {
    controller.abort();
  }
}

describe('--tenancy principal', () => {
  it("skill routes: another principal's client is the seed's empty 404, unknown_client, as for no client at all", async () => {
    const { t, bob } = await world({ tenancy: 'principal', sharedClients: ['lob*'] });
    expect(await (await fetch(`${t.http}/skills/alice-ide/docs`, { headers: as(ALICE) })).text()).toBe('alice-ide /docs/skill.md');
    expect(await (await fetch(`${t.http}/skills/bob-ide/docs`, { headers: as(BOB) })).text()).toBe('bob-ide /docs/skill.md');
    for (const [hidden, unknown] of [
      ['/skills/bob-ide/docs', '/skills/nobody/docs'],
      ['/bob-ide/skills/docs', '/nobody/skills/docs'],
      ['/skills/bob-ide/no-such', '/skills/nobody/no-such'],
    ] as const) {
      const seen = await fetch(`${t.http}${hidden}`, { headers: as(ALICE) });
      const none = await fetch(`${t.http}${unknown}`, { headers: as(ALICE) });
      expect(seen.status, hidden).toBe(404);
      expect(await seen.text()).toBe('');
      expect(seen.headers.get('mdp-error-code')).toBe('unknown_client');
      expect(seen.headers.get('mdp-error')?.replace('bob-ide', 'X')).toBe(none.headers.get('mdp-error')?.replace('nobody', 'X'));
    }
    expect(bob.calls.filter((call) => call.path === '/docs/skill.md')).toHaveLength(1);
    // The shared lobby is everyone's.
    for (const token of [ALICE, BOB]) expect(await (await fetch(`${t.http}/skills/lobby/docs`, { headers: as(token) })).text()).toBe('lobby /docs/skill.md');
  });

  it("host API: lists, callPath, callPaths and listPaths reach only the caller's clients and the shared ones", async () => {
    const { t, alice, bob } = await world({ tenancy: 'principal', sharedClients: ['lobby'] });
    expect(await ids(await fetch(`${t.http}/mdp/clients`, { headers: as(ALICE) }))).toEqual(['alice-ide', 'lobby']);
    expect(await ids(await fetch(`${t.http}/mdp/clients`, { headers: as(BOB) }))).toEqual(['bob-ide', 'lobby']);
    // One client a page: Alice's pages end with the lobby, their cursors never name Bob's client.
    const seen: string[] = [];
    for (let cursor: string | undefined = ''; cursor !== undefined; ) {
      const page = (await (await fetch(`${t.http}/mdp/clients?limit=1&cursor=${encodeURIComponent(cursor)}`, { headers: as(ALICE) })).json()) as {
        clients: { id: string }[];
        nextCursor?: string;
      };
      seen.push(...page.clients.map((c) => c.id));
      if (page.nextCursor) expect(Buffer.from(page.nextCursor, 'base64url').toString()).not.toContain('bob');
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(['alice-ide', 'lobby']);
    const pathsOf = (await (await fetch(`${t.http}/mdp/paths?search=/`, { headers: as(ALICE) })).json()) as { paths: { clientId: string }[] };
    expect([...new Set(pathsOf.paths.map((p) => p.clientId))]).toEqual(['alice-ide', 'lobby']);

    const hidden = await fetch(`${t.http}/mdp/paths?clientId=bob-ide`, { headers: as(ALICE) });
    const unknown = await fetch(`${t.http}/mdp/paths?clientId=nobody`, { headers: as(ALICE) });
    expect(hidden.status).toBe(404);
    expect((await hidden.text()).replace('bob-ide', 'X')).toBe((await unknown.text()).replace('nobody', 'X'));

    const call = await fetch(`${t.http}/mdp/call`, post(ALICE, { clientId: 'bob-ide', method: 'POST', path: '/terminal/run', body: { cmd: 'rm -rf ~' } }));
    expect(call.status).toBe(404);
    expect(await call.json()).toEqual({ ok: false, source: 'server', error: { code: 'not_found', message: 'No client "bob-ide" is connected' } });
    expect(bob.calls.some((c) => c.path === '/terminal/run')).toBe(false);
    const own = await fetch(`${t.http}/mdp/call`, post(BOB, { clientId: 'bob-ide', method: 'POST', path: '/terminal/run' }));
    expect(await own.json()).toEqual({ ok: true, data: 'bob-ide /terminal/run' });

    const many = (await (await fetch(`${t.http}/mdp/call-many`, post(ALICE, { method: 'GET', path: '/ping' }))).json()) as { results: { clientId: string }[] };
    expect(many.results.map((r) => r.clientId).sort()).toEqual(['alice-ide', 'lobby']);
    const named = (await (await fetch(`${t.http}/mdp/call-many`, post(ALICE, { clientIds: ['bob-ide'], method: 'GET', path: '/ping' }))).json()) as {
      results: unknown[];
    };
    expect(named.results).toEqual([
      { clientId: 'bob-ide', ok: false, source: 'server', error: { code: 'not_found', message: 'No client "bob-ide" is connected' } },
    ]);
    const onlyBobs = await fetch(`${t.http}/mdp/call-many`, post(ALICE, { method: 'POST', path: '/terminal/run' }));
    expect(onlyBobs.status).toBe(404);
    expect(bob.calls.filter((c) => c.path === '/ping')).toHaveLength(0);
    expect(alice.calls.filter((c) => c.path === '/ping')).toHaveLength(1);
  });

  it("MCP: each agent gets tools and resources of its own clients and the shared ones, and cannot call another's", async () => {
    const { t, bob } = await world({ tenancy: 'principal', sharedClients: ['lobby'] });
    const a = await agent(t, ALICE);
    const b = await agent(t, BOB);
    const tools = async (client: Client) =>
      (await client.listTools()).tools.map((tool) => tool.name).filter((name) => !['listClients', 'listPaths', 'callPath', 'callPaths'].includes(name));
    const aliceTools = await tools(a);
    expect(aliceTools).toContain('editor_open');
    expect(aliceTools).not.toContain('terminal_run');
    expect(await tools(b)).toContain('terminal_run');
    const resources = async (client: Client) => (await client.listResources()).resources.map((r) => r.uri);
    expect(await resources(a)).toEqual(expect.arrayContaining(['mdp://alice-ide/docs/skill.md', 'mdp://lobby/docs/skill.md']));
    expect((await resources(a)).some((uri) => uri.includes('bob-ide'))).toBe(false);
    const listed = await a.callTool({ name: 'listClients', arguments: {} });
    expect((listed.structuredContent as { clients: { id: string }[] }).clients.map((c) => c.id)).toEqual(['alice-ide', 'lobby']);
    const refused = await a.callTool({ name: 'callPath', arguments: { clientId: 'bob-ide', method: 'POST', path: '/terminal/run' } });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ error: { code: 'not_found', message: 'No client "bob-ide" is connected' } });
    await expect(a.readResource({ uri: 'mdp://bob-ide/docs/skill.md' })).rejects.toThrow(/No client "bob-ide" is connected/);
    expect(bob.calls.filter((c) => c.path !== '/docs/skill.md')).toHaveLength(0);
  });

  it("the guide (/SKILL.md and MCP's mdp:///SKILL.md) counts and names only the reader's clients", async () => {
    // Alice's IDE alone: Bob sees none of it, not even its id in the guide's example.
    const t = await startServer({ authTokens: [ALICE, BOB], tenancy: 'principal' });
    await registeredClient(t, descriptor('alice-ide', paths()), as(ALICE));
    const guide = async (token: string) => {
      const response = await fetch(`${t.http}/SKILL.md`, { headers: as(token) });
      expect(response.status).toBe(200);
      return response.text();
    };
    const mcpGuide = async (token: string) => {
      const read = await (await agent(t, token)).readResource({ uri: 'mdp:///SKILL.md' });
      return (read.contents[0] as { text: string }).text;
    };
    for (const text of [await guide(ALICE), await mcpGuide(ALICE)]) expect(text).toContain('alice-ide');
    for (const text of [await guide(BOB), await mcpGuide(BOB)]) {
      expect(text).not.toContain('alice-ide');
      expect(text).not.toMatch(/\b1 client/);
    }
  });

  it("inspector: each reader's event stream lists its own clients and the shared ones", async () => {
    const { t } = await world({ tenancy: 'principal', sharedClients: ['lobby'] });
    expect(await inspectorClients(t, ALICE)).toEqual(['alice-ide', 'lobby']);
    expect(await inspectorClients(t, BOB)).toEqual(['bob-ide', 'lobby']);
  });

  it('is refused at start-up without an auth policy: there is no principal to separate by', () => {
    expect(() => createMdpServer({ tenancy: 'principal' })).toThrow(/tenancy principal needs an auth policy/);
    const cli = parseCliArgs(['--tenancy', 'principal'], {});
    expect(cli).toEqual({ kind: 'error', messages: [expect.stringMatching(/^--tenancy: tenancy principal needs an auth policy \(--auth-token/)] });
    expect(parseCliArgs(['--tenancy', 'principal', '--auth-token', 'x', '--shared-client', 'team-*'], {})).toMatchObject({
      kind: 'run',
      options: { tenancy: 'principal', sharedClients: ['team-*'] },
    });
    expect(parseCliArgs(['--tenancy', 'tenant'], {})).toMatchObject({ kind: 'error' });
    expect(parseCliArgs(['--tenancy', 'principal', '--auth-token', 'x', '--shared-client', 'a\u0001b'], {})).toMatchObject({ kind: 'error' });
  });
});

describe('--tenancy shared (the default)', () => {
  it('keeps every client for every token, by every way in', async () => {
    const { t } = await world({});
    expect(await ids(await fetch(`${t.http}/mdp/clients`, { headers: as(ALICE) }))).toEqual(['alice-ide', 'bob-ide', 'lobby']);
    expect(await (await fetch(`${t.http}/skills/bob-ide/docs`, { headers: as(ALICE) })).text()).toBe('bob-ide /docs/skill.md');
    expect(await (await fetch(`${t.http}/mdp/call`, post(ALICE, { clientId: 'bob-ide', method: 'POST', path: '/terminal/run' }))).json()).toEqual({
      ok: true,
      data: 'bob-ide /terminal/run',
    });
    expect(await inspectorClients(t, ALICE)).toEqual(['alice-ide', 'bob-ide', 'lobby']);
    const a = await agent(t, ALICE);
    expect((await a.listTools()).tools.map((tool) => tool.name)).toContain('terminal_run');
  });
});
