/**
 * The listener under the features (listener.ts): what a feature's node handler throws is answered
 * 500 `{error}` and logged, as Hono's routes answer it, and never ends the process.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { recordingLogger } from '@mdp/test-kit';
import type { ServerFeature } from '../src/feature.js';
import { createApp, createListener, oversizedTokenAnswer, overflowingHeader, requestPath, type Server } from '../src/listener.js';

const LIMITS = {
  headersTimeoutMs: 5000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 1000,
  writeTimeoutMs: 5000,
  maxPipelinedRequests: 8,
  maxConnections: 100,
};

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

describe('the listener', () => {
  // Review finding: a client id with a lone surrogate made GET /SKILL.md throw in its node handler,
  // which ended the whole server (any page could register such an id).
  it("answers 500 {error} for what a feature's handler throws, logs it, and serves the next request", async () => {
    const log = recordingLogger();
    const throwing: ServerFeature = {
      name: 'throwing',
      handle: (_request, _response, url) => {
        if (url.startsWith('/boom')) throw new URIError('URI malformed');
        return false;
      },
    };
    const features = [throwing];
    server = createListener(features, createApp(features, log.logger), '127.0.0.1', log.logger, LIMITS);
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const boom = await fetch(`${base}/boom?x=1`);
    const text = await boom.text();
    expect([boom.status, boom.headers.get('content-type'), text]).toEqual([500, 'application/json', JSON.stringify({ error: 'Internal error' })]);
    expect(log.records.filter((r) => r.event === 'http.unhandled_error')).toMatchObject([{ method: 'GET', path: '/boom', error: { name: 'URIError' } }]);
    const next = await fetch(`${base}/other`);
    expect(next.status).toBe(404);
  });

  it('closes an upgrade a feature throws on, logs it, and serves the next request', async () => {
    const log = recordingLogger();
    const throwing: ServerFeature = {
      name: 'throwing',
      upgrade: () => {
        throw new Error('upgrade bug');
      },
    };
    const features = [throwing];
    server = createListener(features, createApp(features, log.logger), '127.0.0.1', log.logger, LIMITS);
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
    const ended = await new Promise<string>((resolve) => {
      ws.once('error', () => resolve('error'));
      ws.once('open', () => resolve('open'));
    });
    expect(ended).toBe('error');
    expect(log.records.filter((r) => r.event === 'http.unhandled_error')).toMatchObject([{ method: 'upgrade', path: '/', error: { message: 'upgrade bug' } }]);
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
  });
});

const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');

describe('overflowingHeader', () => {
  it('names the unterminated last header line of the refused bytes', () => {
    expect(overflowingHeader(bytes(`GET /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(500)}`))).toBe('authorization');
    expect(overflowingHeader(bytes(`GET / HTTP/1.1\r\nauthorization: Bearer a\r\nX-Padding: ${'p'.repeat(500)}`))).toBe('x-padding');
  });

  it('names none when the bytes do not show which header it was', () => {
    // A chunk from the middle of a header, a request cut right after a line, a line without a colon.
    expect(overflowingHeader(bytes('a'.repeat(1000)))).toBeUndefined();
    expect(overflowingHeader(bytes('GET / HTTP/1.1\r\nAuthorization: Bearer a\r\n'))).toBeUndefined();
    expect(overflowingHeader(bytes(`GET / HTTP/1.1\r\n${'n'.repeat(1000)}`))).toBeUndefined();
    expect(overflowingHeader(bytes(`GET / HTTP/1.1\r\n${'n'.repeat(300)}: v`))).toBeUndefined();
  });
});

describe('requestPath', () => {
  it('is the path of the request line the bytes start with, without its query', () => {
    expect(requestPath(bytes(`GET /mcp?token=secret HTTP/1.1\r\nAuthorization: Bearer ${'a'.repeat(500)}`))).toBe('/mcp');
    expect(requestPath(bytes('POST /mcp HTTP/1.1\r\n'))).toBe('/mcp');
  });

  it('is none for bytes from the middle of the headers (a later read), whose first line is no request line', () => {
    // The tail of a Cookie line, then the Authorization header that overflowed.
    const later = bytes(`x=1; mdp_auth=sealed-secret; theme=dark\r\nAuthorization: Bearer ${'a'.repeat(500)}`);
    expect(overflowingHeader(later)).toBe('authorization');
    expect(requestPath(later)).toBeUndefined();
    expect(requestPath(bytes('ua (X11; Linux) secret-word\r\n'))).toBeUndefined();
    expect(requestPath(bytes('a'.repeat(3000)))).toBeUndefined();
  });
});

describe('oversizedTokenAnswer', () => {
  it('is a complete 401 with the challenge and an {error} body', () => {
    const answer = oversizedTokenAnswer('Bearer resource_metadata="https://mdp.example/.well-known/oauth-protected-resource"');
    expect(answer).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);
    expect(answer).toContain('\r\nWWW-Authenticate: Bearer resource_metadata="https://mdp.example/.well-known/oauth-protected-resource"\r\n');
    const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
    expect(JSON.parse(body)).toEqual({ error: 'Access token too large' });
    expect(answer).toContain(`Content-Length: ${Buffer.byteLength(body)}\r\n`);
  });
});
