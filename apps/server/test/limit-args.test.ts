import { describe, expect, it } from 'vitest';
import { HELP, SERVER_DEFAULTS, parseCliArgs } from '../src/index.js';
import { LIMIT_FLAGS } from '../src/limit-args.js';

describe('limit flags', () => {
  it('parse into the server options of the same name', () => {
    const argv = LIMIT_FLAGS.flatMap(({ flag }, i) => [`--${flag}`, String(60_000 + i)]);
    const command = parseCliArgs(argv, {});
    expect(command.kind).toBe('run');
    if (command.kind !== 'run') return;
    for (const [i, { key }] of LIMIT_FLAGS.entries()) expect(command.options[key]).toBe(60_000 + i);
  });

  it('name every limit with a default, and --help shows each with it', () => {
    for (const { flag, key } of LIMIT_FLAGS) {
      expect(typeof SERVER_DEFAULTS[key]).toBe('number');
      expect(HELP).toMatch(new RegExp(`--${flag} <n> .*\\(default ${SERVER_DEFAULTS[key]}\\)`));
    }
    expect(LIMIT_FLAGS.map((f) => f.flag)).toEqual([
      'max-pending-calls',
      'max-path-length',
      'max-path-segments',
      'max-catalog-paths',
      'max-catalog-updates-per-minute',
      'max-ws-buffered-bytes',
      'ws-register-timeout-ms',
      'max-ws-connections',
      'max-ws-connections-per-address',
      'max-http-loop-sessions',
      'max-http-loop-sessions-per-address',
      'http-loop-max-queued-messages',
      'http-loop-max-queued-bytes',
      'http-headers-timeout-ms',
      'http-request-timeout-ms',
      'http-keep-alive-timeout-ms',
      'http-idle-timeout-ms',
      'max-pipelined-requests',
    ]);
  });

  it.each([
    [['--max-pending-calls', '0'], '--max-pending-calls must be a positive whole number, got "0"'],
    [['--max-ws-connections=-3'], '--max-ws-connections must be a positive whole number, got "-3"'],
    [['--max-path-length', '1.5'], '--max-path-length must be a positive whole number, got "1.5"'],
    [['--ws-register-timeout-ms', '3000000000'], '--ws-register-timeout-ms must be a whole number from 1 to 2147483647, got "3000000000"'],
    [['--http-request-timeout-ms', '1000'], '--http-request-timeout-ms (1000) must not be below --http-headers-timeout-ms (20000)'],
    [['--max-pipelined-requests'], "Option '--max-pipelined-requests <value>' argument missing"],
  ])('refuse %j', (argv, message) => {
    expect(parseCliArgs(argv, {})).toEqual({ kind: 'error', message });
  });
});
