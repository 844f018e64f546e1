/** One `mdp-probe` run: command line in, text out, exit code back. The CLI entry only wires it to the process. */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { probeMeta, scanRange, type PeerTls } from '@mdp/cluster';
import { parseCommandLine, type ProbeCliOptions } from './args.js';
import { EXIT, check, exitCodeOf } from './check.js';
import { formatJson, formatText, type ProbeReport } from './format.js';
import { HELP } from './help.js';

export interface ProbeIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/** Probe every target and scan range concurrently and check the answers; `tls` for https targets. */
export async function probeAll(options: ProbeCliOptions, tls?: PeerTls): Promise<ProbeReport> {
  const probeOptions = { timeoutMs: options.timeoutMs, ...(tls ? { tls } : {}) };
  const [targets, scans] = await Promise.all([
    Promise.all(options.targets.map((target) => probeMeta(target, probeOptions))),
    Promise.all(options.scans.map((spec) => scanRange(spec.host, spec.from, spec.to, probeOptions))),
  ]);
  const checkedTargets = targets.map((result) => check(result, options));
  const checkedScans = scans.map((results, i) => ({
    spec: options.scans[i]!,
    results: results.map((result) => check(result, options)),
  }));
  const exitCode = exitCodeOf([...checkedTargets, ...checkedScans.flatMap((scan) => scan.results)]);
  return { targets: checkedTargets, scans: checkedScans, exitCode };
}

/** Run `mdp-probe` with `argv` (without node and script); resolves to the exit code. */
export async function runProbe(argv: readonly string[], io: ProbeIo): Promise<number> {
  const parsed = parseCommandLine(argv);
  if (parsed.kind === 'help') {
    io.stdout.write(HELP);
    return EXIT.found;
  }
  if (parsed.kind === 'version') {
    const pkg = createRequire(import.meta.url)('../package.json') as { version: string };
    io.stdout.write(`mdp-probe ${pkg.version}\n`);
    return EXIT.found;
  }
  if (parsed.kind === 'usage-error') {
    io.stderr.write(`mdp-probe: ${parsed.message}\nTry 'mdp-probe --help'.\n`);
    return EXIT.usage;
  }
  const tls = tlsOf(parsed.options);
  if (typeof tls === 'string') {
    io.stderr.write(`mdp-probe: ${tls}\nTry 'mdp-probe --help'.\n`);
    return EXIT.usage;
  }
  const report = await probeAll(parsed.options, tls);
  io.stdout.write(parsed.options.json ? formatJson(report) : formatText(report));
  return report.exitCode;
}

/** The TLS options of `--tls-ca` or `--insecure`, or why the CA file cannot be used. */
function tlsOf(options: ProbeCliOptions): PeerTls | undefined | string {
  if (options.insecure) return { rejectUnauthorized: false };
  const file = options.tlsCaFile;
  if (file === undefined) return undefined;
  let ca: Buffer;
  try {
    ca = readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return `--tls-ca: cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`;
  }
  try {
    // node takes a CA file that holds no certificate without a word, and then trusts nothing.
    new X509Certificate(ca);
  } catch {
    return `--tls-ca: ${file} is not a PEM certificate`;
  }
  return { ca };
}
