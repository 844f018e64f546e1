/**
 * Regression tests from the first adversarial review of the host API, MCP, the inspector and the
 * settings: each was written failing against the code it found broken, and states the behaviour
 * the fix gave (a deep catalog, dotted aliases, /mdp/cluster from a page, empty secrets, stdout of
 * `mdp-server mcp`, repeated call-many ids, one agent taking every /mcp session).
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { LoopTestClient, TestClient, descriptor, endpoint, stopAll } from '@mdp/test-kit';
import { clientChange, registeredClient, startServer } from './harness.js';
import { CLI, stdioAgent } from './mcp-harness.js';

afterEach(async () => {
  await stopAll();
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('first security review: a client with a deeply nested catalog', () => {
  it('does not break the listings of every other client', async () => {
    const t = await startServer();
    await registeredClient(t, descriptor('good', [endpoint('/x', 'POST')]));
    // 20,000 levels fit easily in one 1 MiB frame; JSON.parse takes them, JSON.stringify does not.
    const depth = 20_000;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const evil = await TestClient.connect(t.ws);
    const frame = `{"type":"registerClient","client":{"id":"deep","name":"d","paths":[{"type":"endpoint","method":"POST","path":"/y","inputSchema":{"a":${deep}}}]}}`;
    evil.sendRaw(frame);
    // Registered, or refused with a close: either way the server has dealt with the frame.
    await Promise.race([clientChange(t.server, 'deep', true), evil.closed]);
    // Either the frame is refused (too deeply nested) or the listing still works: never a 500 for everyone.
    const clients = await fetch(`${t.http}/mdp/clients`);
    expect(clients.status).toBe(200);
    const paths = await fetch(`${t.http}/mdp/paths`);
    expect(paths.status).toBe(200);
    const ids = ((await clients.json()) as { clients: Array<{ id: string }> }).clients.map((c) => c.id);
    expect(ids).toContain('good');
  });
});

describe('first security review: client id aliases', () => {
  it('never sends a call meant for an absent dotted id to a client that merely ends with it', async () => {
    const t = await startServer({ authTokens: ['reader', 'other'] });
    const other = await registeredClient(t, descriptor('app', [endpoint('/deploy', 'POST')]), { authorization: 'Bearer other' });
    // "com.acme.app" is not connected (a page reload, a restart); "app" is another principal's client, not a mirror.
    const res = await post(`${t.http}/mdp/call`, { clientId: 'com.acme.app', method: 'POST', path: '/deploy' }, { authorization: 'Bearer reader' });
    expect(other.calls).toHaveLength(0);
    expect(res.status).toBe(404);
  });
});

describe('first security review: /mdp/cluster from a web page', () => {
  it('refuses a control websocket that carries a browser Origin', async () => {
    const t = await startServer({ cluster: { mode: 'auto', stateDir: undefined, discovery: { attempts: 0 } } });
    const ws = new WebSocket(`${t.ws}/mdp/cluster`, { headers: { origin: 'https://evil.example' } });
    const outcome = await new Promise<string>((resolve) => {
      ws.once('open', () => {
        ws.terminate();
        resolve('open');
      });
      ws.once('unexpected-response', (_req, res) => resolve(`refused ${res.statusCode}`));
      ws.once('error', () => resolve('refused'));
    });
    // Cluster peers never send Origin; a browser always does. A page must not reach cluster RPC.
    expect(outcome).not.toBe('open');
  });
});

describe('first security review: settings that fail open', () => {
  it('refuses MDP_AUTH_TOKEN set but empty, as it refuses MDP_AUTH_TOKEN=","', async () => {
    const child = spawn(process.execPath, [CLI, '--host', '127.0.0.1', '--port', '0', '--cluster-mode', 'standalone', '--log-level', 'silent'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MDP_AUTH_TOKEN: '', MDP_CLUSTER_STATE_DIR: 'none' },
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const outcome = await new Promise<string>((resolve) => {
      child.once('exit', (code) => resolve(`exit ${code}`));
      child.stdout.on('data', () => {
        if (stdout.includes('listening on')) resolve('listening without an auth policy');
      });
    });
    if (child.exitCode === null) child.kill('SIGKILL');
    expect(outcome).toBe('exit 64');
  });
});

describe('first security review: mdp-server mcp --audit-log -', () => {
  afterEach(async () => {
    await stopAll();
  });

  it('never writes anything but MCP on stdout', async () => {
    let agent: Awaited<ReturnType<typeof stdioAgent>>;
    try {
      agent = await stdioAgent(['--audit-log', '-']);
    } catch {
      return; // Refusing `--audit-log -` for the stdio command at startup is a fix too.
    }
    const stray: string[] = [];
    agent.client.onerror = (error) => stray.push(error.message);
    await LoopTestClient.register(`${agent.http}/mdp/http-loop`, descriptor('app', [endpoint('/x', 'POST')]));
    const result = await agent.client.callTool({ name: 'callPath', arguments: { clientId: 'app', method: 'POST', path: '/x' } });
    expect(result.isError).toBeFalsy();
    // The call's audit line, written after the answer, reaches the agent as a frame that is not MCP.
    await agent.client.ping();
    await agent.client.ping();
    expect(stray).toEqual([]);
  });
});

describe('first security review: call-many fan-out', () => {
  it('does not call one client once per repetition of its id', async () => {
    const t = await startServer();
    const client = await registeredClient(t, descriptor('app', [endpoint('/x', 'POST')]));
    // One request naming the same id 1,000 times makes 1,000 calls (each carrying the body twice):
    // a 0.9 MB request held ~1.8 GB and blocked the event loop for ~11 s in the review.
    const res = await post(`${t.http}/mdp/call-many`, { clientIds: Array.from({ length: 50 }, () => 'app'), method: 'POST', path: '/x', body: 'x' });
    // Refusing the repetition (400) or collapsing it (one call) are both fixes.
    if (res.status !== 400) expect(client.calls).toHaveLength(1);
  });
});

describe('first security review: /mcp session cap', () => {
  it('lets one agent not lock every other agent out', async () => {
    const t = await startServer({ authTokens: ['agent-a', 'agent-b'], mcp: { maxSessions: 4 } });
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'r', version: '0' } },
    };
    const open = (token: string) =>
      post(`${t.http}/mcp`, init, { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' }).then(async (res) => {
        await res.text();
        return res.status;
      });
    // Agent A opens sessions and leaves them idle (no DELETE), as a crashed or hostile agent does.
    for (let i = 0; i < 4; i++) expect(await open('agent-a')).toBe(200);
    // Agent B, another principal, must still get a session (a quota per principal, or the oldest idle one evicted).
    expect(await open('agent-b')).toBe(200);
  });
});
