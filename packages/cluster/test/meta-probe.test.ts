import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getEventListeners, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buildMetaDocument, metaEndpoints, parseMetaDocument, standaloneClusterView } from '@mdp/protocol';
import { closedPort, listen } from '@mdp/test-kit';
import { InvalidTargetError, normalizeTarget, probeMeta, scanRange } from '../src/index.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
  );
});

/** An HTTP server on 127.0.0.1, port 0, stopped after each test. Resolves to its base URL. */
async function serve(handler: Handler, host = '127.0.0.1'): Promise<{ url: string; port: number; server: Server }> {
  const server = createServer(handler);
  servers.push(server);
  const port = await listen(server, 0, host);
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, port, server };
}

/** The client sockets node opens while `run` runs (the `net.client.socket` diagnostics channel). */
async function clientSocketsOf<T>(run: () => Promise<T>): Promise<{ result: T; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const opened = (message: unknown): void => void sockets.push((message as { socket: Socket }).socket);
  subscribe('net.client.socket', opened);
  try {
    return { result: await run(), sockets };
  } finally {
    unsubscribe('net.client.socket', opened);
  }
}

function metaDocument(port: number): Record<string, unknown> {
  const id = `127.0.0.1:${port}`;
  const endpoints = metaEndpoints(id);
  return buildMetaDocument(id, endpoints, standaloneClusterView('default', id, endpoints.ws, 4000), { upstreamProxy: true, clusterControl: true });
}

function json(status: number, body: unknown, contentType = 'application/json'): Handler {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': contentType });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
}

describe('normalizeTarget', () => {
  it.each([
    ['47372', 'http://127.0.0.1:47372'],
    ['1', 'http://127.0.0.1:1'],
    ['localhost:8080', 'http://localhost:8080'],
    ['127.0.0.1:65535', 'http://127.0.0.1:65535'],
    ['example.test', 'http://example.test:47372'],
    ['[::1]:8080', 'http://[::1]:8080'],
    ['[::1]', 'http://[::1]:47372'],
    ['::1', 'http://[::1]:47372'],
    ['http://127.0.0.1:5000', 'http://127.0.0.1:5000'],
    ['http://127.0.0.1:5000/', 'http://127.0.0.1:5000'],
    ['http://127.0.0.1:5000/mdp/meta', 'http://127.0.0.1:5000'],
    ['https://mdp.example.test/base/', 'https://mdp.example.test/base'],
    ['ws://127.0.0.1:47372', 'http://127.0.0.1:47372'],
    ['ws://127.0.0.1:47372/mdp/cluster', 'http://127.0.0.1:47372'],
    ['wss://[::1]:9000/', 'https://[::1]:9000'],
    ['http://127.0.0.1:5000/mdp/meta?x=1#y', 'http://127.0.0.1:5000'],
  ])('%s → %s', (input, expected) => {
    expect(normalizeTarget(input)).toBe(expected);
  });

  it('gives a target without a scheme the scheme asked for, and keeps an explicit one', () => {
    expect(normalizeTarget('47372', 'https')).toBe('https://127.0.0.1:47372');
    expect(normalizeTarget('[::1]:8443', 'https')).toBe('https://[::1]:8443');
    expect(normalizeTarget('example.test', 'https')).toBe('https://example.test:47372');
    expect(normalizeTarget('http://127.0.0.1:1', 'https')).toBe('http://127.0.0.1:1');
    expect(normalizeTarget('wss://127.0.0.1:1/mdp/cluster', 'http')).toBe('https://127.0.0.1:1');
  });

  it('is idempotent', () => {
    for (const input of ['47372', '[::1]:1', 'ws://h:2/mdp/cluster']) {
      const once = normalizeTarget(input);
      expect(normalizeTarget(once)).toBe(once);
    }
  });

  it.each([
    ['', /empty/],
    ['0', /bad port '0'/],
    ['65536', /bad port '65536'/],
    ['host:', /bad port ''/],
    ['host:http', /bad port 'http'/],
    ['host:-1', /bad port '-1'/],
    ['[::1]:99999', /bad port '99999'/],
    ['[nope]:1', /bad IPv6/],
    ['::1:47372', /IPv6 as \[::1\]/],
    ['bad host:1', /bad host/],
    ['user@host:1', /bad host/],
    ['ftp://host:1', /unsupported scheme 'ftp:'/],
    ['http://', /bad URL/],
    ['http://127.0.0.1:70000', /bad URL/],
    ['http://127.0.0.1:0', /bad port '0'/],
  ])('refuses %j', (input, message) => {
    expect(() => normalizeTarget(input)).toThrow(InvalidTargetError);
    expect(() => normalizeTarget(input)).toThrow(message);
  });
});

describe('probeMeta', () => {
  it('returns the validated document of an MDP server, asking for JSON', async () => {
    let seen: IncomingMessage | undefined;
    const { url, port } = await serve((req, res) => {
      seen = req;
      json(200, metaDocument(port))(req, res);
    });
    const result = await probeMeta(url);
    expect(result).toEqual({ ok: true, url, meta: metaDocument(port) });
    expect(seen?.method).toBe('GET');
    expect(seen?.url).toBe('/mdp/meta');
    expect(seen?.headers.accept).toBe('application/json');
  });

  it('accepts a port, HOST:PORT or a meta URL as the target and reports the base URL', async () => {
    const { url, port } = await serve((req, res) => json(200, metaDocument(port))(req, res));
    for (const target of [String(port), `127.0.0.1:${port}`, `${url}/mdp/meta`]) {
      expect(await probeMeta(target)).toMatchObject({ ok: true, url });
    }
  });

  it('keeps fields the schema knows and drops unknown extras', async () => {
    const { url, port } = await serve((req, res) => json(200, { ...metaDocument(port), extra: 1 })(req, res));
    const result = await probeMeta(url);
    expect(result.ok && parseMetaDocument(result.meta).ok).toBe(true);
    expect(result.ok && 'extra' in result.meta).toBe(false);
  });

  it('reports an HTML page as not MDP', async () => {
    const { url } = await serve(json(200, '<!doctype html><title>hi</title>', 'text/html; charset=utf-8'));
    expect(await probeMeta(url)).toEqual({
      ok: false,
      url,
      kind: 'not-mdp',
      reason: 'answered an HTML page (text/html; charset=utf-8), not JSON',
    });
  });

  it('reports a 404 as not MDP with its status', async () => {
    const { url } = await serve(json(404, 'Not Found', 'text/plain'));
    expect(await probeMeta(url)).toEqual({ ok: false, url, kind: 'not-mdp', reason: 'HTTP 404 Not Found' });
  });

  it('reports a redirect as not MDP without following it', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(302, { location: 'http://elsewhere.test/' });
      res.end();
    });
    expect(await probeMeta(url)).toMatchObject({
      kind: 'not-mdp',
      reason: 'HTTP 302 Found (redirect to http://elsewhere.test/)',
    });
  });

  it('reports invalid JSON as not MDP', async () => {
    const { url } = await serve(json(200, '{"protocol": "mdp",'));
    const result = await probeMeta(url);
    expect(result).toMatchObject({ ok: false, kind: 'not-mdp' });
    expect(!result.ok && result.reason).toMatch(/^invalid JSON \(application\/json\): /);
  });

  it('reports a document that fails the schema as not MDP, naming the field', async () => {
    const { url, port } = await serve((req, res) => {
      const doc = metaDocument(port);
      (doc.cluster as Record<string, unknown>).role = 'primary';
      json(200, doc)(req, res);
    });
    const result = await probeMeta(url);
    expect(result).toMatchObject({ ok: false, kind: 'not-mdp' });
    expect(!result.ok && result.reason).toMatch(/^not an MDP metadata document: cluster\.role: /);
  });

  it('reports JSON of another service as not MDP', async () => {
    const { url } = await serve(json(200, { status: 'ok' }));
    expect(await probeMeta(url)).toMatchObject({ kind: 'not-mdp', reason: expect.stringMatching(/^not an MDP metadata document: protocol/) });
  });

  it('reports an oversized answer as not MDP without reading it all', async () => {
    const { url } = await serve(json(200, `"${'x'.repeat(5000)}"`));
    expect(await probeMeta(url, { maxBodyBytes: 1000 })).toMatchObject({
      kind: 'not-mdp',
      reason: 'answer larger than 1000 bytes',
    });
  });

  it('reports a port that does not speak HTTP as not MDP', async () => {
    const { url, server } = await serve(() => undefined);
    server.on('connection', (socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n'));
    expect(await probeMeta(url)).toMatchObject({ ok: false, kind: 'not-mdp', reason: 'answer is not HTTP' });
  });

  it('reports a port that hangs up without answering as not MDP', async () => {
    const { url, server } = await serve(() => undefined);
    server.on('connection', (socket) => socket.destroy());
    expect(await probeMeta(url)).toMatchObject({
      ok: false,
      kind: 'not-mdp',
      reason: 'closed the connection without an HTTP answer',
    });
  });

  it('probes a target without a scheme over TLS when given TLS options; a plain HTTP server is not MDP then', async () => {
    const { url, port } = await serve((req, res) => json(200, metaDocument(port))(req, res));
    for (const target of [String(port), `127.0.0.1:${port}`]) {
      const result = await probeMeta(target, { tls: { rejectUnauthorized: false } });
      expect(result).toMatchObject({ ok: false, url: `https://127.0.0.1:${port}`, kind: 'not-mdp' });
      expect(!result.ok && result.reason).toMatch(/^no TLS handshake: /);
    }
    // An explicit http:// URL stays plain.
    expect(await probeMeta(url, { tls: { rejectUnauthorized: false } })).toMatchObject({ ok: true, url });
  });

  it('reports a closed port as unreachable, and says it refused', async () => {
    const port = await closedPort();
    expect(await probeMeta(String(port))).toEqual({
      ok: false,
      url: `http://127.0.0.1:${port}`,
      kind: 'unreachable',
      reason: 'connection refused',
      refused: true,
    });
  });

  it('gives up on a silent server after timeoutMs', async () => {
    const { url } = await serve(() => undefined); // accepts, never answers
    expect(await probeMeta(url, { timeoutMs: 100 })).toEqual({
      ok: false,
      url,
      kind: 'unreachable',
      reason: 'no answer within 100 ms',
    });
  });

  it('gives up on a server that stalls mid-body', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"protocol":');
    });
    expect(await probeMeta(url, { timeoutMs: 100 })).toMatchObject({ kind: 'unreachable', reason: 'no answer within 100 ms' });
  });

  it('reports an answer cut off mid-body as unreachable', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 100 });
      // Cut once the head and the first bytes are on their way.
      res.write('{"protocol":', () => res.socket?.destroy());
    });
    expect(await probeMeta(url)).toMatchObject({ ok: false, kind: 'unreachable', reason: expect.stringMatching(/^answer cut short/) });
  });

  it('leaves no connection open behind it', async () => {
    const { url, port, server } = await serve((req, res) => json(200, metaDocument(port))(req, res));
    const closed: Array<Promise<unknown>> = [];
    server.on('connection', (socket) => closed.push(once(socket, 'close')));
    expect(await probeMeta(url)).toMatchObject({ ok: true });
    // The probe's connection ends (the server's end of it closes) without anything else happening.
    expect(closed).toHaveLength(1);
    await Promise.all(closed);
    const open = await new Promise<number>((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    expect(open).toBe(0);
  });

  it('makes one connection per probe, and the GET goes on it', async () => {
    let connections = 0;
    let requests = 0;
    const { url, port, server } = await serve((req, res) => {
      requests++;
      json(200, metaDocument(port))(req, res);
    });
    server.on('connection', () => connections++);
    const results = await Promise.all(Array.from({ length: 10 }, () => probeMeta(url)));
    expect(results.every((r) => r.ok)).toBe(true);
    expect({ connections, requests }).toEqual({ connections: 10, requests: 10 });
  });

  it.each([
    ['at once', (socket: Socket) => socket.resetAndDestroy()],
    ['once the request arrives', (socket: Socket) => socket.once('data', () => socket.resetAndDestroy())],
  ])('survives a port that resets every connection %s', async (_when, reset) => {
    const { url, server } = await serve(() => undefined);
    server.on('connection', reset);
    const { result: results, sockets } = await clientSocketsOf(() => Promise.all(Array.from({ length: 20 }, () => probeMeta(url, { timeoutMs: 2000 }))));
    for (const result of results) {
      expect(result.ok).toBe(false);
      expect(!result.ok && result.reason).toMatch(/connection reset|closed the connection without an HTTP answer/);
    }
    // Every socket the probes opened has closed: none can report an error later that nobody hears
    // (vitest fails the run on one).
    expect(sockets).toHaveLength(20);
    await Promise.all(sockets.map((socket) => (socket.closed ? undefined : once(socket, 'close'))));
  });

  it('reports a 101 Switching Protocols as not MDP at once', async () => {
    // node hands a 101 to the client's 'upgrade' event, not to its response callback.
    const { url } = await serve((_req, res) => res.socket?.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\nConnection: Upgrade\r\n\r\n'));
    // At once: not the time-out's answer ("no answer within 5000 ms").
    expect(await probeMeta(url, { timeoutMs: 5000 })).toEqual({ ok: false, url, kind: 'not-mdp', reason: 'HTTP 101 Switching Protocols' });
  });

  it('stops when the caller aborts', async () => {
    const { url } = await serve(() => undefined);
    const controller = new AbortController();
    const pending = probeMeta(url, { signal: controller.signal, timeoutMs: 10_000 });
    controller.abort();
    expect(await pending).toEqual({ ok: false, url, kind: 'unreachable', reason: 'probe aborted' });
  });

  it('never throws, even for a target that cannot be parsed', async () => {
    expect(await probeMeta('host:99999')).toEqual({
      ok: false,
      url: 'host:99999',
      kind: 'unreachable',
      reason: "bad port '99999' (expected 1-65535)",
    });
  });

  it('probes IPv6 loopback', async () => {
    let server: { url: string; port: number };
    try {
      server = await serve((req, res) => json(200, metaDocument(server.port))(req, res), '::1');
    } catch {
      return; // no IPv6 loopback on this machine
    }
    expect(await probeMeta(`[::1]:${server.port}`)).toMatchObject({ ok: true, url: `http://[::1]:${server.port}` });
  });
});

describe('scanRange', () => {
  it('probes every port of the range in order and finds the server', async () => {
    const { port } = await serve((req, res) => json(200, metaDocument(port))(req, res));
    const from = Math.max(1, port - 2);
    const results = await scanRange('127.0.0.1', from, port + 2);
    expect(results.map((r) => r.url)).toEqual(Array.from({ length: port + 2 - from + 1 }, (_, i) => `http://127.0.0.1:${from + i}`));
    expect(results[port - from]).toMatchObject({ ok: true, meta: { serverId: `127.0.0.1:${port}` } });
  });

  it('probes the range over HTTPS under TLS options', async () => {
    const { port } = await serve((req, res) => json(200, metaDocument(port))(req, res));
    const results = await scanRange('127.0.0.1', port, port, { tls: { rejectUnauthorized: false } });
    expect(results).toMatchObject([{ ok: false, url: `https://127.0.0.1:${port}`, kind: 'not-mdp' }]);
  });

  it('probes the default 100-port range, one result per port (its speed is a `pnpm bench` figure)', async () => {
    const results = await scanRange('127.0.0.1', 47372, 47471);
    expect(results.map((r) => r.url)).toEqual(Array.from({ length: 100 }, (_, i) => `http://127.0.0.1:${47372 + i}`));
  });

  it("puts one listener on the caller's signal, however many probes are in flight, and stops on abort", async () => {
    const { url, server } = await serve(() => undefined); // accepts, never answers
    const port = Number(new URL(url).port);
    const controller = new AbortController();
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const reached = once(server, 'connection');
      const scan = scanRange('127.0.0.1', Math.max(1, port - 20), port, { signal: controller.signal, timeoutMs: 10_000 });
      // A probe is in flight: the one to the server that never answers.
      await reached;
      expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
      controller.abort();
      const results = await scan;
      expect(results.at(-1)).toMatchObject({ ok: false, kind: 'unreachable', reason: 'probe aborted' });
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });

  it('accepts an IPv6 host with or without brackets', async () => {
    const port = await closedPort();
    for (const host of ['::1', '[::1]']) {
      const [result] = await scanRange(host, port, port, { timeoutMs: 200 });
      expect(result?.url).toBe(`http://[::1]:${port}`);
    }
  });

  it.each([
    [0, 10, /bad port 0/],
    [10, 70000, /bad port 70000/],
    [20, 10, /start after end/],
    [1.5, 10, /bad port 1.5/],
  ])('refuses range %i-%i', async (from, to, message) => {
    await expect(scanRange('127.0.0.1', from, to)).rejects.toThrow(message);
  });

  it('refuses a bad host', async () => {
    await expect(scanRange('bad host', 1, 2)).rejects.toThrow(InvalidTargetError);
  });
});
