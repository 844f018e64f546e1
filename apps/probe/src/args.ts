/** Command line of `mdp-probe`: turns argv into options or a usage error (exit 64). */
import { parseArgs } from 'node:util';
import semver from 'semver';
import { PROBE_DEFAULTS, normalizeTarget, type BaseScheme } from '@mdp/cluster';

/** One `--scan HOST:FROM-TO`. */
export interface ScanSpec {
  readonly host: string;
  readonly from: number;
  readonly to: number;
}

export interface ProbeCliOptions {
  /** Base URLs to probe, deduplicated, in the order given. */
  readonly targets: readonly string[];
  readonly scans: readonly ScanSpec[];
  readonly json: boolean;
  readonly requireVersion: string | undefined;
  readonly clusterId: string | undefined;
  /** Time allowed for each probe, in ms. */
  readonly timeoutMs: number;
  /** `--tls-ca FILE`: trust the CA certificates in FILE for https targets. */
  readonly tlsCaFile: string | undefined;
  /** `--insecure`: accept any certificate of an https target. */
  readonly insecure: boolean;
}

export type ParsedCommandLine =
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'run'; readonly options: ProbeCliOptions }
  | { readonly kind: 'usage-error'; readonly message: string };

/** Range a bare `--scan` covers: the 100 ports from the default MDP port (SPEC §11). */
export const DEFAULT_SCAN: ScanSpec = Object.freeze({ host: '127.0.0.1', from: PROBE_DEFAULTS.port, to: PROBE_DEFAULTS.port + 99 });
export const DEFAULT_TARGET = `127.0.0.1:${PROBE_DEFAULTS.port}`;
/** Largest accepted `--timeout`, in ms; anything longer is almost certainly a typo. */
export const MAX_TIMEOUT_MS = 600_000;

const OPTIONS = {
  scan: { type: 'string', multiple: true },
  'require-version': { type: 'string' },
  'cluster-id': { type: 'string' },
  timeout: { type: 'string' },
  'tls-ca': { type: 'string' },
  insecure: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** A token that can only be the value of `--scan`: `FROM-TO` or `HOST:FROM-TO`. */
const SCAN_VALUE = /^(?:.*:)?\d+-\d+$/;

class UsageError extends Error {}

export function parseCommandLine(argv: readonly string[]): ParsedCommandLine {
  try {
    return parseOrThrow(argv);
  } catch (error) {
    if (error instanceof UsageError) return { kind: 'usage-error', message: error.message };
    // util.parseArgs reports unknown options and missing values with ERR_PARSE_ARGS_* codes.
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) {
      return { kind: 'usage-error', message: (error as Error).message };
    }
    throw error;
  }
}

function parseOrThrow(argv: readonly string[]): ParsedCommandLine {
  const { values, positionals } = parseArgs({
    args: withScanDefaults(argv),
    options: OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const tlsCaFile = values['tls-ca'];
  if (tlsCaFile === '') throw new UsageError('--tls-ca: the file name must not be empty');
  const insecure = values.insecure ?? false;
  if (insecure && tlsCaFile !== undefined) throw new UsageError('--tls-ca and --insecure: give one (--insecure trusts any certificate anyway)');
  // TLS flags say the servers speak TLS: targets without a scheme are probed over https.
  const scheme = tlsCaFile !== undefined || insecure ? 'https' : 'http';
  const scans = (values.scan ?? []).map(parseScanSpec);
  const targets: string[] = [];
  for (const positional of positionals) {
    const target = targetOf(positional, scheme);
    if (!targets.includes(target)) targets.push(target);
  }
  if (targets.length === 0 && scans.length === 0) targets.push(targetOf(DEFAULT_TARGET, scheme));

  const requireVersion = values['require-version'];
  if (requireVersion !== undefined && semver.valid(requireVersion) === null) {
    throw new UsageError(`--require-version: '${requireVersion}' is not a semver version (e.g. 2.0.0)`);
  }
  const clusterId = values['cluster-id'];
  if (clusterId === '') throw new UsageError('--cluster-id: the cluster id must not be empty');

  return {
    kind: 'run',
    options: {
      targets,
      scans,
      json: values.json ?? false,
      requireVersion,
      clusterId,
      timeoutMs: values.timeout === undefined ? PROBE_DEFAULTS.timeoutMs : parseTimeout(values.timeout),
      tlsCaFile,
      insecure,
    },
  };
}

/**
 * `--scan` takes an optional value, which util.parseArgs cannot express: a bare `--scan` (not
 * followed by `FROM-TO` or `HOST:FROM-TO`) becomes `--scan=<default range>`.
 */
function withScanDefaults(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const next = argv[i + 1];
    if (token === '--scan' && (next === undefined || !SCAN_VALUE.test(next))) {
      out.push(`--scan=${DEFAULT_SCAN.host}:${DEFAULT_SCAN.from}-${DEFAULT_SCAN.to}`);
    } else {
      out.push(token);
    }
  }
  return out;
}

/** `HOST:FROM-TO`, `[v6]:FROM-TO` or `FROM-TO` (host 127.0.0.1). */
export function parseScanSpec(spec: string): ScanSpec {
  const match = /^(?:(.*):)?(\d+)-(\d+)$/.exec(spec);
  if (!match) throw new UsageError(`--scan: '${spec}' is not HOST:FROM-TO (e.g. 127.0.0.1:47372-47471)`);
  const [, hostText = DEFAULT_SCAN.host, fromText = '', toText = ''] = match;
  const from = Number(fromText);
  const to = Number(toText);
  for (const port of [from, to]) {
    if (!(port >= 1 && port <= 65535)) throw new UsageError(`--scan: bad port ${port} in '${spec}' (expected 1-65535)`);
  }
  if (from > to) throw new UsageError(`--scan: bad range '${spec}' (${from} is after ${to})`);
  // Validate the host the same way a target is validated; keep it in URL form ([::1] for IPv6).
  let host: string;
  try {
    host = new URL(normalizeTarget(`${hostText}:${from}`)).hostname;
  } catch (error) {
    throw new UsageError(`--scan: ${(error as Error).message} in '${spec}'`);
  }
  return { host, from, to };
}

function targetOf(arg: string, scheme: BaseScheme): string {
  try {
    return normalizeTarget(arg, scheme);
  } catch (error) {
    throw new UsageError(`${(error as Error).message} in target '${arg}'`);
  }
}

function parseTimeout(text: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(ms >= 1 && ms <= MAX_TIMEOUT_MS)) {
    throw new UsageError(`--timeout: '${text}' is not a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  }
  return ms;
}
