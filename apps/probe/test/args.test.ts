import { describe, expect, it } from 'vitest';
import { PROBE_DEFAULTS } from '@mdp/cluster';
import { DEFAULT_SCAN, HELP, MAX_TIMEOUT_MS, parseCommandLine, parseScanSpec } from '../src/index.js';

function run(argv: string[]) {
  const parsed = parseCommandLine(argv);
  if (parsed.kind !== 'run') throw new Error(`expected run, got ${JSON.stringify(parsed)}`);
  return parsed.options;
}

function usageError(argv: string[]): string {
  const parsed = parseCommandLine(argv);
  if (parsed.kind !== 'usage-error') throw new Error(`expected a usage error, got ${JSON.stringify(parsed)}`);
  return parsed.message;
}

describe('parseCommandLine', () => {
  it('probes 127.0.0.1:47372 when given nothing', () => {
    expect(run([])).toEqual({
      targets: ['http://127.0.0.1:47372'],
      scans: [],
      json: false,
      requireVersion: undefined,
      clusterId: undefined,
      timeoutMs: 1000,
      tlsCaFile: undefined,
      insecure: false,
    });
  });

  it('normalizes URL, PORT and HOST:PORT targets, dropping duplicates', () => {
    expect(run(['http://127.0.0.1:5000/mdp/meta', '6000', 'localhost:7000', '[::1]:8000', '6000']).targets).toEqual([
      'http://127.0.0.1:5000',
      'http://127.0.0.1:6000',
      'http://localhost:7000',
      'http://[::1]:8000',
    ]);
  });

  it('reads every option', () => {
    expect(run(['--json', '--require-version', '2.1.0', '--cluster-id', 'prod', '--timeout', '250', '--scan', 'h:1-2', '9'])).toEqual({
      targets: ['http://127.0.0.1:9'],
      scans: [{ host: 'h', from: 1, to: 2 }],
      json: true,
      requireVersion: '2.1.0',
      clusterId: 'prod',
      timeoutMs: 250,
      tlsCaFile: undefined,
      insecure: false,
    });
  });

  it('takes --tls-ca or --insecure; with either, a target without a scheme is probed over https', () => {
    expect(run(['--tls-ca', 'ca.pem', '8443', 'http://127.0.0.1:80'])).toMatchObject({
      targets: ['https://127.0.0.1:8443', 'http://127.0.0.1'],
      tlsCaFile: 'ca.pem',
      insecure: false,
    });
    expect(run(['--insecure'])).toMatchObject({ targets: ['https://127.0.0.1:47372'], tlsCaFile: undefined, insecure: true });
    expect(run(['wss://h:1/mdp/cluster']).targets).toEqual(['https://h:1']);
    expect(usageError(['--tls-ca', 'ca.pem', '--insecure'])).toMatch(/^--tls-ca and --insecure: give one/);
    expect(usageError(['--tls-ca='])).toBe('--tls-ca: the file name must not be empty');
  });

  it('takes a bare --scan as the default 100-port range and then probes no default target', () => {
    expect(DEFAULT_SCAN).toEqual({ host: '127.0.0.1', from: 47372, to: 47471 });
    expect(run(['--scan'])).toMatchObject({ targets: [], scans: [DEFAULT_SCAN] });
    expect(run(['--scan', '--json'])).toMatchObject({ scans: [DEFAULT_SCAN], json: true });
    // A target after a bare --scan stays a target.
    expect(run(['--scan', '5000'])).toMatchObject({ targets: ['http://127.0.0.1:5000'], scans: [DEFAULT_SCAN] });
    expect(run(['--scan=10-12', '--scan', '[::1]:5-6'])).toMatchObject({
      scans: [
        { host: '127.0.0.1', from: 10, to: 12 },
        { host: '[::1]', from: 5, to: 6 },
      ],
    });
  });

  it('answers --version and -v', () => {
    expect(parseCommandLine(['--version'])).toEqual({ kind: 'version' });
    expect(parseCommandLine(['-v', '5000'])).toEqual({ kind: 'version' });
  });

  it('answers --help and -h', () => {
    expect(parseCommandLine(['--help'])).toEqual({ kind: 'help' });
    expect(parseCommandLine(['-h', '--bogus-after-help-is-still-an-error'])).toMatchObject({ kind: 'usage-error' });
    expect(parseCommandLine(['5000', '-h'])).toEqual({ kind: 'help' });
  });

  it.each([
    [['--bogus'], /Unknown option '--bogus'/],
    [['-x'], /Unknown option '-x'/],
    [['0'], /bad port '0'/],
    [['65536'], /bad port '65536'/],
    [['localhost:http'], /bad port 'http'/],
    [['ftp://h:1'], /unsupported scheme/],
    [['--scan', '10-5'], /bad range '10-5'/],
    [['--scan', '0-5'], /bad port 0/],
    [['--scan', 'h:1-70000'], /bad port 70000/],
    [['--scan=h:1'], /is not HOST:FROM-TO/],
    [['--scan=bad host:1-2'], /bad host/],
    [['--require-version', '2'], /not a semver version/],
    [['--require-version', '^2.0.0'], /not a semver version/],
    [['--require-version'], /argument missing/],
    [['--cluster-id', ''], /must not be empty/],
    [['--timeout', '0'], /--timeout: '0'/],
    [['--timeout', '1.5'], /--timeout: '1.5'/],
    [['--timeout', 'soon'], /--timeout: 'soon'/],
    [['--timeout', String(MAX_TIMEOUT_MS + 1)], /--timeout/],
    [['--json=yes'], /does not take an argument/],
  ])('refuses %j', (argv, message) => {
    expect(usageError(argv)).toMatch(message);
  });
});

describe('parseScanSpec', () => {
  it.each([
    ['127.0.0.1:47372-47471', { host: '127.0.0.1', from: 47372, to: 47471 }],
    ['100-100', { host: '127.0.0.1', from: 100, to: 100 }],
    ['localhost:1-3', { host: 'localhost', from: 1, to: 3 }],
    ['[::1]:1-3', { host: '[::1]', from: 1, to: 3 }],
  ])('%s', (spec, expected) => {
    expect(parseScanSpec(spec)).toEqual(expected);
  });
});

describe('--help', () => {
  it('states the real defaults', () => {
    expect(HELP).toContain(`(default ${PROBE_DEFAULTS.timeoutMs})`);
    expect(HELP).toContain(`a bare --scan means ${DEFAULT_SCAN.host}:${DEFAULT_SCAN.from}-${DEFAULT_SCAN.to}`);
    expect(HELP).toContain(`no --scan: 127.0.0.1:${PROBE_DEFAULTS.port}`);
    expect(HELP).toContain(`a host on port ${PROBE_DEFAULTS.port}`);
  });

  it('names every option the parser accepts', () => {
    for (const flag of ['--scan', '--require-version', '--cluster-id', '--timeout', '--json', '-h, --help', '-v, --version']) {
      expect(HELP).toContain(flag);
    }
  });

  it('lists every exit code', () => {
    for (const code of ['0 ', '1 ', '2 ', '64 ']) expect(HELP).toMatch(new RegExp(`^  ${code}`, 'm'));
  });
});
