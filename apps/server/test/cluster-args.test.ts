import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from '../src/index.js';
import { cliClusterDefaults } from '../src/cluster-args.js';

describe('cluster flags', () => {
  it('parse into cluster options', () => {
    const command = parseCliArgs(
      [
        '--cluster-mode', 'proxy-required',
        '--cluster-members', 'a:1, b:2,c:3',
        '--upstream-url', 'http://hub:47372',
        '--discover-host', '10.0.0.5',
        '--discover-start-port', '5000',
        '--discover-attempts', '0',
        '--discover-interval-ms', '500',
        '--discover-timeout-ms', '250',
        '--discover-seed', 'x:1',
        '--discover-seed', 'ws://y:2/mdp/cluster',
        '--cluster-heartbeat-interval-ms', '200',
        '--lease-duration-ms', '900',
        '--election-timeout-min-ms', '1000',
        '--election-timeout-max-ms', '1500',
        '--cluster-state-dir', 'none',
        '--cluster-secret', 's',
      ],
      {},
    );
    expect(command).toEqual({
      kind: 'run',
      options: {
        cluster: {
          mode: 'proxy-required',
          members: ['a:1', 'b:2', 'c:3'],
          upstreamUrl: 'http://hub:47372',
          discovery: { host: '10.0.0.5', startPort: 5000, attempts: 0, intervalMs: 500, probeTimeoutMs: 250, seedUrls: ['x:1', 'ws://y:2/mdp/cluster'] },
          heartbeatIntervalMs: 200,
          leaseDurationMs: 900,
          electionTimeoutMinMs: 1000,
          electionTimeoutMaxMs: 1500,
          secret: 's',
        },
      },
    });
  });

  it('without cluster flags leave the choice to the binary, which defaults to auto with a state dir', () => {
    expect(parseCliArgs([], {})).toEqual({ kind: 'run', options: {} });
    const defaults = cliClusterDefaults({});
    expect(defaults.mode).toBe('auto');
    expect(defaults.stateDir).toBe(join(homedir(), '.local', 'state', 'mdp-server'));
    expect(cliClusterDefaults({ MDP_CLUSTER_SECRET: 'env' }).secret).toBe('env');
  });

  it('keep cluster state per user: $XDG_STATE_HOME/mdp-server, else ~/.local/state/mdp-server', () => {
    expect(cliClusterDefaults({ XDG_STATE_HOME: '/var/lib/ann' }).stateDir).toBe('/var/lib/ann/mdp-server');
    expect(cliClusterDefaults({ HOME: '/home/ann' }).stateDir).toBe('/home/ann/.local/state/mdp-server');
    // The XDG base directory spec ignores a relative path.
    expect(cliClusterDefaults({ XDG_STATE_HOME: 'state', HOME: '/home/ann' }).stateDir).toBe('/home/ann/.local/state/mdp-server');
    expect(parseCliArgs(['--cluster-mode', 'auto'], { XDG_STATE_HOME: '/var/lib/ann' })).toMatchObject({
      options: { cluster: { stateDir: '/var/lib/ann/mdp-server' } },
    });
    expect(parseCliArgs(['--cluster-state-dir', '/srv/mdp'], { XDG_STATE_HOME: '/var/lib/ann' })).toMatchObject({
      options: { cluster: { stateDir: '/srv/mdp' } },
    });
  });

  it('take the largest values that still work', () => {
    const command = parseCliArgs(['--invocation-timeout-ms', '2147483647', '--long-poll-timeout-ms', '60000', '--max-message-bytes', '4294967296'], {});
    expect(command).toMatchObject({ kind: 'run', options: { invocationTimeoutMs: 2147483647, longPollTimeoutMs: 60000, maxMessageBytes: 4294967296 } });
  });

  it.each([
    [['--cluster-mode', 'leader'], /--cluster-mode must be one of standalone, auto, proxy-required/],
    [['--cluster-members', ' , '], /--cluster-members must name at least one server id/],
    [['--discover-start-port', '0'], /--discover-start-port must be a whole number from 1 to 65535/],
    [['--discover-attempts', 'many'], /--discover-attempts must be a whole number/],
    [['--lease-duration-ms', '100', '--cluster-heartbeat-interval-ms', '100'], /must be longer than the cluster heartbeat interval/],
    [['--election-timeout-min-ms', '900', '--election-timeout-max-ms', '800'], /must not be below/],
    [['--cluster-state-dir', ''], /--cluster-state-dir must not be empty/],
    // Node runs a longer timer after 1 ms: such values would make the timers spin, not wait.
    [['--lease-duration-ms', '3000000000'], /--lease-duration-ms must be a whole number from 1 to 2147483647/],
    [['--discover-interval-ms', '2147483648'], /--discover-interval-ms must be a whole number from 1 to 2147483647/],
    [['--invocation-timeout-ms', '3000000000'], /--invocation-timeout-ms must be a whole number from 1 to 2147483647/],
    [['--heartbeat-interval-ms', '3000000000'], /--heartbeat-interval-ms must be a whole number from 1 to 2147483647/],
    [['--heartbeat-timeout-ms', '2147483648'], /--heartbeat-timeout-ms must be a whole number from 1 to 2147483647/],
    [['--long-poll-timeout-ms', '60001'], /--long-poll-timeout-ms must be a whole number from 1 to 60000/],
  ])('refuse %j', (argv, message) => {
    const command = parseCliArgs(argv, {});
    expect(command.kind).toBe('error');
    expect(command.kind === 'error' && command.message).toMatch(message);
  });
});
