/** The fleet settings (settings/bus.ts): flags, environment and config file into bus options, and their refusals. */
import { describe, expect, it } from 'vitest';
import { HELP, parseCliArgs } from '../src/index.js';

const options = (argv: string[], env: Record<string, string> = {}, files: Record<string, string> = {}) => {
  const command = parseCliArgs(argv, env, (path) => {
    const text = files[path];
    if (text === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    return text;
  });
  if (command.kind !== 'run') throw new Error(`not run: ${JSON.stringify(command)}`);
  return command.options;
};

const errors = (argv: string[], env: Record<string, string> = {}): readonly string[] => {
  const command = parseCliArgs(argv, env);
  if (command.kind !== 'error') throw new Error(`not an error: ${command.kind}`);
  return command.messages;
};

describe('--bus', () => {
  it('is off by default, and the cluster keeps its own mode', () => {
    const parsed = options([]);
    expect(parsed.bus).toBeUndefined();
    expect(parsed.cluster?.mode).toBe('auto');
  });

  it('turns bus mode on with its settings, and runs the node standalone', () => {
    const parsed = options([
      '--bus',
      'nats://10.0.0.5:4222,tls://10.0.0.6:4222',
      '--bus-prefix',
      'team-a',
      '--bus-creds',
      '/etc/mdp/node.creds',
      '--bus-tls-ca',
      '/etc/mdp/ca.pem',
      '--bus-ttl-ms',
      '2000',
      '--bus-replicas',
      '3',
      '--server-id',
      'node-1',
    ]);
    expect(parsed.bus).toEqual({
      servers: ['nats://10.0.0.5:4222', 'tls://10.0.0.6:4222'],
      prefix: 'team-a',
      auth: { credsFile: '/etc/mdp/node.creds' },
      tls: { caFile: '/etc/mdp/ca.pem' },
      ttlMs: 2000,
      replicas: 3,
    });
    expect(parsed.cluster).toMatchObject({ mode: 'standalone', portFallback: false });
  });

  it('takes every setting from MDP_BUS_* and the config file too', () => {
    const fromEnv = options([], {
      MDP_BUS: 'nats://h:4222',
      MDP_BUS_USER: 'node',
      MDP_BUS_PASSWORD: 'pw',
      MDP_BUS_TLS_CERT: 'c.pem',
      MDP_BUS_TLS_KEY: 'k.pem',
    });
    expect(fromEnv.bus).toEqual({
      servers: ['nats://h:4222'],
      auth: { user: 'node', password: 'pw' },
      tls: { certFile: 'c.pem', keyFile: 'k.pem' },
      ttlMs: 5000,
      replicas: 1,
    });
    const fromFile = options(['--config', 'c.json'], {}, { 'c.json': '{ "bus": ["nats://a:1", "nats://b:2"], "busToken": "secret-token" }' });
    expect(fromFile.bus).toMatchObject({ servers: ['nats://a:1', 'nats://b:2'], auth: { token: 'secret-token' } });
  });

  it('never prints its secrets', () => {
    const command = parseCliArgs(['--bus', 'nats://u:hidden-pass@h:4222', '--bus-token', 'hidden-token', '--print-config'], {});
    expect(command.kind).toBe('print-config');
    const text = command.kind === 'print-config' ? command.text : '';
    expect(text).toContain('"bus"');
    expect(text).not.toContain('hidden-token');
    expect(text).not.toContain('hidden-pass');
  });

  it('refuses bad values with where they came from', () => {
    expect(errors(['--bus', 'http://h:4222']).join('\n')).toMatch(/--bus.*must be NATS server URLs/);
    expect(errors(['--bus', 'nats://h:1', '--bus-prefix', 'a.b']).join('\n')).toMatch(/--bus-prefix/);
    expect(errors(['--bus', 'nats://h:1', '--bus-ttl-ms', '500']).join('\n')).toMatch(/--bus-ttl-ms.*1000 to 60000/);
    expect(errors(['--bus', 'nats://h:1', '--bus-replicas', '2']).join('\n')).toMatch(/1, 3 or 5/);
    expect(errors(['--bus', 'nats://h:1', '--bus-token', 't', '--bus-creds', 'f'])).toEqual([
      'give one way to authenticate to NATS: --bus-creds, --bus-token, or --bus-user with --bus-password',
    ]);
    expect(errors(['--bus', 'nats://h:1', '--bus-user', 'u'])).toEqual(['--bus-user and --bus-password go together']);
    expect(errors(['--bus', 'nats://h:1', '--bus-tls-cert', 'c'])).toEqual(['--bus-tls-cert and --bus-tls-key go together']);
  });

  it('refuses the cluster settings that need discovery or election, and bus settings without --bus', () => {
    expect(errors(['--bus', 'nats://h:1', '--cluster-members', 'a:1,b:2'])).toEqual([
      '--cluster-members cannot be used with --bus: a fleet on NATS has no local discovery, election or hub (every node serves every client)',
    ]);
    expect(errors(['--bus', 'nats://h:1'], { MDP_CLUSTER_MODE: 'auto' })[0]).toMatch(/^MDP_CLUSTER_MODE \(environment\) cannot be used with --bus/);
    expect(options(['--bus', 'nats://h:1', '--cluster-mode', 'standalone', '--cluster-id', 'blue']).bus).toBeDefined();
    expect(errors(['--bus-prefix', 'x'])).toEqual(['--bus-prefix needs --bus (a fleet on NATS)']);
  });

  it('is in --help', () => {
    expect(HELP).toContain('--bus <urls>');
    expect(HELP).toContain('--bus-prefix <name>');
    expect(HELP).toContain('--bus-creds <file>');
  });
});
