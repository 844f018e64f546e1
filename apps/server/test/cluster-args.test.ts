import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from '../src/index.js';
import { defaultStateDir } from '../src/cluster.js';

describe('cluster flags', () => {
  it('parse into cluster options', () => {
    const command = parseCliArgs(
      [
        '--cluster-mode',
        'proxy-required',
        '--cluster-members',
        'a:1, b:2,c:3',
        '--upstream-url',
        'http://hub:47372',
        '--discover-host',
        '10.0.0.5',
        '--discover-start-port',
        '5000',
        '--discover-attempts',
        '0',
        '--discover-interval-ms',
        '500',
        '--discover-timeout-ms',
        '250',
        '--discover-seed',
        'x:1',
        '--discover-seed',
        'ws://y:2/mdp/cluster',
        '--cluster-heartbeat-interval-ms',
        '200',
        '--lease-duration-ms',
        '900',
        '--election-timeout-min-ms',
        '1000',
        '--election-timeout-max-ms',
        '1500',
        '--cluster-state-dir',
        'none',
        '--cluster-secret',
        's',
      ],
      {},
    );
    expect(command).toMatchObject({
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
          portFallback: false,
        },
      },
    });
    expect(command.kind === 'run' && command.options.cluster).not.toHaveProperty('stateDir');
  });

  it('keep cluster state per user: $XDG_STATE_HOME/mdp-server, else ~/.local/state/mdp-server', () => {
    expect(defaultStateDir({ XDG_STATE_HOME: '/var/lib/ann' })).toBe('/var/lib/ann/mdp-server');
    expect(defaultStateDir({ HOME: '/home/ann' })).toBe('/home/ann/.local/state/mdp-server');
    // The XDG base directory spec ignores a relative path.
    expect(defaultStateDir({ XDG_STATE_HOME: 'state', HOME: '/home/ann' })).toBe('/home/ann/.local/state/mdp-server');
    expect(defaultStateDir({})).toBe(join(homedir(), '.local', 'state', 'mdp-server'));
    const command = parseCliArgs([], {});
    expect(command.kind === 'run' && command.options.cluster?.stateDir).toBe(defaultStateDir());
  });

  it('take the largest values that still work', () => {
    // A message that large needs an in-flight budget of at least twice it.
    const command = parseCliArgs(
      ['--invocation-timeout-ms', '2147483647', '--long-poll-timeout-ms', '60000', '--max-message-bytes', '4294967296', '--max-inflight-bytes', '8589934592'],
      {},
    );
    expect(command).toMatchObject({
      kind: 'run',
      options: { invocationTimeoutMs: 2147483647, httpLoopLongPollTimeoutMs: 60000, maxMessageBytes: 4294967296, maxInflightBytes: 8589934592 },
    });
  });
});
