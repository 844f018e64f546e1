/** The flags of operating it: --metrics-token, --access-log, --audit-log, --http-loop-idle-timeout-ms. */
import { describe, expect, it } from 'vitest';
import { HELP, parseCliArgs } from '../src/settings/cli-args.js';

const run = (argv: string[], env: Record<string, string> = {}) => parseCliArgs(argv, env);

describe('observe flags', () => {
  it('set their options; by default only the idle time-out, at 10 s', () => {
    const defaults = run([]);
    expect(defaults.kind === 'run' && defaults.options).toMatchObject({ httpLoopIdleTimeoutMs: 10_000 });
    expect(defaults.kind === 'run' && Object.keys(defaults.options).filter((k) => ['metricsToken', 'accessLog', 'auditLog'].includes(k))).toEqual([]);
    expect(run(['--metrics-token', 'm1', '--access-log', '--audit-log', '-', '--http-loop-idle-timeout-ms', '2500'])).toMatchObject({
      kind: 'run',
      options: { metricsToken: 'm1', accessLog: true, auditLog: '-', httpLoopIdleTimeoutMs: 2500 },
    });
    expect(run(['--audit-log', '/var/log/mdp/audit.jsonl'])).toMatchObject({ options: { auditLog: '/var/log/mdp/audit.jsonl' } });
  });

  it('take the metrics token from MDP_METRICS_TOKEN; the flag wins', () => {
    expect(run([], { MDP_METRICS_TOKEN: 'from-env' })).toMatchObject({ options: { metricsToken: 'from-env' } });
    expect(run(['--metrics-token', 'flag'], { MDP_METRICS_TOKEN: 'from-env' })).toMatchObject({ options: { metricsToken: 'flag' } });
  });

  it.each([
    [['--metrics-token', ' '], '--metrics-token must not be empty'],
    [['--audit-log', ''], '--audit-log must not be empty, got ""'],
    [['--http-loop-idle-timeout-ms', '0'], '--http-loop-idle-timeout-ms must be a whole number from 1 to 2147483647, got "0"'],
    [['--http-loop-idle-timeout-ms', '1.5'], '--http-loop-idle-timeout-ms must be a whole number from 1 to 2147483647, got "1.5"'],
    [['--http-loop-idle-timeout-ms', '2147483648'], '--http-loop-idle-timeout-ms must be a whole number from 1 to 2147483647, got "2147483648"'],
  ])('refuse %j', (argv, message) => {
    expect(run(argv)).toEqual({ kind: 'error', messages: [message] });
  });

  it('a value given to --access-log is an error, not a file name', () => {
    expect(run(['--access-log=yes'])).toMatchObject({ kind: 'error' });
  });

  it('hide the metrics token in --print-config', () => {
    const printed = run(['--metrics-token', 'very-secret', '--print-config']);
    expect(printed.kind).toBe('print-config');
    expect(JSON.stringify(printed)).not.toContain('very-secret');
  });

  it('are in --help', () => {
    for (const flag of ['--metrics-token', '--access-log', '--audit-log', '--http-loop-idle-timeout-ms']) expect(HELP).toContain(flag);
  });
});
