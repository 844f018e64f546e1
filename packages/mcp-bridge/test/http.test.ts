/** The Streamable HTTP handler, driven by the SDK's own Client through `fetch` routed to it (no sockets). */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createMcpBridge } from '../src/bridge.js';
import { createMcpHttpHandler, type McpHttpHandler, type McpHttpOptions } from '../src/http.js';
import { originPolicyFor } from '@mdp/core';
import { endpoint, manualClock, prompt, settle } from '@mdp/test-kit';
import { UNSENDABLE_DATA_ERROR } from '@mdp/protocol';
import { FakeHost, listed } from './fakes.js';

const URL_ = 'http://127.0.0.1:4000/mcp';
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

function setup(options: Partial<McpHttpOptions> = {}) {
  const host = new FakeHost();
  host.set([listed('todo', [endpoint('/items', 'GET')])]);
  const clock = manualClock(0);
  const bridge = createMcpBridge({ host });
  const handler = createMcpHttpHandler(bridge, { originPolicy: originPolicyFor('127.0.0.1'), clock, ...options });
  open.push(bridge, handler);
  const fetch = (input: string | URL | Request, init?: RequestInit) => handler.handle(new Request(input, init));
  return { host, clock, bridge, handler, fetch };
}

async function agent(
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(URL_), { fetch });
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(transport);
  open.push(client);
  return { client, transport };
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  new Request(URL_, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });

async function errorOf(response: Response): Promise<{ status: number; code: number; message: string }> {
  const body = (await response.json()) as { error: { code: number; message: string } };
  return { status: response.status, code: body.error.code, message: body.error.message };
}

describe('Streamable HTTP sessions', () => {
  it('the SDK client opens a session, lists and calls; DELETE ends it', async () => {
    const { fetch, handler } = setup();
    const { client, transport } = await agent(fetch);
    expect(handler.sessions).toBe(1);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('items');
    const result = await client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'GET', path: '/items' } });
    expect(result.structuredContent).toEqual({ ok: true, data: 'done' });
    await transport.terminateSession();
    await settle();
    expect(handler.sessions).toBe(0);
  });

  it('an unknown session is 404, a GET without one 400, a non-initialize POST without one 400', async () => {
    const { handler } = setup();
    expect(await errorOf(await handler.handle(post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': 'nope' })))).toMatchObject({
      status: 404,
      code: -32001,
      message: expect.stringContaining('start a new one with an initialize request'),
    });
    expect(await errorOf(await handler.handle(new Request(URL_, { headers: { accept: 'text/event-stream' } })))).toMatchObject({
      status: 400,
      message: expect.stringContaining('Mcp-Session-Id header is required'),
    });
    expect(await errorOf(await handler.handle(post({ jsonrpc: '2.0', id: 1, method: 'tools/list' })))).toMatchObject({
      status: 400,
      message: 'Bad Request: no Mcp-Session-Id header; start a session with an initialize request',
    });
    expect(handler.sessions).toBe(0);
  });

  it('malformed JSON, a wrong content type and other methods get JSON-RPC errors', async () => {
    const { handler } = setup();
    const bad = new Request(URL_, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{oops',
    });
    expect(await errorOf(await handler.handle(bad))).toMatchObject({ status: 400, code: -32700 });
    const text = new Request(URL_, { method: 'POST', headers: { 'content-type': 'text/plain', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect((await handler.handle(text)).status).toBe(415);
    const put = await handler.handle(new Request(URL_, { method: 'PUT' }));
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST, DELETE, OPTIONS');
    expect(handler.sessions).toBe(0);
  });

  it('refuses a foreign Host or Origin with 403, accepts loopback ones', async () => {
    const { handler, fetch } = setup();
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const rebound = new Request('http://evil.example:4000/mcp', post(init));
    expect(await errorOf(await handler.handle(rebound))).toEqual({ status: 403, code: -32000, message: 'Forbidden: Host "evil.example:4000" is not allowed' });
    expect(await errorOf(await handler.handle(post(init, { origin: 'http://evil.example' })))).toMatchObject({
      status: 403,
      message: expect.stringContaining('Origin'),
    });
    expect(await errorOf(await handler.handle(post(init, { origin: 'null' })))).toMatchObject({ status: 403 });
    const fromLocal = (input: string | URL | Request, i?: RequestInit) =>
      fetch(input, { ...i, headers: { ...Object.fromEntries(new Headers(i?.headers)), origin: 'http://localhost:6274' } });
    await agent(fromLocal);
    expect(handler.sessions).toBe(1);
  });

  it('refuses requests the auth policy does not accept with 401', async () => {
    const { handler, fetch } = setup({ authorize: (request) => request.headers.get('authorization') === 'Bearer good' });
    const response = await fetch(URL_, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    const transport = new StreamableHTTPClientTransport(new URL(URL_), { fetch, requestInit: { headers: { authorization: 'Bearer good' } } });
    const client = new Client({ name: 'a', version: '1' });
    await client.connect(transport);
    open.push(client);
    expect(handler.sessions).toBe(1);
  });

  it('at most maxSessions sessions; the next initialize gets 503', async () => {
    const { fetch, handler } = setup({ maxSessions: 1 });
    await agent(fetch);
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    expect(await errorOf(await handler.handle(post(init)))).toMatchObject({ status: 503, message: expect.stringContaining('Too many MCP sessions (1)') });
  });

  describe('principals', () => {
    const INIT = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const LIST = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    const as = (who: string, extra: Record<string, string> = {}) => ({ 'x-who': who, 'mcp-protocol-version': '2025-06-18', ...extra });
    /** Open a session as `who`; its id (the session is idle once answered: no GET stream). */
    const opened = async (handler: McpHttpHandler, who: string): Promise<string> => {
      const response = await handler.handle(post(INIT, as(who)));
      expect(response.status).toBe(200);
      await response.text();
      return response.headers.get('mcp-session-id')!;
    };
    const principals = (options: Partial<McpHttpOptions> = {}) => setup({ principalOf: (request) => request.headers.get('x-who') ?? '', ...options });

    it('a session answers only the principal that opened it; to anyone else it does not exist', async () => {
      const { handler } = principals();
      const id = await opened(handler, 'alice');
      const stolen = await handler.handle(post(LIST, as('mallory', { 'mcp-session-id': id })));
      expect(await errorOf(stolen)).toMatchObject({ status: 404, code: -32001 });
      const own = await handler.handle(post(LIST, as('alice', { 'mcp-session-id': id })));
      expect(own.status).toBe(200);
      expect(handler.sessions).toBe(1);
    });

    it("past a principal's quota its own oldest idle session makes room; with none idle, 503", async () => {
      const { handler, clock } = principals({ maxSessionsPerPrincipal: 2 });
      const first = await opened(handler, 'alice');
      await clock.advanceSettled(10);
      const second = await opened(handler, 'bob');
      await clock.advanceSettled(10);
      await opened(handler, 'alice');
      await opened(handler, 'alice');
      expect(handler.sessions).toBe(3);
      // alice's first session is gone, bob's is untouched.
      expect((await handler.handle(post(LIST, as('alice', { 'mcp-session-id': first })))).status).toBe(404);
      expect((await handler.handle(post(LIST, as('bob', { 'mcp-session-id': second })))).status).toBe(200);
      // Sessions with a stream open are not idle: none can make room.
      const busy = principals({ maxSessionsPerPrincipal: 1 });
      const held = await opened(busy.handler, 'carol');
      const stream = await busy.handler.handle(new Request(URL_, { headers: { accept: 'text/event-stream', ...as('carol', { 'mcp-session-id': held }) } }));
      expect(stream.status).toBe(200);
      expect(await errorOf(await busy.handler.handle(post(INIT, as('carol'))))).toMatchObject({
        status: 503,
        message: expect.stringContaining('Too many MCP sessions for this credential (1), none idle'),
      });
      await stream.body!.cancel();
    });

    it('a full table makes room from whoever holds the most idle sessions, not from the others', async () => {
      const { handler, clock } = principals({ maxSessions: 4, maxSessionsPerPrincipal: 4 });
      const bob = await opened(handler, 'bob');
      await clock.advanceSettled(10);
      const hog = [await opened(handler, 'hog'), await opened(handler, 'hog'), await opened(handler, 'hog')];
      await opened(handler, 'carol');
      expect(handler.sessions).toBe(4);
      // bob's session is the oldest idle one, but hog holds three.
      expect((await handler.handle(post(LIST, as('bob', { 'mcp-session-id': bob })))).status).toBe(200);
      expect((await handler.handle(post(LIST, as('hog', { 'mcp-session-id': hog[0]! })))).status).toBe(404);
    });

    it('a POST that opens no session (no initialize) never ends a session to make room', async () => {
      const { handler } = principals({ maxSessions: 2, maxSessionsPerPrincipal: 1 });
      const alice = await opened(handler, 'alice');
      await opened(handler, 'bob');
      // The table and bob's quota are full. What bob sends is no initialize: 400, nothing evicted,
      // whether the body comes parsed by the adapter or as a stream, or is no JSON at all.
      expect(await errorOf(await handler.handle(post(LIST, as('bob'))))).toMatchObject({
        status: 400,
        message: expect.stringContaining('start a session with an initialize request'),
      });
      expect(await errorOf(await handler.handle(post(LIST, as('bob')), LIST))).toMatchObject({ status: 400 });
      const garbage = new Request(URL_, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...as('bob') },
        body: '{oops',
      });
      expect(await errorOf(await handler.handle(garbage))).toMatchObject({ status: 400, code: -32700 });
      expect(handler.sessions).toBe(2);
      expect((await handler.handle(post(LIST, as('alice', { 'mcp-session-id': alice })))).status).toBe(200);
      // An initialize still makes room, from bob's own sessions.
      await opened(handler, 'bob');
      expect((await handler.handle(post(LIST, as('alice', { 'mcp-session-id': alice })))).status).toBe(200);
    });
  });

  it('an idle session (nothing in flight, no stream open) is released after sessionIdleMs', async () => {
    const { fetch, handler, clock } = setup({ sessionIdleMs: 60_000 });
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const response = await fetch(URL_, post(init));
    await response.text();
    const id = response.headers.get('mcp-session-id')!;
    expect(handler.sessions).toBe(1);
    // A GET stream open: the agent is there, the session stays.
    const stream = await fetch(URL_, { headers: { accept: 'text/event-stream', 'mcp-session-id': id } });
    expect(stream.status).toBe(200);
    await clock.advanceSettled(120_000);
    expect(handler.sessions).toBe(1);
    // The agent goes away: its stream is cancelled; the session goes once the idle time has passed.
    await stream.body!.cancel();
    await clock.advanceSettled(59_999);
    expect(handler.sessions).toBe(1);
    await clock.advanceSettled(1);
    expect(handler.sessions).toBe(0);
    expect(clock.pending()).toBe(0);
  });

  it('close() ends every session; later requests get 503', async () => {
    const { fetch, handler } = setup();
    const { client } = await agent(fetch);
    const ended = new Promise<void>((resolve) => (client.onclose = resolve));
    await handler.close();
    expect(handler.sessions).toBe(0);
    const after = await fetch(URL_, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(after.status).toBe(503);
    await client.close();
    await ended;
  });
});

describe('answers that JSON cannot write', () => {
  it("a client's answer nested deeper than JSON.stringify goes is an error the agent gets, never an answer that never comes", async () => {
    const s = setup();
    s.host.set([listed('todo', [endpoint('/items', 'GET'), prompt('/review/prompt.md')])]);
    // Parsed from a client's JSON (JSON.parse goes deeper than JSON.stringify can).
    const deep = JSON.parse(`${'['.repeat(20_000)}${']'.repeat(20_000)}`) as unknown;
    const { client } = await agent(s.fetch);
    s.host.answer = (request) =>
      request.path === '/items'
        ? { ok: true, data: { type: 'text', text: 'hi', _meta: { deep } } }
        : { ok: true, data: { messages: [{ role: 'user', content: { type: 'text', text: 'review', _meta: { deep } } }] } };
    const result = await client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'GET', path: '/items' } });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({ ok: false, error: UNSENDABLE_DATA_ERROR });
    // Shown as JSON, the same.
    s.host.answer = () => ({ ok: true, data: { deep } });
    const json = await client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'GET', path: '/items' } });
    expect(json.structuredContent).toEqual({ ok: false, error: UNSENDABLE_DATA_ERROR });
    s.host.answer = (request) =>
      request.path === '/items'
        ? { ok: true, data: { type: 'text', text: 'hi', _meta: { deep } } }
        : { ok: true, data: { messages: [{ role: 'user', content: { type: 'text', text: 'review', _meta: { deep } } }] } };
    const prompts = (await client.listPrompts()).prompts;
    await expect(client.getPrompt({ name: prompts[0]!.name })).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining(UNSENDABLE_DATA_ERROR.message),
    });
    // The session goes on.
    s.host.answer = () => ({ ok: true, data: { type: 'text', text: 'fine' } });
    expect((await client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'GET', path: '/items' } })).content).toEqual([
      { type: 'text', text: 'fine' },
    ]);
  });
});

describe('the credential a call carries (forwardOf)', () => {
  it("each call carries its own request's credential, not that of a later request on the session", async () => {
    // Two credentials of one principal (two tokens of one person): 'narrow' and 'broad'.
    const s = setup({
      principalOf: () => 'alice',
      forwardOf: (request) => {
        const token = request.headers.get('authorization');
        return (given) => ({ ...given, metadata: { ...given?.metadata, stampedFrom: token } });
      },
    });
    // The catalog's first listing waits: a catalog tool's call waits for it.
    let list!: () => void;
    const listed = new Promise<void>((resolve) => (list = resolve));
    const listClients = s.host.listClients.bind(s.host);
    s.host.listClients = async () => {
      await listed;
      return listClients();
    };
    const headers = (token: string, id?: string) => ({
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': '2025-11-25',
      ...(id === undefined ? {} : { 'mcp-session-id': id }),
    });
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const opened = await s.handler.handle(post(init, headers('narrow')));
    const id = opened.headers.get('mcp-session-id')!;
    await opened.text();
    await (await s.handler.handle(post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers('narrow', id)))).text();

    const call = s.handler.handle(post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'items', arguments: {} } }, headers('narrow', id)));
    await settle();
    expect(s.host.calls).toHaveLength(0);
    // Another request of the session, with the other credential, while the call waits.
    await (await s.handler.handle(post({ jsonrpc: '2.0', id: 3, method: 'ping' }, headers('broad', id)))).text();
    list();
    expect((await call).status).toBe(200);
    expect(s.host.calls).toHaveLength(1);
    expect(s.host.calls[0]!.request.auth?.metadata).toEqual({ stampedFrom: 'Bearer narrow' });
  });
});

describe('cancellation over Streamable HTTP', () => {
  /** The host's calls wait until their caller goes away, then end as the router ends them. */
  function hanging(host: FakeHost): void {
    host.answer = () => new Promise(() => undefined);
    host.callPath = async (request, options = {}) => {
      host.calls.push({ request, options });
      return new Promise((resolve) =>
        options.signal?.addEventListener('abort', () => resolve({ ok: false, source: 'server', error: { code: 'transport_error', message: 'caller gone' } }), {
          once: true,
        }),
      );
    };
  }

  it('notifications/cancelled (the SDK client aborting) ends the call, and the POST that carried it is answered 202', async () => {
    const s = setup();
    hanging(s.host);
    const answers: number[] = [];
    const fetch = async (input: string | URL | Request, init?: RequestInit) => {
      const response = await s.fetch(input, init);
      if (typeof init?.body === 'string' && init.body.includes('"tools/call"')) answers.push(response.status);
      return response;
    };
    const { client } = await agent(fetch);
    const abort = new AbortController();
    const call = client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'GET', path: '/items' } }, undefined, { signal: abort.signal });
    await until(() => s.host.calls.length === 1);
    abort.abort('user pressed stop');
    await expect(call).rejects.toThrow();
    await until(() => answers.length === 1);
    expect(s.host.calls[0]!.options.signal?.aborted).toBe(true);
    expect(answers).toEqual([202]);
    // The session goes on.
    s.host.callPath = FakeHost.prototype.callPath;
    s.host.answer = () => ({ ok: true, data: 'done' });
    expect((await client.callTool({ name: 'callPath', arguments: { clientId: 'todo', method: 'GET', path: '/items' } })).structuredContent).toEqual({
      ok: true,
      data: 'done',
    });
  });

  it('closing the HTTP request of a call ends the call at once', async () => {
    const s = setup();
    hanging(s.host);
    const { transport } = await agent(s.fetch);
    const closed = new AbortController();
    const request = new Request(URL_, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'callPath', arguments: { clientId: 'todo', method: 'GET', path: '/items' } },
      }),
      signal: closed.signal,
    });
    const answer = s.handler.handle(request);
    await until(() => s.host.calls.length === 1);
    closed.abort();
    expect((await answer).status).toBe(202);
    expect(s.host.calls[0]!.options.signal?.aborted).toBe(true);
  });
});

/** Wait for `check`, a turn of the event loop at a time (in-process: everything it waits on is queued work). */
async function until(check: () => boolean): Promise<void> {
  for (let turns = 0; !check(); turns += 1) {
    if (turns > 1000) throw new Error('condition never held');
    await settle(1);
  }
}
