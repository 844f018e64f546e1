/**
 * The server on TLS (SPEC §14), in process with certificates the test makes: HTTPS and WSS on one
 * port with every feature, the cookie's attributes, files it cannot use, and the reload.
 */
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseMetaDocument } from '@mdp/protocol';
import { TestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import { TlsFileError, createMdpServer, type MdpTlsOptions } from '../src/index.js';
import { clientChange, registeredClient, registeredLoopClient, startServer, type TestServer } from './harness.js';
import { createPki, type Issued, type TestCa, type TestPki } from './pki.js';

let pki: TestPki;
let ca: TestCa;
let server1: Issued;
let server2: Issued;
let other: TestCa;
let stranger: Issued;

beforeAll(() => {
  pki = createPki();
  ca = pki.ca('main');
  server1 = ca.issue('server-1');
  server2 = ca.issue('server-2');
  other = pki.ca('other');
  stranger = other.issue('stranger');
});

afterAll(() => pki.remove());
afterEach(stopAll);

/** The certificate a fresh TLS connection to `port` is served. */
function servedCertificate(port: number): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.ca }, () => {
      resolve(socket.getPeerCertificate());
      socket.end();
    });
    socket.on('error', reject);
  });
}

function cookieAttributes(res: Response): string[] {
  return (res.headers.get('set-cookie') ?? '')
    .split(';')
    .map((part) => part.trim())
    .slice(1);
}

describe('one port, HTTPS and WSS', () => {
  it('serves every feature over TLS: meta, websocket and HTTP loop clients (listed secure), skill reads, host API, MCP, /mdp/auth', async () => {
    const t = await startServer({ tls: ca.tls(server1), cluster: { mode: 'standalone' } });
    const authority = `127.0.0.1:${t.port}`;
    expect(t.http).toBe(`https://${authority}`);
    expect(t.ws).toBe(`wss://${authority}`);
    expect(t.server.info).toMatchObject({ secure: true });

    const meta = parseMetaDocument(await (await t.fetch(`${t.http}/mdp/meta`)).json());
    expect(meta.ok && meta.value.endpoints).toEqual({
      ws: `wss://${authority}`,
      httpLoop: `https://${authority}/mdp/http-loop`,
      auth: `https://${authority}/mdp/auth`,
      meta: `https://${authority}/mdp/meta`,
      cluster: `wss://${authority}/mdp/cluster`,
    });
    expect(meta.ok && meta.value.cluster.leaderUrl).toBe(`wss://${authority}`);

    const ws = await registeredClient(t, descriptor('ws-client', [skill('/docs/skill.md')]));
    ws.handler = (call) => `ws read ${call.path}`;
    const loop = await registeredLoopClient(t, descriptor('loop-client', [skill('/notes/skill.md')]));
    loop.handler = (call) => `loop read ${call.path}`;
    expect(t.server.router.getClient('ws-client')).toMatchObject({ transportKind: 'ws', secure: true });
    expect(t.server.router.getClient('loop-client')).toMatchObject({ transportKind: 'http-loop', secure: true });

    const read = async (path: string): Promise<[number, string]> => {
      const res = await t.fetch(`${t.http}${path}`);
      return [res.status, await res.text()];
    };
    expect(await read('/skills/ws-client/docs')).toEqual([200, 'ws read /docs/skill.md']);
    expect(await read('/loop-client/skills/notes/')).toEqual([200, 'loop read /notes/skill.md']);

    const listed = (await (await t.fetch(`${t.http}/mdp/clients`)).json()) as { clients: Array<{ id: string; connection: { secure: boolean } }> };
    expect(listed.clients.map((c) => [c.id, c.connection.secure]).sort()).toEqual([
      ['loop-client', true],
      ['ws-client', true],
    ]);

    // The MCP bridge and the probes of an operator too.
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tls', version: '1' } },
    };
    const mcp = await t.fetch(`${t.http}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(init),
    });
    expect(mcp.status).toBe(200);
    expect(await mcp.text()).toContain('"protocolVersion"');
    expect((await t.fetch(`${t.http}/healthz`)).status).toBe(200);

    const issued = await t.fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"auth":{"token":"t1"}}' });
    expect(issued.status).toBe(204);
    expect(cookieAttributes(issued)).toEqual(['Path=/', 'Max-Age=3600', 'HttpOnly', 'SameSite=Lax', 'Secure']);
    const cleared = await t.fetch(`${t.http}/mdp/auth`, { method: 'DELETE' });
    expect(cookieAttributes(cleared)).toEqual(['Path=/', 'Max-Age=0', 'HttpOnly', 'SameSite=Lax', 'Secure']);
  });

  it('serves no plain HTTP on the TLS port, and a client without the CA refuses the certificate', async () => {
    const t = await startServer({ tls: ca.tls(server1), cluster: { mode: 'standalone' } });
    await expect(fetch(`http://127.0.0.1:${t.port}/mdp/meta`)).rejects.toThrow();
    await expect(fetch(`${t.http}/mdp/meta`)).rejects.toThrow(); // node's CAs do not know the test CA
    await expect(TestClient.connect(t.ws)).rejects.toThrow(/self-signed certificate in certificate chain/);
  });

  it('issues SameSite=None; Secure with cookieSameSite none, and refuses none without TLS', async () => {
    const t = await startServer({ tls: ca.tls(server1), cookieSameSite: 'none', cluster: { mode: 'standalone' } });
    const issued = await t.fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { authorization: 'Bearer b' } });
    expect(cookieAttributes(issued)).toEqual(['Path=/', 'Max-Age=3600', 'HttpOnly', 'SameSite=None', 'Secure']);
    expect(() => createMdpServer({ cookieSameSite: 'none' })).toThrow(/cookie SameSite=None needs TLS/);
    const strict = await startServer({ cookieSameSite: 'strict' });
    const plain = await fetch(`${strict.http}/mdp/auth`, { method: 'POST', headers: { authorization: 'Bearer b' } });
    expect(cookieAttributes(plain)).toEqual(['Path=/', 'Max-Age=3600', 'HttpOnly', 'SameSite=Strict']);
  });
});

describe('TLS files it cannot use: one error naming the file, before anything listens', () => {
  const missing = (name: string): string => join(pki.dir, name);
  const garbage = (): string => {
    const file = join(pki.dir, 'garbage.pem');
    writeFileSync(file, 'not PEM at all\n');
    return file;
  };
  const cases: Array<[string, () => MdpTlsOptions, () => string, RegExp]> = [
    [
      'a missing key',
      () => ({ keyFile: missing('nope.key'), certFile: server1.certFile }),
      () => missing('nope.key'),
      /^cannot read the TLS key .*nope\.key: no such file$/,
    ],
    [
      'a missing certificate',
      () => ({ keyFile: server1.keyFile, certFile: missing('nope.crt') }),
      () => missing('nope.crt'),
      /^cannot read the TLS certificate .*nope\.crt: no such file$/,
    ],
    [
      'a certificate given as the key',
      () => ({ keyFile: server1.certFile, certFile: server1.certFile }),
      () => server1.certFile,
      /is not a usable PEM private key/,
    ],
    [
      'a certificate file without a certificate',
      () => ({ keyFile: server1.keyFile, certFile: garbage() }),
      () => join(pki.dir, 'garbage.pem'),
      /holds no PEM certificate/,
    ],
    [
      'a key that does not match the certificate',
      () => ({ keyFile: server2.keyFile, certFile: server1.certFile }),
      () => server2.keyFile,
      /^the TLS key .* does not match the certificate in .*server-1\.crt$/,
    ],
    [
      'a CA file without a certificate',
      () => ({ ...ca.tls(server1), caFile: garbage() }),
      () => join(pki.dir, 'garbage.pem'),
      /^the TLS CA file .*garbage\.pem holds no PEM certificate/,
    ],
    [
      'a missing CA file',
      () => ({ ...ca.tls(server1), caFile: missing('nope-ca.crt') }),
      () => missing('nope-ca.crt'),
      /^cannot read the TLS CA file .*: no such file$/,
    ],
  ];
  it('peer certificates without a CA file: refused before any file is read', () => {
    expect(() => createMdpServer({ logLevel: 'silent', tls: { keyFile: missing('k'), certFile: missing('c'), peerCertificates: true } })).toThrow(
      'peer certificates need a CA file: peers show client certificates from that CA',
    );
  });

  it.each(cases)('%s', (_, tls, file, message) => {
    let caught: unknown;
    try {
      createMdpServer({ port: 0, logLevel: 'silent', tls: tls() });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(TlsFileError);
    expect((caught as TlsFileError).file).toBe(file());
    expect((caught as TlsFileError).message).toMatch(message);
    expect((caught as TlsFileError).message).toContain(file());
  });
});

describe('reloadTls (what SIGHUP does)', () => {
  it('serves the new certificate to new connections, keeps open ones, and keeps the old one when a file is bad', async () => {
    const keyFile = join(pki.dir, 'live.key');
    const certFile = join(pki.dir, 'live.crt');
    copyFileSync(server1.keyFile, keyFile);
    copyFileSync(server1.certFile, certFile);
    const t: TestServer = await startServer({ tls: { keyFile, certFile, caFile: ca.caFile }, cluster: { mode: 'standalone' } });
    expect((await servedCertificate(t.port)).subject.CN).toBe('server-1');
    const open = await registeredClient(t, descriptor('open-client', [skill('/docs/skill.md')]));
    open.handler = () => 'still here';

    copyFileSync(server2.keyFile, keyFile);
    copyFileSync(server2.certFile, certFile);
    expect(t.server.reloadTls()).toMatchObject({ ok: true, material: { subject: 'CN=server-2' } });
    expect((await servedCertificate(t.port)).subject.CN).toBe('server-2');
    // The websocket opened before the reload still carries calls.
    expect(await (await t.fetch(`${t.http}/skills/open-client/docs`)).text()).toBe('still here');

    // A key of another certificate: refused, the certificate in force stays.
    copyFileSync(stranger.keyFile, keyFile);
    const failed = t.server.reloadTls();
    expect(failed).toEqual({ ok: false, error: `the TLS key ${keyFile} does not match the certificate in ${certFile}` });
    expect((await servedCertificate(t.port)).subject.CN).toBe('server-2');
    expect(t.server.router.getClient('open-client')).toBeDefined();
    await open.close();
    await clientChange(t.server, 'open-client', false);
  });

  it('is refused on a server without TLS', async () => {
    const t = await startServer();
    expect(t.server.reloadTls()).toEqual({ ok: false, error: 'the server does not use TLS' });
  });
});
