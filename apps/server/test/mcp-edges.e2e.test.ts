/**
 * The MCP bridge's edges on a real server: /mcp behind the DNS-rebinding guard and the auth
 * policy, sessions released, the stdio binary's stdout and shutdown, and its flags.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TestClient, recordingLogger, stopAll } from '@mdp/test-kit';
import { HELP, parseCliArgs } from '../src/index.js';
import { request } from 'node:http';
import { PassThrough } from 'node:stream';
import { routeConsoleTo } from '../src/mcp-command.js';
import { createMdpServer } from '../src/server.js';
import { startServer } from './harness.js';
import { CLI, httpAgent } from './mcp-harness.js';

afterEach(stopAll);

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** A POST of initialize to /mcp with the Host header a rebound name would carry (fetch cannot set Host). */
function postWithHost(port: number, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { host, ...MCP_HEADERS } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(INIT));
  });
}

describe('/mcp over HTTP', () => {
  it('refuses a rebound Host and a foreign Origin with 403 and a JSON-RPC error', async () => {
    const t = await startServer();
    const rebound = await postWithHost(t.port, `evil.example:${t.port}`);
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body)).toEqual({
      jsonrpc: '2.0',
      error: { code: -32000, message: `Forbidden: Host "evil.example:${t.port}" is not allowed` },
      id: null,
    });
    const foreign = await fetch(`${t.http}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, origin: 'https://evil.example' }, body: JSON.stringify(INIT) });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { message: string } }).error.message).toBe('Forbidden: Origin "https://evil.example" is not allowed');
    const local = await fetch(`${t.http}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, origin: 'http://localhost:6274' }, body: JSON.stringify(INIT) });
    expect(local.status).toBe(200);
    expect(local.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(local.headers.get('access-control-expose-headers')).toBe('mcp-session-id');
    await local.body?.cancel();
  });

  it('accepts an origin allowed by configuration', async () => {
    const t = await startServer({ allowedOrigins: ['https://agent.example'] });
    const res = await fetch(`${t.http}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, origin: 'https://agent.example' }, body: JSON.stringify(INIT) });
    expect(res.status).toBe(200);
    await res.body?.cancel();
  });

  it('under an auth policy: 401 without a token, a working session with one', async () => {
    const t = await startServer({ authTokens: ['tok'] });
    const refused = await fetch(`${t.http}/mcp`, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(INIT) });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('needs a credential');
    const agent = new Client({ name: 'a', version: '1' });
    await expect(agent.connect(new StreamableHTTPClientTransport(new URL(`${t.http}/mcp`)))).rejects.toThrow();
    const { client } = await httpAgent({ authTokens: ['tok'] }, { headers: { authorization: 'Bearer tok' } });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['listClients', 'listPaths', 'callPath', 'callPaths']);
  });

  it('under an auth policy a session belongs to the credential that opened it', async () => {
    const t = await startServer({ authTokens: ['tok-a', 'tok-b'] });
    const opened = await fetch(`${t.http}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: 'Bearer tok-a' }, body: JSON.stringify(INIT) });
    expect(opened.status).toBe(200);
    await opened.text();
    const id = opened.headers.get('mcp-session-id')!;
    const list = (token: string) =>
      fetch(`${t.http}/mcp`, {
        method: 'POST',
        headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
    const other = await list('tok-b');
    expect(other.status).toBe(404);
    await other.text();
    const own = await list('tok-a');
    expect(own.status).toBe(200);
    await own.text();
  });

  it('an unknown session is a 404, and a session is released when the agent ends it', async () => {
    const t = await startServer();
    const unknown = await fetch(`${t.http}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'mcp-session-id': 'gone' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: number } }).error.code).toBe(-32001);
    const transport = new StreamableHTTPClientTransport(new URL(`${t.http}/mcp`));
    const client = new Client({ name: 'a', version: '1' });
    await client.connect(transport);
    expect(t.server.mcp!.sessions).toBe(1);
    await transport.terminateSession();
    await client.close();
    expect(t.server.mcp!.sessions).toBe(0);
  });

  it('a session whose agent went away (its stream closed) is released after sessionIdleMs', async () => {
    const { logger, seen } = recordingLogger({ level: 'info' });
    const released = seen('mcp.session_expired');
    const t = await startServer({ logger, mcp: { sessionIdleMs: 500 } }); // room for the GET to follow the initialize
    const init = await fetch(`${t.http}/mcp`, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(INIT) });
    await init.text();
    const abort = new AbortController();
    const stream = await fetch(`${t.http}/mcp`, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': init.headers.get('mcp-session-id')! },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(t.server.mcp!.sessions).toBe(1);
    abort.abort();
    await released;
    expect(t.server.mcp!.sessions).toBe(0);
  });

  it('openMcp loads the bridge only between listen and close, and never with mcp: false', async () => {
    const server = createMdpServer({ host: '127.0.0.1', port: 0, logLevel: 'silent' });
    await expect(server.openMcp()).rejects.toThrow('Not listening yet');
    expect(server.mcp).toBeUndefined();
    await server.listen();
    const bridge = await server.openMcp();
    expect(server.mcp).toBe(bridge);
    await server.close();
    await expect(server.openMcp()).rejects.toThrow('The server is shutting down');
    const off = await startServer({ mcp: false });
    await expect(off.server.openMcp()).rejects.toThrow('the MCP bridge is off');
  });

  it('mcp: false serves no /mcp', async () => {
    const t = await startServer({ mcp: false });
    expect((await fetch(`${t.http}/mcp`, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(INIT) })).status).toBe(404);
    expect(t.server.mcp).toBeUndefined();
  });

  it('the generic surface lists only the four generic tools', async () => {
    const { client } = await httpAgent({ mcp: { surface: 'generic' } });
    expect((await client.listTools()).tools).toHaveLength(4);
  });
});

describe('list_changed on a real server', () => {
  it('a page reload (drop, then register again at once) reaches no agent', async () => {
    const agent = await httpAgent();
    const page = { id: 'page', name: 'Page', paths: [{ type: 'endpoint', method: 'POST', path: '/click' }] };
    const first = await TestClient.connect(agent.ws);
    first.send({ type: 'registerClient', client: page });
    await agent.notes.reach('tools', 1);
    await first.close();
    const second = await TestClient.connect(agent.ws);
    second.send({ type: 'registerClient', client: page });
    // Another change, to know that whatever the reload caused has been sent by now.
    const other = await TestClient.connect(agent.ws);
    other.send({ type: 'registerClient', client: { id: 'other', name: 'Other', paths: [{ type: 'skill', path: '/o/skill.md' }] } });
    await agent.notes.reach('resources', 1);
    expect(agent.notes.counts).toEqual({ tools: 1, prompts: 0, resources: 1 });
    expect((await agent.client.listTools()).tools.map((t) => t.name)).toContain('click');
  });
});

describe('mdp-server mcp over stdio', () => {
  it('writes only MCP to stdout, and stops with exit 0 when stdin ends', async () => {
    const child = spawn(process.execPath, [CLI, 'mcp', '--port', '0', '--cluster-mode', 'standalone'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const answered = new Promise<void>((resolve) => child.stdout.on('data', () => stdout.includes('\n') && resolve()));
    child.stdin.write(`${JSON.stringify(INIT)}\n`);
    await answered;
    child.stdin.end();
    expect(await exited).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: { serverInfo: { name: 'mdp-server' }, capabilities: { tools: { listChanged: true } } },
    });
    expect(stderr).toContain('mdp-server listening on http://127.0.0.1:');
    expect(stderr).toContain('"event":"server.stopping","signal":"stdin closed"');
  });

  it('refuses bad MCP flags with one line and the usage exit status (64)', async () => {
    const child = spawn(process.execPath, [CLI, 'mcp', '--mcp-surface', 'everything'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(64);
    expect(stderr.trim().split('\n')[0]).toBe('mdp-server: --mcp-surface must be one of catalog, generic, got "everything"');
  });
});

describe('mdp-server mcp keeps stdout for MCP', () => {
  it('refuses --audit-log - (stdout), wherever it comes from; a plain server takes it', () => {
    expect(parseCliArgs(['--audit-log', '-'], {}, undefined, 'mcp')).toEqual({
      kind: 'error',
      messages: ['--audit-log cannot be - (stdout) with "mdp-server mcp": stdout carries MCP to the agent; give a file'],
    });
    expect(parseCliArgs([], { MDP_AUDIT_LOG: '-' }, undefined, 'mcp')).toMatchObject({
      kind: 'error',
      messages: [expect.stringMatching(/^MDP_AUDIT_LOG \(environment\) cannot be -/)],
    });
    expect(parseCliArgs(['--audit-log', '-'])).toMatchObject({ kind: 'run', options: { auditLog: '-' } });
  });

  it('the binary exits 64 saying why', async () => {
    const child = spawn(process.execPath, [CLI, 'mcp', '--audit-log', '-', '--port', '0', '--cluster-mode', 'standalone'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(64);
    expect(stderr).toContain('stdout carries MCP to the agent');
    expect(stdout).toBe('');
  });

  it('sends what console prints to stderr, so that a printing library cannot break the session', () => {
    const err = new PassThrough();
    let text = '';
    err.setEncoding('utf8').on('data', (d: string) => (text += d));
    const undo = routeConsoleTo(err);
    try {
      console.log('from a library');
      console.info('info');
      console.debug('debug');
    } finally {
      undo();
    }
    expect(text).toBe('from a library\ninfo\ndebug\n');
  });
});

describe('MCP flags', () => {
  it('parse into the mcp options', () => {
    const command = parseCliArgs([
      '--mcp-surface',
      'generic',
      '--mcp-max-tools',
      '12',
      '--mcp-max-content-bytes',
      '65536',
      '--mcp-task-timeout-ms',
      '120000',
      '--mcp-include',
      'page_*',
      '--mcp-include',
      'todo/*',
      '--mcp-exclude',
      '*_delete',
      '--mcp-allow-origin',
      'https://agent.example',
      '--mcp-allow-host',
      'box.lan',
    ]);
    expect(command.kind === 'run' && command.options.mcp).toEqual({
      surface: 'generic',
      maxTools: 12,
      maxContentBytes: 65536,
      taskTimeoutMs: 120_000,
      include: ['page_*', 'todo/*'],
      exclude: ['*_delete'],
    });
    // The --mcp-allow-* names are aliases of the server-wide --allow-origin and --allow-host.
    expect(command.kind === 'run' && [command.options.allowedOrigins, command.options.allowedHosts]).toEqual([['https://agent.example'], ['box.lan']]);
    const general = parseCliArgs([
      '--allow-origin',
      'https://agent.example',
      '--allow-host',
      'box.lan',
      '--allow-host',
      'Box.Example',
      '--allow-host',
      '[fd00::1]',
    ]);
    expect(general.kind === 'run' && [general.options.allowedOrigins, general.options.allowedHosts]).toEqual([
      ['https://agent.example'],
      ['box.lan', 'Box.Example', '[fd00::1]'],
    ]);
    const defaults = parseCliArgs([]);
    expect(defaults.kind === 'run' && defaults.options.mcp).toEqual({
      surface: 'catalog',
      maxTools: 40,
      maxContentBytes: 3 * 1024 * 1024,
      taskTimeoutMs: 600_000,
    });
    // A task's call never has less time than a plain call.
    const short = parseCliArgs(['--mcp-task-timeout-ms', '1000', '--invocation-timeout-ms', '30000']);
    expect(short.kind === 'run' && short.options.mcp).toMatchObject({ taskTimeoutMs: 30_000 });
  });

  it.each([
    [['--mcp-max-tools', '3'], '--mcp-max-tools must be a whole number from 4 to 10000, got "3"'],
    [['--mcp-max-content-bytes', '100'], '--mcp-max-content-bytes must be a whole number from 1024 to 1073741824, got "100"'],
    [['--mcp-include', ' '], '--mcp-include must not hold an empty glob, got [" "]'],
    [['--mcp-task-timeout-ms', '0'], '--mcp-task-timeout-ms must be a whole number from 1 to 2147483647, got "0"'],
    [
      ['--mcp-allow-origin', 'agent.example'],
      '--mcp-allow-origin must be origins like https://agent.example.com (a scheme, a host and a port, no path), got ["agent.example"]',
    ],
    [
      ['--mcp-allow-origin', 'https://a.example/path'],
      '--mcp-allow-origin must be origins like https://agent.example.com (a scheme, a host and a port, no path), got ["https://a.example/path"]',
    ],
    [
      ['--allow-origin', 'evil.example'],
      '--allow-origin must be origins like https://agent.example.com (a scheme, a host and a port, no path), got ["evil.example"]',
    ],
    [
      ['--allow-host', 'example.com:8080'],
      '--allow-host must be host names like box.lan or [fd00::1] (no scheme, no port: the port of a Host header is not compared), got ["example.com:8080"]',
    ],
    [
      ['--allow-host', 'http://foo.com'],
      '--allow-host must be host names like box.lan or [fd00::1] (no scheme, no port: the port of a Host header is not compared), got ["http://foo.com"]',
    ],
    [
      ['--mcp-allow-host', 'box.lan', '--mcp-allow-host', 'a/b'],
      '--mcp-allow-host must be host names like box.lan or [fd00::1] (no scheme, no port: the port of a Host header is not compared), got ["box.lan","a/b"]',
    ],
    [['--mcp-surface', 'all'], '--mcp-surface must be one of catalog, generic, got "all"'],
  ])('%j → %s', (args, message) => {
    expect(parseCliArgs(args)).toEqual({ kind: 'error', messages: [message] });
  });

  it('--help tells of the subcommand and every MCP flag', () => {
    for (const text of [
      'mdp-server mcp [options]',
      '--mcp-surface',
      '--mcp-max-tools',
      '--mcp-max-content-bytes',
      '--mcp-task-timeout-ms',
      '--mcp-include',
      '--mcp-exclude',
      '--allow-origin, --mcp-allow-origin',
      '--allow-host, --mcp-allow-host',
    ]) {
      expect(HELP).toContain(text);
    }
  });
});
