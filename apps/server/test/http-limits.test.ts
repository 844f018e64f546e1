import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { recordingLogger } from '@mdp/test-kit';
import { createMdpServer } from '../src/index.js';
import { capConnections, httpLimitsProblem, serverOptions, sweepMs, type HttpLimits } from '../src/http-limits.js';
import { servePort } from '../src/listener.js';

const limits: HttpLimits = {
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  writeTimeoutMs: 30_000,
  maxPipelinedRequests: 8,
  maxConnections: 15_000,
};

describe('capConnections', () => {
  it("sets node's maxConnections and logs drops at most once a second, with how many since the last line", () => {
    const server = createServer();
    const { logger, records } = recordingLogger();
    let now = 0;
    capConnections(server, 7, logger, () => now);
    expect(server.maxConnections).toBe(7);
    for (const at of [0, 10, 500, 999, 1000, 1001, 2500]) {
      now = at;
      server.emit('drop');
    }
    expect(records.filter((r) => r.event === 'http.connections_full').map((r) => [r.level, r.limit, r.dropped])).toEqual([
      ['warn', 7, 1],
      ['warn', 7, 4],
      ['warn', 7, 2],
    ]);
  });
});

describe('a second port', () => {
  it("has the same cap, and its drops are logged as the main port's", async () => {
    const server = createHttpServer();
    const { logger, next } = recordingLogger();
    capConnections(server, 1, logger);
    const extra = await servePort(server, '127.0.0.1', 0);
    const sockets: Socket[] = [];
    const open = (): Promise<Socket> =>
      new Promise((resolve, reject) => {
        const socket = connect(extra.port, '127.0.0.1', () => resolve(socket)).on('error', reject);
        sockets.push(socket);
      });
    try {
      const logged = next('http.connections_full');
      await open();
      // The first is held; the second is over the cap of one and closed at once.
      const second = await open();
      await new Promise((resolve) => second.once('close', resolve));
      expect(await logged).toMatchObject({ level: 'warn', limit: 1, dropped: 1 });
    } finally {
      for (const socket of sockets) socket.destroy();
      extra.close();
    }
  });
});

describe('a second port, let go', () => {
  const connected = (port: number): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket)).on('error', reject);
    });
  const closed = (socket: Socket): Promise<void> => new Promise((resolve) => socket.once('close', () => resolve()));

  it('close() stops accepting and keeps the connections; drop() ends them too and resolves once the port is free', async () => {
    const server = createHttpServer();
    const kept = await servePort(server, '127.0.0.1', 0);
    const keptSocket = await connected(kept.port);
    kept.close();
    await expect(connected(kept.port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    const dropped = await servePort(server, '127.0.0.1', 0);
    const droppedSocket = await connected(dropped.port);
    const ended = closed(droppedSocket);
    await dropped.drop();
    await ended;
    // Free: it binds again at once.
    const again = await servePort(server, '127.0.0.1', dropped.port);
    expect(keptSocket.destroyed).toBe(false);
    await dropped.drop(); // idempotent
    await again.drop();
    keptSocket.destroy();
    await kept.drop();
  });
});

describe('HTTP limits', () => {
  it('become node server options, checked every second at most', () => {
    expect(serverOptions(limits)).toEqual({ headersTimeout: 20_000, requestTimeout: 60_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1000 });
    expect(serverOptions({ ...limits, headersTimeoutMs: 200, requestTimeoutMs: 200 }).connectionsCheckingInterval).toBe(200);
  });

  it('look for stalled answers four times per idle time-out, at most every second', () => {
    expect(sweepMs(limits)).toBe(1000);
    expect(sweepMs({ ...limits, writeTimeoutMs: 1000 })).toBe(250);
    expect(sweepMs({ ...limits, writeTimeoutMs: 1 })).toBe(10);
  });

  it('refuse a request time-out shorter than the headers time-out, and non-positive values', () => {
    expect(httpLimitsProblem(limits)).toBeUndefined();
    expect(httpLimitsProblem({ ...limits, requestTimeoutMs: 1000 })).toBe(
      'the request time-out (1000 ms) must not be shorter than the headers time-out (20000 ms)',
    );
    expect(httpLimitsProblem({ ...limits, maxPipelinedRequests: 0 })).toBe('maxPipelinedRequests must be a positive whole number');
    expect(() => createMdpServer({ httpRequestTimeoutMs: 10, httpHeadersTimeoutMs: 20, logLevel: 'silent' })).toThrow(RangeError);
  });
});
