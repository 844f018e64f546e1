/** The settings table of `mdp-server`: flags, MDP_* variables, config files, one schema. No processes. */
import { readFileSync } from 'node:fs';
import { CATALOG_DEFAULTS, DEFAULT_MAX_CONTENT_BYTES, MCP_TASK_DEFAULTS } from '@mdp/mcp-bridge';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLUSTER_DEFAULTS, DISCOVERY_DEFAULTS } from '@mdp/cluster';
import { HELP, SERVER_DEFAULTS, parseCliArgs, type CliCommand, type MdpServerOptions } from '../src/index.js';
import { CLI_SETTINGS } from '../src/settings/cli-args.js';
import { defaultStateDir } from '../src/cluster.js';
import { LIMIT_SETTINGS, type LimitKey, limitOption } from '../src/settings/limits.js';
import { text, wholeNumber } from '../src/settings/values.js';
import { envName, settingGroup, settingTable } from '../src/settings/table.js';

type Files = Readonly<Record<string, string>>;

/** A file system of `files`; any other path is missing. */
const reader =
  (files: Files) =>
  (path: string): string => {
    const found = files[path];
    if (found === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return found;
  };

function parse(argv: string[], env: Record<string, string> = {}, files: Files = {}): CliCommand {
  return parseCliArgs(argv, env, reader(files));
}

function options(argv: string[], env: Record<string, string> = {}, files: Files = {}): MdpServerOptions {
  const command = parse(argv, env, files);
  if (command.kind !== 'run') throw new Error(`expected run, got ${JSON.stringify(command)}`);
  return command.options;
}

function errors(argv: string[], env: Record<string, string> = {}, files: Files = {}): readonly string[] {
  const command = parse(argv, env, files);
  if (command.kind !== 'error') throw new Error(`expected an error, got ${JSON.stringify(command)}`);
  return command.messages;
}

function printed(argv: string[], env: Record<string, string> = {}, files: Files = {}): string {
  const command = parse([...argv, '--print-config'], env, files);
  if (command.kind !== 'print-config') throw new Error(`expected print-config, got ${JSON.stringify(command)}`);
  return command.text;
}

describe('defaults', () => {
  it('run the documented defaults: auto cluster mode, the port fallback of auto mode, term, vote and secret on disk', () => {
    expect(options([])).toEqual({
      host: SERVER_DEFAULTS.host,
      port: SERVER_DEFAULTS.port,
      invocationTimeoutMs: SERVER_DEFAULTS.invocationTimeoutMs,
      heartbeatIntervalMs: SERVER_DEFAULTS.heartbeatIntervalMs,
      heartbeatTimeoutMs: SERVER_DEFAULTS.heartbeatTimeoutMs,
      maxMessageBytes: SERVER_DEFAULTS.maxMessageBytes,
      httpLoopLongPollTimeoutMs: SERVER_DEFAULTS.httpLoopLongPollTimeoutMs,
      drainTimeoutMs: SERVER_DEFAULTS.drainTimeoutMs,
      clusterId: SERVER_DEFAULTS.clusterId,
      logLevel: SERVER_DEFAULTS.logLevel,
      tenancy: SERVER_DEFAULTS.tenancy,
      cookieSameSite: SERVER_DEFAULTS.cookieSameSite,
      cookieKeyFile: join(defaultStateDir(), 'cookie-keys'),
      cluster: {
        mode: 'auto',
        discovery: {
          host: DISCOVERY_DEFAULTS.host,
          startPort: DISCOVERY_DEFAULTS.startPort,
          attempts: DISCOVERY_DEFAULTS.attempts,
          intervalMs: DISCOVERY_DEFAULTS.intervalMs,
          probeTimeoutMs: DISCOVERY_DEFAULTS.probeTimeoutMs,
        },
        serveDefaultPort: true,
        heartbeatIntervalMs: CLUSTER_DEFAULTS.heartbeatIntervalMs,
        leaseDurationMs: CLUSTER_DEFAULTS.leaseDurationMs,
        electionTimeoutMinMs: CLUSTER_DEFAULTS.electionTimeoutMinMs,
        electionTimeoutMaxMs: CLUSTER_DEFAULTS.electionTimeoutMaxMs,
        stateDir: defaultStateDir(),
        secretFile: join(defaultStateDir(), 'cluster-secret'),
        portFallback: true,
      },
      mcp: {
        surface: CATALOG_DEFAULTS.surface,
        maxTools: CATALOG_DEFAULTS.maxTools,
        maxContentBytes: DEFAULT_MAX_CONTENT_BYTES,
        taskTimeoutMs: MCP_TASK_DEFAULTS.timeoutMs,
      },
      httpLoopIdleTimeoutMs: SERVER_DEFAULTS.httpLoopIdleTimeoutMs,
      // Every limit, at its default (settings/limits.ts).
      ...Object.fromEntries((Object.keys(LIMIT_SETTINGS.settings) as LimitKey[]).map((key) => [limitOption(key), SERVER_DEFAULTS[limitOption(key)]])),
    });
  });

  it('--serve-default-port false keeps a leader to its own port', () => {
    expect(options(['--serve-default-port', 'false']).cluster?.serveDefaultPort).toBe(false);
    expect(errors(['--serve-default-port', 'maybe'])).toEqual(['--serve-default-port must be true or false, got "maybe"']);
  });

  it('the cluster secret: made in the state directory by default, given, or none for an open cluster', () => {
    expect(options(['--cluster-state-dir', '/s']).cluster).toMatchObject({ stateDir: '/s', secretFile: join('/s', 'cluster-secret') });
    expect(options(['--cluster-state-dir', 'none']).cluster?.secretFile).toBe(join(defaultStateDir(), 'cluster-secret'));
    const given = options(['--cluster-secret', 'k']).cluster;
    expect(given?.secret).toBe('k');
    expect(given?.secretFile).toBeUndefined();
    const open = options([], { MDP_CLUSTER_SECRET: 'none' }).cluster;
    expect(open?.secret).toBeUndefined();
    expect(open?.secretFile).toBeUndefined();
  });

  it('a port from any source turns the fallback off; so does any mode but auto', () => {
    expect(options(['--port', '47372']).cluster?.portFallback).toBe(false);
    expect(options([], { MDP_PORT: '47372' }).cluster?.portFallback).toBe(false);
    expect(options(['--config', 'c.json'], {}, { 'c.json': '{"port": 47372}' }).cluster?.portFallback).toBe(false);
    expect(options(['--cluster-mode', 'standalone']).cluster?.portFallback).toBe(false);
  });
});

describe('precedence: flag > environment > config file > manifest > default', () => {
  const files = {
    'c.json': '{ "port": 3000, "serverId": "file", "logLevel": "warn", "clusterId": "file" }',
    'm.json': '{ "clusterId": "manifest", "discoverAttempts": 7 }',
  };
  const env = { MDP_CONFIG: 'c.json', MDP_CLUSTER_CONFIG: 'm.json', MDP_PORT: '2000', MDP_SERVER_ID: 'env' };

  it('takes each setting from the first source that has it', () => {
    const o = options(['--port', '1000'], env, files);
    expect(o.port).toBe(1000); // flag over env and file
    expect(o.serverId).toBe('env'); // env over file
    expect(o.logLevel).toBe('warn'); // file over default
    expect(o.clusterId).toBe('file'); // file over manifest
    expect(o.cluster?.discovery?.attempts).toBe(7); // manifest over default
    expect(o.host).toBe(SERVER_DEFAULTS.host); // default
  });

  it('--print-config names where each value came from', () => {
    const out = printed(['--port', '1000'], env, files);
    expect(out).toContain('"port": 1000, // --port');
    expect(out).toContain('"serverId": "env", // MDP_SERVER_ID (environment)');
    expect(out).toContain('"logLevel": "warn", // "logLevel" in c.json');
    expect(out).toContain('"clusterId": "file", // "clusterId" in c.json');
    expect(out).toContain('"discoverAttempts": 7, // "discoverAttempts" in m.json');
    expect(out).toContain('"host": "127.0.0.1", // default');
  });

  it('the last of a repeated flag wins, under either of its names', () => {
    expect(options(['--port', '1', '--port', '2']).port).toBe(2);
    expect(options(['--lease-duration-ms', '5000', '--cluster-lease-duration-ms', '6000']).cluster?.leaseDurationMs).toBe(6000);
  });

  it('keeps MDP_AUTH_TOKENS and MDP_CLUSTER_SECRET working', () => {
    const o = options([], { MDP_AUTH_TOKENS: 'a, b,,c', MDP_CLUSTER_SECRET: 's' });
    expect(o.authTokens).toEqual(['a', 'b', 'c']);
    expect(o.cluster?.secret).toBe('s');
    expect(options(['--auth-token', 'x'], { MDP_AUTH_TOKENS: 'a' }).authTokens).toEqual(['x']);
    expect(options(['--auth-token', 'x', '--auth-token', 'y']).authTokens).toEqual(['x', 'y']);
  });

  it('adds the tokens of --auth-tokens-file to the others', () => {
    const o = options(['--auth-token', 'x', '--auth-tokens-file', 't.txt'], {}, { 't.txt': '# tokens\n y \n\nz\n' });
    expect(o.authTokens).toEqual(['x', 'y', 'z']);
  });

  it('reads a config file with comments and trailing commas, and lists and numbers in either form', () => {
    const file = `{
      // a comment
      "authTokens": ["t1", "t2"], /* another */
      "clusterMembers": "a, b",
      "discoverSeed": ["127.0.0.1:5000"],
      "discoverStartPort": "5000",
    }`;
    const o = options(['--config', 'c.jsonc'], {}, { 'c.jsonc': file });
    expect(o.authTokens).toEqual(['t1', 't2']);
    expect(o.cluster).toMatchObject({ members: ['a', 'b'], discovery: { startPort: 5000, seedUrls: ['127.0.0.1:5000'] } });
  });
});

describe('the reference server', () => {
  // The examples of its --help, and the timing flags it documents.
  it('--port 47372 --server-id hub', () => {
    expect(options(['--port', '47372', '--server-id', 'hub'])).toMatchObject({ port: 47372, serverId: 'hub', cluster: { mode: 'auto', portFallback: false } });
  });

  it('--cluster-mode auto --server-id edge-01', () => {
    expect(options(['--cluster-mode', 'auto', '--server-id', 'edge-01'])).toMatchObject({ serverId: 'edge-01', cluster: { mode: 'auto', portFallback: true } });
  });

  it('--cluster-mode proxy-required --upstream-url ws://127.0.0.1:47372', () => {
    expect(options(['--cluster-mode', 'proxy-required', '--upstream-url', 'ws://127.0.0.1:47372'])).toMatchObject({
      cluster: { mode: 'proxy-required', upstreamUrl: 'ws://127.0.0.1:47372' },
    });
  });

  it('--cluster-mode auto --server-id node-a --cluster-members node-a,node-b,node-c', () => {
    expect(options(['--cluster-mode', 'auto', '--server-id', 'node-a', '--cluster-members', 'node-a,node-b,node-c'])).toMatchObject({
      serverId: 'node-a',
      cluster: { mode: 'auto', members: ['node-a', 'node-b', 'node-c'] },
    });
  });

  it('takes its timing flags as ours', () => {
    const theirs = options([
      '--cluster-heartbeat-interval-ms',
      '200',
      '--cluster-lease-duration-ms',
      '900',
      '--cluster-election-timeout-min-ms',
      '1000',
      '--cluster-election-timeout-max-ms',
      '1500',
      '--cluster-discovery-interval-ms',
      '700',
    ]);
    const ours = options([
      '--cluster-heartbeat-interval-ms',
      '200',
      '--lease-duration-ms',
      '900',
      '--election-timeout-min-ms',
      '1000',
      '--election-timeout-max-ms',
      '1500',
      '--discover-interval-ms',
      '700',
    ]);
    expect(theirs).toEqual(ours);
    expect(theirs.cluster).toMatchObject({
      heartbeatIntervalMs: 200,
      leaseDurationMs: 900,
      electionTimeoutMinMs: 1000,
      electionTimeoutMaxMs: 1500,
      discovery: { intervalMs: 700 },
    });
  });

  it('reads its --cluster-config manifest; flags win, fields it does not know are ignored', () => {
    const manifest = JSON.stringify({
      clusterId: 'local-dev',
      clusterMembers: ['node-a', 'node-b', 'node-a'],
      upstreamUrl: 'ws://127.0.0.1:47372',
      discoverHost: '127.0.0.2',
      discoverStartPort: 48000,
      discoverAttempts: 10,
      description: 'not a setting',
      port: 1,
    });
    const o = options(['--cluster-config', 'cluster.json', '--discover-attempts', '3'], {}, { 'cluster.json': manifest });
    expect(o.clusterId).toBe('local-dev');
    expect(o.port).toBe(SERVER_DEFAULTS.port); // a manifest sets cluster settings only
    expect(o.cluster).toMatchObject({
      members: ['node-a', 'node-b'],
      upstreamUrl: 'ws://127.0.0.1:47372',
      discovery: { host: '127.0.0.2', startPort: 48000, attempts: 3 },
    });
  });
});

describe("the reference server's --state-store and --state-store-dir", () => {
  const store = (argv: string[], env: Record<string, string> = {}, files: Files = {}) => options(argv, env, files).stateStore;

  it('are off by default; --state-store writes to ./.mdp/store of the start directory', () => {
    expect(store([])).toBeUndefined();
    expect(store(['--state-store'])).toEqual({ dir: join(process.cwd(), '.mdp', 'store') });
  });

  it('a directory alone turns the store on, resolved against the start directory', () => {
    expect(store(['--state-store-dir', 'diag/store'])).toEqual({ dir: join(process.cwd(), 'diag', 'store') });
    expect(store(['--state-store', '--state-store-dir', '/srv/mdp-store'])).toEqual({ dir: '/srv/mdp-store' });
  });

  it('come from the environment and the config file like every setting; an explicit false keeps it off', () => {
    expect(store([], { MDP_STATE_STORE_DIR: '/env/store' })).toEqual({ dir: '/env/store' });
    expect(store([], { MDP_STATE_STORE: 'true' })).toEqual({ dir: join(process.cwd(), '.mdp', 'store') });
    expect(store([], { MDP_STATE_STORE: 'false', MDP_STATE_STORE_DIR: '/env/store' })).toBeUndefined();
    const file = { 'mdp.jsonc': '{ "stateStore": true, "stateStoreDir": "/file/store" }' };
    expect(store(['--config', 'mdp.jsonc'], {}, file)).toEqual({ dir: '/file/store' });
    expect(store(['--config', 'mdp.jsonc', '--state-store-dir', '/flag/store'], { MDP_STATE_STORE_DIR: '/env/store' }, file)).toEqual({ dir: '/flag/store' });
  });

  it('are in --help and --print-config, and bad values say where they came from', () => {
    expect(HELP).toContain('--state-store ');
    expect(HELP).toContain('--state-store-dir <dir>');
    const out = printed(['--state-store-dir', 'diag'], { MDP_STATE_STORE: 'yes' });
    expect(out).toContain('"stateStore": true, // MDP_STATE_STORE (environment)');
    expect(out).toContain('"stateStoreDir": "diag", // --state-store-dir');
    expect(errors(['--state-store', 'x'])).toEqual(['unexpected argument "x" (options start with --)']);
    expect(errors(['--state-store-dir', ' '])).toEqual(['--state-store-dir must not be empty, got " "']);
    expect(errors([], { MDP_STATE_STORE: 'maybe' })).toEqual(['MDP_STATE_STORE (environment) must be true or false, got "maybe"']);
  });
});

describe('bad values: one line each, naming the source', () => {
  it.each(['MDP_AUTH_TOKEN', 'MDP_AUTH_TOKENS', 'MDP_METRICS_TOKEN', 'MDP_CLUSTER_SECRET'])(
    'refuses %s set but empty: a missing secret must not leave the server open',
    (name) => {
      expect(errors([], { [name]: '' })).toEqual([
        `${name} (environment) is set but empty: give it a value or unset it (an empty secret would leave the server unprotected)`,
      ]);
    },
  );

  it('takes an empty variable that is no secret as unset', () => {
    expect(options([], { MDP_PORT: '', MDP_LOG_LEVEL: '' }).port).toBe(SERVER_DEFAULTS.port);
  });

  it.each([
    [['--port', '-1'], '--port must be a whole number from 0 to 65535, got "-1"'],
    [['--port', '70000'], '--port must be a whole number from 0 to 65535, got "70000"'],
    [['--port', 'abc'], '--port must be a whole number from 0 to 65535, got "abc"'],
    [['--port=1.5'], '--port must be a whole number from 0 to 65535, got "1.5"'],
    [['--max-message-bytes', '0'], '--max-message-bytes must be a positive whole number, got "0"'],
    [['--log-level', 'loud'], '--log-level must be one of silent, error, warn, info, debug, got "loud"'],
    [['--cluster-mode', 'leader'], '--cluster-mode must be one of standalone, auto, proxy-required, got "leader"'],
    [['--host', ' '], '--host must not be empty, got " "'],
    [['--server-id', ''], '--server-id must not be empty, got ""'],
    [['--cluster-members', ' , '], '--cluster-members must name at least one server id, got " , "'],
    [['--auth-token', ''], '--auth-token must not hold an empty token'],
    [['--upstream-url', 'ftp://x'], /^--upstream-url must be the address of an MDP server \(URL, HOST:PORT or PORT\): .*scheme/],
    [['--discover-seed', 'a:1', '--discover-seed', 'b:http'], /^--discover-seed must be addresses of MDP servers .*"b:http"/],
    [['--discover-start-port', '0'], '--discover-start-port must be a whole number from 1 to 65535, got "0"'],
    [['--cluster-state-dir', ''], '--cluster-state-dir must not be empty, got ""'],
    // Node runs a longer timer after 1 ms: such values would make the timers spin, not wait.
    [['--cluster-lease-duration-ms', '3000000000'], '--cluster-lease-duration-ms must be a whole number from 1 to 2147483647, got "3000000000"'],
    [['--long-poll-timeout-ms', '60001'], '--long-poll-timeout-ms must be a whole number from 1 to 60000, got "60001"'],
    [
      ['--lease-duration-ms', '100', '--cluster-heartbeat-interval-ms', '100'],
      '--lease-duration-ms (100) must be longer than --cluster-heartbeat-interval-ms (100)',
    ],
    [['--cluster-heartbeat-interval-ms', '5000'], 'the default --lease-duration-ms (4000) must be longer than --cluster-heartbeat-interval-ms (5000)'],
    [
      ['--cluster-election-timeout-min-ms', '900', '--cluster-election-timeout-max-ms', '800'],
      '--cluster-election-timeout-max-ms (800) must not be below --cluster-election-timeout-min-ms (900)',
    ],
    [['--frobnicate'], 'unknown option --frobnicate'],
    [['--frobnicate', 'value'], 'unknown option --frobnicate'],
    [['--prot', '1'], 'unknown option --prot (did you mean --port?)'],
    [['-x'], 'unknown option -x'],
    [['stray'], 'unexpected argument "stray" (options start with --)'],
    [['--port'], '--port needs a value'],
    [['--print-config=yes'], '--print-config takes no value'],
  ])('%j', (argv, message) => {
    const lines = errors(argv);
    expect(lines).toHaveLength(1);
    if (typeof message === 'string') expect(lines[0]).toBe(message);
    else expect(lines[0]).toMatch(message);
  });

  it('from the environment', () => {
    expect(errors([], { MDP_PORT: '-1' })).toEqual(['MDP_PORT (environment) must be a whole number from 0 to 65535, got "-1"']);
    expect(errors([], { MDP_CLUSTER_LEASE_DURATION_MS: 'soon' })).toEqual([
      'MDP_CLUSTER_LEASE_DURATION_MS (environment) must be a whole number from 1 to 2147483647, got "soon"',
    ]);
    expect(errors([], { MDP_LEASE_DURATION_MS: '5000', MDP_CLUSTER_LEASE_DURATION_MS: '6000' })).toEqual([
      'MDP_LEASE_DURATION_MS (environment) and MDP_CLUSTER_LEASE_DURATION_MS both set --lease-duration-ms, differently: keep one',
    ]);
    // An empty variable is unset; the same value under both names is fine.
    expect(options([], { MDP_PORT: '', MDP_LEASE_DURATION_MS: '5000', MDP_CLUSTER_LEASE_DURATION_MS: '5000' }).port).toBe(SERVER_DEFAULTS.port);
  });

  it('from a config file, with the key', () => {
    const bad = { 'c.json': '{ "port": -1, "clusterMode": "x", "logLevel": 3, "clusterMembers": [] }' };
    expect(errors(['--config', 'c.json'], {}, bad)).toEqual([
      '"port" in c.json must be a whole number from 0 to 65535, got -1',
      '"logLevel" in c.json must be one of silent, error, warn, info, debug, got 3',
      '"clusterMode" in c.json must be one of standalone, auto, proxy-required, got "x"',
      '"clusterMembers" in c.json must name at least one server id, got []',
    ]);
    expect(errors(['--cluster-config', 'm.json'], {}, { 'm.json': '{"discoverStartPort": 0}' })).toEqual([
      '"discoverStartPort" in m.json must be a whole number from 1 to 65535, got 0',
    ]);
  });

  it('in a config file itself', () => {
    const cases: [Files[string], string][] = [
      ['{ "prot": 1 }', '"prot" in c.json is not a setting (did you mean "port"?)'],
      ['{ "printConfig": true }', '"printConfig" in c.json cannot be set in a config file'],
      ['{ "config": "other.json" }', '"config" in c.json cannot be set in a config file'],
      [
        '{ "leaseDurationMs": 5000, "clusterLeaseDurationMs": 6000 }',
        '"leaseDurationMs" in c.json and "clusterLeaseDurationMs" both set --lease-duration-ms, differently: keep one',
      ],
      ['{\n  "port": 1,\n  "host" "x"\n}', 'c.json: line 3, column 10: colon expected'],
      ['[1, 2]', 'c.json must hold a JSON object'],
    ];
    for (const [content, message] of cases) expect(errors(['--config', 'c.json'], {}, { 'c.json': content }), content).toEqual([message]);
  });

  it('in the files the settings name', () => {
    expect(errors(['--config', 'missing.json'])).toEqual(['cannot read missing.json (--config): no such file']);
    expect(errors([], { MDP_CONFIG: 'missing.json' })).toEqual(['cannot read missing.json (MDP_CONFIG (environment)): no such file']);
    expect(errors(['--cluster-config', ' '])).toEqual(['--cluster-config must name a file']);
    expect(errors(['--auth-tokens-file', 't.txt'])).toEqual(['cannot read t.txt (--auth-tokens-file): no such file']);
    expect(errors(['--auth-tokens-file', 't.txt'], {}, { 't.txt': '# none\n' })).toEqual(['t.txt (--auth-tokens-file) holds no tokens']);
  });

  it('every bad value at once, one line each', () => {
    expect(errors(['--port', 'x', '--log-level', 'loud'], { MDP_HOST: ' ' })).toHaveLength(3);
  });

  it('never echo a secret', () => {
    const lines = errors(['--cluster-secret', ' ', '--auth-token', '']);
    expect(lines).toEqual(['--auth-token must not hold an empty token', '--cluster-secret must not be empty']);
  });
});

describe("TLS and the cookie (the reference server's --tls-key, --tls-cert, --tls-ca)", () => {
  it('takes the three files from flags, the environment or a config file, and the cookie mode', () => {
    expect(options(['--tls-key', 'k.pem', '--tls-cert', 'c.pem', '--tls-ca', 'ca.pem', '--cookie-same-site', 'none'])).toMatchObject({
      tls: { keyFile: 'k.pem', certFile: 'c.pem', caFile: 'ca.pem' },
      cookieSameSite: 'none',
    });
    const env = { MDP_TLS_KEY: 'env-k.pem', MDP_TLS_CERT: 'env-c.pem', MDP_COOKIE_SAME_SITE: 'strict' };
    expect(options([], env)).toMatchObject({ tls: { keyFile: 'env-k.pem', certFile: 'env-c.pem' }, cookieSameSite: 'strict' });
    expect(options([], env).tls).not.toHaveProperty('caFile');
    const file = JSON.stringify({ tlsKey: 'f-k.pem', tlsCert: 'f-c.pem', tlsCa: 'f-ca.pem' });
    expect(options(['--config', 'mdp.json', '--tls-cert', 'flag-c.pem'], { MDP_TLS_KEY: 'env-k.pem' }, { 'mdp.json': file }).tls).toEqual({
      keyFile: 'env-k.pem',
      certFile: 'flag-c.pem',
      caFile: 'f-ca.pem',
    });
    // Without TLS there is no tls option, and the cookie is Lax.
    expect(options([])).not.toHaveProperty('tls');
    expect(options([]).cookieSameSite).toBe('lax');
    expect(options(['--tls-key', 'k', '--tls-cert', 'c', '--tls-ca', 'ca', '--tls-peer-certs']).tls).toMatchObject({ peerCertificates: true });
    expect(options(['--tls-key', 'k', '--tls-cert', 'c', '--tls-ca', 'ca'], { MDP_TLS_PEER_CERTS: 'yes' }).tls).toMatchObject({ peerCertificates: true });
    expect(options(['--tls-key', 'k', '--tls-cert', 'c', '--tls-ca', 'ca']).tls).not.toHaveProperty('peerCertificates');
  });

  it('refuses a key without its certificate, a certificate without its key, a CA alone', () => {
    expect(errors(['--tls-key', 'k.pem'])).toEqual(['--tls-key needs --tls-cert too: TLS takes a key and its certificate']);
    expect(errors([], { MDP_TLS_CERT: 'c.pem' })).toEqual(['MDP_TLS_CERT (environment) needs --tls-key too: TLS takes a key and its certificate']);
    expect(errors(['--tls-ca', 'ca.pem'])).toEqual(['--tls-ca needs --tls-key and --tls-cert: the CA is that of a server on TLS']);
    expect(errors(['--tls-key', 'k', '--tls-cert', 'c', '--tls-peer-certs'])).toEqual([
      '--tls-peer-certs needs --tls-ca: peers show client certificates from that CA',
    ]);
  });

  it('refuses SameSite=None without TLS, saying why, wherever it came from', () => {
    const [flag] = errors(['--cookie-same-site', 'none']);
    expect(flag).toMatch(/^--cookie-same-site none needs TLS \(--tls-key and --tls-cert\): browsers keep a SameSite=None cookie only when it is Secure/);
    expect(errors(['--config', 'm.json'], {}, { 'm.json': '{"cookieSameSite": "none"}' })[0]).toMatch(/^"cookieSameSite" in m\.json none needs TLS/);
    expect(errors(['--cookie-same-site', 'None'])).toEqual(['--cookie-same-site must be one of lax, strict, none, got "None"']);
  });
});

describe('--print-config', () => {
  it('hides the credentials of URLs (upstream, seeds), as a comment', () => {
    const text = printed(['--upstream-url', 'ws://user:pw@127.0.0.1:9/x?token=abc', '--discover-seed', 'http://127.0.0.1:8/?key=k']);
    expect(text).not.toContain('pw');
    expect(text).not.toContain('token=abc');
    expect(text).not.toContain('key=k');
    expect(text).toContain('// "upstreamUrl": "ws://***:***@127.0.0.1:9/x?***" (credentials hidden; from --upstream-url)');
    expect(printed(['--upstream-url', 'ws://127.0.0.1:9'])).toContain('"upstreamUrl": "ws://127.0.0.1:9", // --upstream-url');
  });

  it('hides secrets, from every source', () => {
    const out = printed(['--auth-token', 'flag-token'], { MDP_CLUSTER_SECRET: 'env-secret' }, {});
    const fromFile = printed(['--config', 'c.json'], {}, { 'c.json': '{"authTokens": ["file-token"], "clusterSecret": "file-secret"}' });
    for (const secret of ['flag-token', 'env-secret']) expect(out).not.toContain(secret);
    for (const secret of ['file-token', 'file-secret']) expect(fromFile).not.toContain(secret);
    expect(out).toContain('// "authToken": hidden (1 set, from --auth-token)');
    expect(out).toContain('// "clusterSecret": hidden (from MDP_CLUSTER_SECRET (environment))');
  });

  it('is a config file that gives the same settings back', () => {
    const argv = ['--port', '0', '--cluster-members', 'a,b', '--discover-seed', '127.0.0.1:9', '--log-level', 'debug', '--cluster-secret', 's'];
    const out = printed(argv);
    expect(options(['--config', 'printed.jsonc', '--cluster-secret', 's'], {}, { 'printed.jsonc': out })).toEqual(options(argv));
  });

  it('does not start a server, whatever else is set', () => {
    expect(parse(['--print-config', '--port', '1']).kind).toBe('print-config');
    expect(parse(['--print-config', '--port', 'x']).kind).toBe('error');
  });
});

describe('the README', () => {
  it('"Configure it": its config file and command line start the server it describes', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Configure it'));
    const file = /```jsonc\n\/\/ mdp\.jsonc\n([\s\S]*?)```/.exec(section)?.[1];
    expect(file).toBeDefined();
    expect(section).toContain('MDP_SERVER_ID=node-a pnpm start --config mdp.jsonc --print-config');
    const o = options(['--config', 'mdp.jsonc'], { MDP_SERVER_ID: 'node-a' }, { 'mdp.jsonc': file! });
    expect(o).toMatchObject({
      host: '0.0.0.0',
      port: 47372,
      serverId: 'node-a',
      authTokens: ['change-me'],
      cluster: { members: ['node-a', 'node-b', 'node-c'] },
    });
    const out = printed(['--config', 'mdp.jsonc'], { MDP_SERVER_ID: 'node-a' }, { 'mdp.jsonc': file! });
    expect(out).not.toContain('change-me');
  });
});

describe('the table', () => {
  it('--help shows every flag, alias and default of the table', () => {
    for (const [key, row] of CLI_SETTINGS.rows) {
      for (const name of [row.flag, ...(row.aliases ?? [])]) expect(HELP, key).toContain(`--${name}`);
      if (row.default !== undefined && typeof row.default !== 'function') expect(HELP, key).toContain(`(default ${String(row.default)})`);
    }
    // The state dir's default depends on the environment: --help names the rule, not one user's path.
    expect(HELP.replace(/\s+/g, ' ')).toContain('(default $XDG_STATE_HOME/mdp-server, else ~/.local/state/mdp-server)');
    expect(HELP).toMatch(/^Server:$/m);
    expect(HELP).toMatch(/^Cluster \(.*\):$/m);
  });

  it('names every setting once, in the environment too', () => {
    expect(CLI_SETTINGS.envNames.get('MDP_AUTH_TOKENS')).toBe('authToken');
    expect(CLI_SETTINGS.envNames.get(envName('cluster-election-timeout-max-ms'))).toBe('electionTimeoutMaxMs');
    expect(CLI_SETTINGS.fileKeys.get('clusterDiscoveryIntervalMs')).toBe('discoverIntervalMs');
    const group = (flag: string) =>
      settingGroup({ title: 't', settings: { [flag === 'port' ? 'port' : 'other']: { flag, schema: wholeNumber(0), help: '' } } });
    expect(() =>
      settingTable([group('port'), settingGroup({ title: 'u', settings: { host: { flag: 'host', aliases: ['port'], schema: text(), help: '' } } })]),
    ).toThrow(/both use the name port/);
    expect(() => settingTable([settingGroup({ title: 't', settings: { serverID: { flag: 'server-id', schema: text(), help: '' } } })])).toThrow(/camelCase/);
  });

  it('help and version win over everything but a malformed command line', () => {
    expect(parse(['--port', 'x', '--help'])).toEqual({ kind: 'help' });
    expect(parse(['-v'], { MDP_PORT: 'x' })).toEqual({ kind: 'version' });
    expect(parse(['--bogus', '-h']).kind).toBe('error');
  });
});
