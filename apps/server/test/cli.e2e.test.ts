/** The real `mdp-server` binary, spawned as a child process. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mirroredId, parseMetaDocument, type MetaDocument } from '@mdp/protocol';
import { TestClient, descriptor, freePorts, skill, stopAll, until } from '@mdp/test-kit';
import { clientChange, startServer, tlsFetch } from './harness.js';
import { createPki, type TestPki } from './pki.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const PROBE_CLI = fileURLToPath(new URL('../../probe/dist/cli.js', import.meta.url));
const children: ChildProcess[] = [];
const servers: Server[] = [];
const dir = mkdtempSync(join(tmpdir(), 'mdp-cli-'));

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  await stopAll();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Set through the environment rather than flags (flags override it): no discovery of other
 * tests' servers, no state (term, vote, the cluster secret) written outside a temporary
 * directory, no logs.
 */
const QUIET_ENV = { MDP_DISCOVER_ATTEMPTS: '0', MDP_CLUSTER_STATE_DIR: dir, MDP_LOG_LEVEL: 'silent' };

interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Run `mdp-server` (or another built binary, `script`), in `cwd` (default this process's). */
function run(args: string[], env: Record<string, string> = {}, script = CLI, cwd?: string): Run {
  // Cluster state (auto mode keeps term and vote) goes to the scratch dir, not the user's state dir.
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, XDG_STATE_HOME: join(dir, 'state'), ...env },
    ...(cwd ? { cwd } : {}),
  });
  children.push(child);
  const result: Run = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (result.stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (result.stderr += d));
  return result;
}

/** Resolves with the match once the process prints a line matching `pattern` on stdout (or stderr). */
function printed(r: Run, pattern: RegExp, stream: 'stdout' | 'stderr' = 'stdout'): Promise<RegExpExecArray> {
  // Once its output is closed, nothing more can match.
  let closed = false;
  return until(
    (change) => {
      const onClose = (): void => ((closed = true), change());
      r.child[stream]!.on('data', change);
      r.child.on('close', onClose);
      return () => {
        r.child[stream]!.off('data', change);
        r.child.off('close', onClose);
      };
    },
    () => {
      const match = pattern.exec(r[stream]);
      if (!match && closed) throw new Error(`exited early: ${r.stderr}`);
      return match ?? undefined;
    },
  );
}

/** Resolves with the URL once the server prints that it listens. */
async function listening(r: Run): Promise<string> {
  return (await printed(r, /listening on (https?:\/\/\S+)/))[1]!;
}

async function metaOf(url: string): Promise<MetaDocument> {
  const meta = parseMetaDocument(await (await fetch(`${url}/mdp/meta`)).json());
  if (!meta.ok) throw new Error('not a meta document');
  return meta.value;
}

/** SIGTERM a server the test started, and expect a clean exit. */
async function stop(r: Run): Promise<void> {
  r.child.kill('SIGTERM');
  expect(await r.exited).toEqual({ code: 0, signal: null });
}

describe('mdp-server CLI', () => {
  it('--help lists every flag and exits 0', async () => {
    const r = run(['--help']);
    expect((await r.exited).code).toBe(0);
    for (const flag of [
      '--host',
      '--port',
      '--server-id',
      '--config',
      '--print-config',
      '--cluster-config',
      '--cluster-lease-duration-ms',
      '--cluster-discovery-interval-ms',
      '--help',
    ]) {
      expect(r.stdout).toContain(flag);
    }
  });

  it('--version prints the version and exits 0', async () => {
    const r = run(['--version']);
    expect((await r.exited).code).toBe(0);
    expect(r.stdout).toMatch(/^mdp-server \d+\.\d+\.\d+\n$/);
  });

  it.each([
    [['--port', 'abc'], {}, /^mdp-server: --port must be a whole number from 0 to 65535, got "abc"$/],
    [['--port', '-1'], {}, /^mdp-server: --port must be a whole number from 0 to 65535, got "-1"$/],
    [['--invocation-timeout-ms', '-5'], {}, /^mdp-server: --invocation-timeout-ms must be a whole number from 1 to 2147483647, got "-5"$/],
    [['--log-level', 'loud'], {}, /^mdp-server: --log-level must be one of/],
    [['--frobnicate'], {}, /^mdp-server: unknown option --frobnicate$/],
    [['stray'], {}, /^mdp-server: unexpected argument "stray"/],
    [[], { MDP_PORT: 'x' }, /^mdp-server: MDP_PORT \(environment\) must be a whole number/],
    [['--config', join(tmpdir(), 'no-such-mdp-config.json')], {}, /^mdp-server: cannot read .*no-such-mdp-config\.json \(--config\): no such file$/],
  ])('refuses %j %j with one line, a pointer to --help and exit 64', async (args, env, message) => {
    const r = run(args, env);
    expect((await r.exited).code).toBe(64);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(message);
    expect(lines[1]).toBe("Try 'mdp-server --help'.");
    expect(r.stdout).toBe('');
  });

  it('reads a config file under the environment and flags; --print-config shows it without secrets', async () => {
    const file = join(dir, 'mdp.jsonc');
    writeFileSync(file, '{\n  // the port comes from the environment\n  "port": 1,\n  "serverId": "from-file",\n  "clusterSecret": "file-secret",\n}\n');
    const env = { ...QUIET_ENV, MDP_PORT: '0', MDP_AUTH_TOKENS: 'env-token' };
    const print = run(['--config', file, '--print-config', '--cluster-mode', 'standalone'], env);
    expect((await print.exited).code).toBe(0);
    expect(print.stdout).toContain('"port": 0, // MDP_PORT (environment)');
    expect(print.stdout).toContain(`"serverId": "from-file", // "serverId" in ${file}`);
    expect(print.stdout).not.toContain('file-secret');
    expect(print.stdout).not.toContain('env-token');

    const r = run(['--config', file, '--cluster-mode', 'standalone'], env);
    const url = await listening(r);
    expect((await metaOf(url)).serverId).toBe('from-file');
    expect((await fetch(`${url}/skills/nobody/x`)).status).toBe(401); // the token from the environment guards it
    await stop(r);
  });

  it('exits 1 when another program holds the port: one line with the hint, no server.closed log', async () => {
    // A program that takes connections and never answers; it reads them so that it sees them end.
    const blocker = createServer((socket) => socket.resume());
    servers.push(blocker);
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const r = run(['--port', String(port)], { MDP_DISCOVER_ATTEMPTS: '0', MDP_CLUSTER_STATE_DIR: dir });
    expect((await r.exited).code).toBe(1);
    const human = r.stderr.split('\n').filter((line) => line.startsWith('mdp-server:'));
    expect(human).toEqual([
      `mdp-server: port ${port} on 127.0.0.1 is already in use by another program; pick another with --port <n>, or --port 0 for any free port`,
    ]);
    expect(r.stderr).not.toContain('server.closed');
    expect(r.stdout).toBe('');
  });

  it('says so when the port is held by an MDP server', async () => {
    const hub = await startServer({ cluster: { mode: 'standalone' } });
    const r = run(['--port', String(hub.port), '--cluster-mode', 'standalone'], QUIET_ENV);
    expect((await r.exited).code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `mdp-server: port ${hub.port} on 127.0.0.1 is already in use by another MDP server; pick another with --port <n>, or --port 0 for any free port`,
    );
  });

  it('warns on stdout when it listens beyond loopback with no token, and names itself after the host', async () => {
    const r = run(['--host', '0.0.0.0', '--port', '0', '--cluster-mode', 'standalone'], QUIET_ENV);
    const [, port] = await printed(r, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
    await printed(r, /warning/);
    expect(r.stdout).toContain(`server id ${hostname()}:${port})`);
    expect(r.stdout).toContain(
      `mdp-server: warning: listening on every network interface (0.0.0.0) with no auth token: anyone who can reach port ${port} can register clients and read their skills.`,
    );
    expect((await metaOf(`http://127.0.0.1:${port}`)).serverId).toBe(`${hostname()}:${port}`);
    await stop(r);
    const guarded = run(['--host', '0.0.0.0', '--port', '0', '--cluster-mode', 'standalone', '--auth-token', 't'], QUIET_ENV);
    await listening(guarded);
    await stop(guarded);
    expect(guarded.stdout).not.toContain('warning');
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('serves /mdp/meta and stops gracefully on %s with exit 0', async (signal) => {
    const r = run(['--port', '0', '--cluster-mode', 'standalone', '--server-id', 'cli-test', '--log-level', 'silent']);
    const url = await listening(r);
    const meta = parseMetaDocument(await (await fetch(`${url}/mdp/meta`)).json());
    expect(meta.ok && meta.value.serverId).toBe('cli-test');
    r.child.kill(signal);
    expect(await r.exited).toEqual({ code: 0, signal: null });
    await expect(fetch(`${url}/mdp/meta`)).rejects.toThrow();
  });

  it('logs structured JSON lines at debug level', async () => {
    const r = run(['--port', '0', '--cluster-mode', 'standalone', '--log-level', 'debug']);
    await listening(r);
    r.child.kill('SIGTERM');
    await r.exited;
    const lines = r.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.map((l) => (JSON.parse(l) as { event: string }).event)).toContain('server.listening');
  });
  it('keeps serving when whoever read its stdout and stderr went away', async () => {
    // A short election, so the leadership line is written to stdout after the pipe is gone;
    // debug logs write to stderr for every request below.
    const r = run(['--port', '0', '--log-level', 'debug', '--discover-attempts', '0', '--election-timeout-min-ms', '300', '--election-timeout-max-ms', '400']);
    const url = await listening(r);
    r.child.stdout!.destroy();
    // It logs that it leads in the same step as it prints the leadership line to the closed stdout.
    await printed(r, /"event":"cluster\.leader_changed"[^\n]*"role":"leader"/, 'stderr');
    r.child.stderr!.destroy();
    for (let i = 0; i < 5; i++) expect((await fetch(`${url}/skills/nobody/x`)).status).toBe(404);
    expect((await metaOf(url)).cluster.role).toBe('leader');
    // A crash on a failed write would have ended it with another status, before or after the SIGTERM.
    r.child.kill('SIGTERM');
    expect(await r.exited).toEqual({ code: 0, signal: null });
  });
});

describe("the reference server's command lines", () => {
  // What a line does not say comes from the environment (MDP_PORT=0 for its default port, no
  // discovery of other tests' servers); its flags override that.
  it('--port <n> --server-id hub', async () => {
    const [port] = await freePorts(1);
    const r = run(['--port', String(port), '--server-id', 'hub'], QUIET_ENV);
    const url = await listening(r);
    expect(url).toBe(`http://127.0.0.1:${port}`);
    expect((await metaOf(url)).serverId).toBe('hub');
    await stop(r);
  });

  it('--cluster-mode auto --server-id edge-01 follows the hub it discovers (proving the same per-user secret)', async () => {
    const hub = await startServer({
      serverId: 'hub',
      cluster: {
        mode: 'auto',
        discovery: { attempts: 0 },
        heartbeatIntervalMs: 100,
        leaseDurationMs: 800,
        electionTimeoutMinMs: 200,
        electionTimeoutMaxMs: 300,
        // The file the CLI makes and reads in its state directory (QUIET_ENV's).
        secretFile: join(dir, 'cluster-secret'),
      },
    });
    await new Promise<void>((resolve) => {
      const off = hub.server.cluster!.onLeaderChange((change) => {
        if (change.role !== 'leader') return;
        off();
        resolve();
      });
    });
    const r = run(['--cluster-mode', 'auto', '--server-id', 'edge-01'], {
      ...QUIET_ENV,
      MDP_PORT: '0',
      MDP_DISCOVER_START_PORT: String(hub.port),
      MDP_DISCOVER_ATTEMPTS: '1',
      MDP_DISCOVER_INTERVAL_MS: '200',
    });
    await printed(r, /mdp-server: cluster mdp: following hub at /);
    const meta = await metaOf(await listening(r));
    expect(meta.serverId).toBe('edge-01');
    expect(meta.cluster).toMatchObject({ role: 'follower', leaderId: 'hub' });
    await stop(r);
  }, 20_000);

  it('--cluster-mode proxy-required --upstream-url ws://127.0.0.1:<hub> mirrors its clients into the hub', async () => {
    const hub = await startServer({ serverId: 'hub', cluster: { mode: 'standalone' } });
    const r = run(['--cluster-mode', 'proxy-required', '--upstream-url', `ws://127.0.0.1:${hub.port}`], { ...QUIET_ENV, MDP_PORT: '0' });
    const [, ws, serverId] = await printed(r, /\(websocket (\S+), server id (\S+)\)/);
    const mirrored = clientChange(hub.server, mirroredId(serverId!, 'hello'), true);
    const client = await TestClient.connect(ws!);
    client.send({ type: 'registerClient', client: descriptor('hello', [skill('/docs/skill.md')]) });
    await mirrored;
    await client.close();
    await stop(r);
  });

  it('--cluster-mode auto --server-id node-a --cluster-members node-a,node-b,node-c', async () => {
    const r = run(['--cluster-mode', 'auto', '--server-id', 'node-a', '--cluster-members', 'node-a,node-b,node-c'], { ...QUIET_ENV, MDP_PORT: '0' });
    const meta = await metaOf(await listening(r));
    expect(meta.serverId).toBe('node-a');
    expect(meta.cluster).toMatchObject({ membershipMode: 'static', knownMemberCount: 3, quorumSize: 2 });
    await stop(r);
  });

  it('takes the four timing flags', async () => {
    const timing = [
      '--cluster-lease-duration-ms',
      '3000',
      '--cluster-election-timeout-min-ms',
      '3500',
      '--cluster-election-timeout-max-ms',
      '5000',
      '--cluster-discovery-interval-ms',
      '1500',
    ];
    const r = run(timing, { ...QUIET_ENV, MDP_PORT: '0' });
    expect((await metaOf(await listening(r))).cluster.leaseDurationMs).toBe(3000);
    await stop(r);
    const print = run([...timing, '--print-config']);
    expect((await print.exited).code).toBe(0);
    expect(print.stdout).toContain('"leaseDurationMs": 3000, // --cluster-lease-duration-ms');
    expect(print.stdout).toContain('"electionTimeoutMinMs": 3500, // --cluster-election-timeout-min-ms');
    expect(print.stdout).toContain('"electionTimeoutMaxMs": 5000, // --cluster-election-timeout-max-ms');
    expect(print.stdout).toContain('"discoverIntervalMs": 1500, // --cluster-discovery-interval-ms');
  });
});

describe("the reference server's --state-store", () => {
  const snapshotOf = (path: string): { status: string; server: { storeDir: string; cwd: string } } =>
    JSON.parse(readFileSync(join(path, 'snapshot.json'), 'utf8'));

  it('--state-store writes under ./.mdp/store of the start directory, --state-store-dir where it says', async () => {
    const start = mkdtempSync(join(dir, 'start-'));
    const plain = run(['--state-store'], { ...QUIET_ENV, MDP_PORT: '0' }, CLI, start);
    await listening(plain);
    expect(snapshotOf(join(start, '.mdp', 'store'))).toMatchObject({ status: 'running', server: { cwd: start, storeDir: join(start, '.mdp', 'store') } });
    await stop(plain);
    expect(snapshotOf(join(start, '.mdp', 'store')).status).toBe('stopped');

    const named = run(['--state-store-dir', 'diag'], { ...QUIET_ENV, MDP_PORT: '0' }, CLI, start);
    await listening(named);
    expect(snapshotOf(join(start, 'diag')).server.storeDir).toBe(join(start, 'diag'));
    await stop(named);
  });

  it('a directory it cannot use stops it before it listens: exit 1 and one line', async () => {
    const start = mkdtempSync(join(dir, 'start-'));
    writeFileSync(join(start, 'taken'), 'x');
    const r = run(['--state-store-dir', 'taken/store'], { ...QUIET_ENV, MDP_PORT: '0' }, CLI, start);
    expect((await r.exited).code).toBe(1);
    expect(r.stderr).toBe(
      `mdp-server: cannot use ${join(start, 'taken', 'store')} as the state store directory: ${join(start, 'taken')} is a file, not a directory\n`,
    );
    expect(r.stdout).toBe('');
  });
});

describe('TLS (the real binaries)', () => {
  let pki: TestPki;
  beforeAll(() => {
    pki = createPki();
  });
  afterAll(() => pki.remove());

  it.each([
    [
      'a missing key',
      (): string[] => ['--tls-key', join(pki.dir, 'nope.key'), '--tls-cert', pki.ca('a').issue('s').certFile],
      /^mdp-server: cannot read the TLS key .*nope\.key: no such file$/,
    ],
    [
      'a key of another certificate',
      (): string[] => {
        const ca = pki.ca('b');
        return ['--tls-key', ca.issue('one').keyFile, '--tls-cert', ca.issue('two').certFile];
      },
      /^mdp-server: the TLS key .*b-one\.key does not match the certificate in .*b-two\.crt$/,
    ],
  ])('%s: one line naming the file, exit 1, nothing listening', async (_, args, message) => {
    const r = run(['--port', '0', '--cluster-mode', 'standalone', ...args()], QUIET_ENV);
    expect((await r.exited).code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(message)]);
    expect(r.stdout).toBe('');
  });

  it('SIGHUP: new connections get the new certificate, the open websocket stays; a bad file keeps the old one', async () => {
    const ca = pki.ca('hup');
    const [one, two, stranger] = [ca.issue('server-1'), ca.issue('server-2'), pki.ca('hup-other').issue('stranger')];
    const keyFile = join(pki.dir, 'hup-live.key');
    const certFile = join(pki.dir, 'hup-live.crt');
    copyFileSync(one.keyFile, keyFile);
    copyFileSync(one.certFile, certFile);
    const r = run(
      ['--port', '0', '--cluster-mode', 'standalone', '--log-level', 'info', '--tls-key', keyFile, '--tls-cert', certFile, '--tls-ca', ca.caFile],
      QUIET_ENV,
    );
    const url = await listening(r);
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const port = Number(new URL(url).port);
    const served = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.ca }, () => {
          resolve(String(socket.getPeerCertificate().subject.CN));
          socket.end();
        });
        socket.on('error', reject);
      });
    expect(await served()).toBe('server-1');
    const client = await TestClient.connect(`wss://127.0.0.1:${port}`, { ca: ca.ca });
    client.handler = () => 'kept answers';
    // The server answers a ping after the registration before it (one socket, in order).
    const registered = client.next((m) => m.type === 'pong');
    client.send({ type: 'registerClient', client: descriptor('kept', [skill('/docs/skill.md')]) });
    client.send({ type: 'ping', timestamp: 1 });
    await registered;
    const read = async (): Promise<string> => (await tlsFetch(ca.ca)(`${url}/skills/kept/docs`)).text();
    expect(await read()).toBe('kept answers');

    copyFileSync(two.keyFile, keyFile);
    copyFileSync(two.certFile, certFile);
    r.child.kill('SIGHUP');
    await printed(r, /"event":"tls\.reloaded"[^\n]*"subject":"CN=server-2"/, 'stderr');
    expect(await served()).toBe('server-2');
    expect(await read()).toBe('kept answers');

    copyFileSync(stranger.keyFile, keyFile);
    r.child.kill('SIGHUP');
    await printed(r, /"event":"tls\.reload_failed"[^\n]*does not match the certificate/, 'stderr');
    expect(await served()).toBe('server-2');
    expect(await read()).toBe('kept answers');
    await client.close();
    await stop(r);
  });

  it('README "Run it with TLS": its two openssl commands make a certificate the server serves and mdp-probe trusts', async () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Run it with TLS'));
    const lines = (/```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '').split('\n');
    const openssl = lines.filter((line) => line.startsWith('openssl '));
    expect(openssl).toHaveLength(2);
    const cwd = mkdtempSync(join(pki.dir, 'readme-'));
    for (const line of openssl) execFileSync('sh', ['-c', line], { cwd, stdio: 'ignore' });
    const words = (prefix: string): string[] =>
      lines
        .find((line) => line.startsWith(prefix))!
        .replace(/\s*#.*$/, '')
        .split(/\s+/)
        .slice(prefix.split(' ').length);
    const inDir = (args: string[]): string[] => args.map((arg) => (arg.endsWith('.pem') ? join(cwd, arg) : arg));
    const r = run([...inDir(words('pnpm start')), '--port', '0', '--cluster-mode', 'standalone'], QUIET_ENV);
    const url = await listening(r);
    const probeArgs = inDir(words('node apps/probe/dist/cli.js')).map((arg) => arg.replace('https://127.0.0.1:47372', url));
    const probe = run(probeArgs, {}, PROBE_CLI);
    expect((await probe.exited).code).toBe(0);
    expect(probe.stdout).toContain(`endpoints     ws        ${url.replace('https', 'wss')}\n`);
    await stop(r);
  });

  it('mdp-probe https://…: refused without the CA, summarised with --tls-ca, accepted with --insecure', async () => {
    const ca = pki.ca('probe');
    const t = await startServer({ tls: ca.tls(ca.issue('server')), cluster: { mode: 'standalone' } });
    const probe = async (...args: string[]): Promise<{ code: number | null; stdout: string }> => {
      const p = run(args, {}, PROBE_CLI);
      return { code: (await p.exited).code, stdout: p.stdout };
    };
    const refused = await probe(t.http);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe(`${t.http}  not MDP: TLS certificate not trusted: self-signed certificate in certificate chain (SELF_SIGNED_CERT_IN_CHAIN)\n`);
    const trusted = await probe(t.http, '--tls-ca', ca.caFile);
    expect(trusted.code).toBe(0);
    expect(trusted.stdout).toContain(`${t.http}  MDP server, protocol mdp 2.0.0\n`);
    expect(trusted.stdout).toContain(`  endpoints     ws        wss://127.0.0.1:${t.port}\n`);
    // A port alone is probed over https under either flag.
    expect(await probe(String(t.port), '--insecure')).toMatchObject({ code: 0, stdout: expect.stringContaining(`${t.http}  MDP server`) });
    const otherCa = await probe(t.http, '--tls-ca', pki.ca('probe-other').caFile);
    expect(otherCa.code).toBe(1);
    expect(otherCa.stdout).toContain('TLS certificate not trusted');
    // A plain HTTP server is no TLS server.
    const plain = await startServer({ cluster: { mode: 'standalone' } });
    expect((await probe(String(plain.port), '--insecure')).stdout).toMatch(/not MDP: no TLS handshake: /);
  });
});
