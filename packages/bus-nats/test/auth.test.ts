/**
 * Credentials and TLS to a real nats-server: a token, and TLS verified against a test CA (made
 * with Debian's openssl). User and password, and per-node permissions, are in permissions.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNode, type TestNode } from './fleet.js';
import { NatsServer, natsServerAvailable, warnIfNoNatsServer } from './nats-server.js';

warnIfNoNatsServer('auth.test');

const OPENSSL_CONFIG = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
[leaf_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
`;

/** A test CA and a server certificate it issues for 127.0.0.1, as PEM files in `dir`. */
function makePki(dir: string): { caFile: string; certFile: string; keyFile: string } {
  const file = (name: string): string => join(dir, name);
  writeFileSync(file('openssl.cnf'), OPENSSL_CONFIG);
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const run = (args: string[]): void => void execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  run([
    'req',
    '-x509',
    '-config',
    file('openssl.cnf'),
    '-extensions',
    'ca_ext',
    ...key,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=MDP bus test CA',
  ]);
  run(['req', '-new', '-config', file('openssl.cnf'), ...key, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=nats']);
  run([
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-set_serial',
    '0x1234',
    '-days',
    '2',
    '-extfile',
    file('openssl.cnf'),
    '-extensions',
    'leaf_ext',
    '-out',
    file('server.crt'),
  ]);
  return { caFile: file('ca.crt'), certFile: file('server.crt'), keyFile: file('server.key') };
}

describe.skipIf(!natsServerAvailable())('credentials and TLS to NATS', () => {
  const nodes: TestNode[] = [];
  const servers: NatsServer[] = [];
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mdp-bus-pki-'));
  });
  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.close()));
    await Promise.all(servers.map((server) => server.dispose()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('a token: the right one works, a wrong one is refused at start', async () => {
    const server = await NatsServer.start({ config: 'authorization { token: "s3cret-token" }' });
    servers.push(server);
    const [a, b] = await Promise.all([
      startNode(server.url, 'node-a', { auth: { token: 's3cret-token' } }),
      startNode(server.url, 'node-b', { auth: { token: 's3cret-token' } }),
    ]);
    nodes.push(a, b);
    a.add('c1');
    await b.sees('c1', 'node-a');
    expect(await b.bus.call('c1', { method: 'GET', path: '/x' })).toMatchObject({ ok: true });
    await expect(startNode(server.url, 'node-c', { auth: { token: 'wrong' } })).rejects.toThrow(/^bus: cannot connect to NATS/);
  });

  it('a server without JetStream, or with a max_payload under 8 KiB, is refused at start with the reason', async () => {
    const plain = await NatsServer.start({ jetstream: false });
    servers.push(plain);
    await expect(startNode(plain.url, 'node-a')).rejects.toThrow('bus: the NATS server has no JetStream: start it with -js');
    const tiny = await NatsServer.start({ config: 'max_payload: 4096' });
    servers.push(tiny);
    await expect(startNode(tiny.url, 'node-a')).rejects.toThrow(/max_payload is 4096 bytes; the bus needs at least 8192/);
  });

  it('a small max_payload: a 1 MiB message goes in many parts', async () => {
    const server = await NatsServer.start({ config: 'max_payload: 65536' });
    servers.push(server);
    const [a, b] = await Promise.all([startNode(server.url, 'node-a'), startNode(server.url, 'node-b')]);
    nodes.push(a, b);
    a.add('c1', (call) => ({ ok: true, data: call.body }));
    await b.sees('c1', 'node-a');
    const body = 'z'.repeat(1024 * 1024);
    expect(await b.bus.call('c1', { method: 'POST', path: '/x', body })).toEqual({ ok: true, data: body });
    expect(b.bus.metrics().serverMaxPayload).toBe(65536);
  });

  it('TLS verified against a CA; without that CA the server is refused', async () => {
    const pki = makePki(dir);
    const server = await NatsServer.start({ config: `tls { cert_file: ${JSON.stringify(pki.certFile)}, key_file: ${JSON.stringify(pki.keyFile)} }` });
    servers.push(server);
    const url = `tls://127.0.0.1:${server.port}`;
    const [a, b] = await Promise.all([startNode(url, 'node-a', { tls: { caFile: pki.caFile } }), startNode(url, 'node-b', { tls: { caFile: pki.caFile } })]);
    nodes.push(a, b);
    a.add('c1');
    await b.sees('c1', 'node-a');
    expect(await b.bus.call('c1', { method: 'GET', path: '/x', body: 'y'.repeat(1024 * 1024) })).toMatchObject({ ok: true });
    await expect(startNode(url, 'node-c', { tls: true, connectTimeoutMs: 3000 })).rejects.toThrow(/^bus: cannot connect to NATS/);
  });
});
