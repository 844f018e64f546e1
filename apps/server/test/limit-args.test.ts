/** The limit flags: every limit of README "Security and limits" is a flag, an env variable and a file key. */
import { describe, expect, it } from 'vitest';
import { HELP, parseCliArgs } from '../src/settings/cli-args.js';
import { LIMIT_SETTINGS, type LimitKey, limitOption } from '../src/settings/limits.js';
import { SERVER_DEFAULTS } from '../src/settings/options.js';

const run = (argv: string[], env: Record<string, string> = {}) => parseCliArgs(argv, env);
const rows = Object.entries(LIMIT_SETTINGS.settings) as Array<[LimitKey, (typeof LIMIT_SETTINGS.settings)[LimitKey]]>;

describe('limit flags', () => {
  it('default to SERVER_DEFAULTS, each the option limitOption names', () => {
    const defaults = run([]);
    expect(defaults.kind).toBe('run');
    if (defaults.kind !== 'run') return;
    for (const [key] of rows) expect(defaults.options[limitOption(key)]).toBe(SERVER_DEFAULTS[limitOption(key)]);
  });

  it('set their options from flags and from MDP_ variables', () => {
    // Messages small enough for every value to pass the checks between them (an in-flight budget of twice a message).
    const argv = [...rows.flatMap(([, row], i) => [`--${row.flag}`, String(60_000 + i)]), '--max-message-bytes', '30000'];
    const command = run(argv);
    expect(command.kind).toBe('run');
    if (command.kind !== 'run') return;
    rows.forEach(([key], i) => {
      expect(command.options[limitOption(key)]).toBe(60_000 + i);
    });
    expect(run([], { MDP_MAX_PENDING_CALLS: '7' })).toMatchObject({ options: { maxPendingCalls: 7 } });
  });

  it('are all in --help with their defaults', () => {
    expect(HELP).toContain('Limits (a refused peer is told why');
    for (const [key, row] of rows) {
      expect(HELP).toContain(`--${row.flag} <`);
      expect(String(SERVER_DEFAULTS[limitOption(key)])).toMatch(/^\d+$/);
    }
    expect(rows.map(([, row]) => row.flag)).toEqual([
      'max-pending-calls',
      'max-path-length',
      'max-path-segments',
      'max-catalog-paths',
      'max-total-paths',
      'max-description-length',
      'max-schema-length',
      'max-catalog-bytes',
      'max-total-catalog-bytes',
      'max-clients-per-address',
      'max-catalog-updates-per-minute',
      'max-ws-buffered-bytes',
      'ws-stall-timeout-ms',
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
      'http-write-timeout-ms',
      'max-pipelined-requests',
      'max-http-connections',
      'max-inflight-bytes',
    ]);
  });

  it.each([
    [['--max-pending-calls', '0'], '--max-pending-calls must be a positive whole number, got "0"'],
    [['--max-path-length', '1.5'], '--max-path-length must be a positive whole number, got "1.5"'],
    [['--ws-register-timeout-ms', '3000000000'], '--ws-register-timeout-ms must be a whole number from 1 to 2147483647, got "3000000000"'],
    [['--ws-stall-timeout-ms', '0'], '--ws-stall-timeout-ms must be a whole number from 1 to 2147483647, got "0"'],
    [['--max-total-paths', '-5'], '--max-total-paths must be a positive whole number, got "-5"'],
    [['--max-http-connections', 'many'], '--max-http-connections must be a positive whole number, got "many"'],
    [['--max-description-length', '0'], '--max-description-length must be a positive whole number, got "0"'],
    [['--max-schema-length', '64k'], '--max-schema-length must be a positive whole number, got "64k"'],
    [['--max-catalog-bytes', '-1'], '--max-catalog-bytes must be a positive whole number, got "-1"'],
    [['--max-total-catalog-bytes', '1e9'], '--max-total-catalog-bytes must be a positive whole number, got "1e9"'],
    [['--max-clients-per-address', '2.5'], '--max-clients-per-address must be a positive whole number, got "2.5"'],
    [['--max-inflight-bytes', '0'], '--max-inflight-bytes must be a positive whole number, got "0"'],
  ])('refuse %j', (argv, message) => {
    expect(run(argv)).toEqual({ kind: 'error', messages: [message] });
  });

  it('refuse a request time-out below the headers time-out', () => {
    const refused = run(['--http-request-timeout-ms', '1000']);
    expect(refused.kind).toBe('error');
    expect(refused).toEqual({ kind: 'error', messages: ['--http-request-timeout-ms (1000) must not be below the default --http-headers-timeout-ms (20000)'] });
  });

  it('refuse a total of catalog bytes below the bytes of one catalog', () => {
    expect(run(['--max-total-catalog-bytes', '1000'])).toEqual({
      kind: 'error',
      messages: ['--max-total-catalog-bytes (1000) must not be below the default --max-catalog-bytes (1048576)'],
    });
    expect(run(['--max-total-catalog-bytes', '1000', '--max-catalog-bytes', '1000'])).toMatchObject({
      kind: 'run',
      options: { maxTotalCatalogBytes: 1000, maxCatalogBytes: 1000 },
    });
  });

  it('refuse an in-flight budget below twice the largest message, whichever is given', () => {
    expect(run(['--max-inflight-bytes', '2097151'])).toEqual({
      kind: 'error',
      messages: ['--max-inflight-bytes (2097151) must be at least twice the default --max-message-bytes (1048576)'],
    });
    expect(run(['--max-message-bytes', '33554433'])).toEqual({
      kind: 'error',
      messages: ['the default --max-inflight-bytes (67108864) must be at least twice --max-message-bytes (33554433)'],
    });
    expect(run(['--max-inflight-bytes', '2097152'])).toMatchObject({ kind: 'run', options: { maxInflightBytes: 2097152 } });
  });
});
