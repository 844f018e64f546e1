export { DEFAULT_SCAN, DEFAULT_TARGET, MAX_TIMEOUT_MS, parseCommandLine, parseScanSpec } from './args.js';
export type { ParsedCommandLine, ProbeCliOptions, ScanSpec } from './args.js';
export { EXIT, check, exitCodeOf, problemsOf } from './check.js';
export type { CheckedResult, Requirements } from './check.js';
export { formatJson, formatServer, formatText } from './format.js';
export type { ProbeReport, ScanReport } from './format.js';
export { HELP } from './help.js';
export { probeAll, runProbe } from './probe.js';
export type { ProbeIo } from './probe.js';
