export {
  InvalidTargetError,
  PROBE_DEFAULTS,
  metaUrlOf,
  normalizeTarget,
  probeMeta,
  scanRange,
} from './meta-probe.js';
export type { ProbeFailureKind, ProbeOptions, ProbeResult, ScanOptions } from './meta-probe.js';
