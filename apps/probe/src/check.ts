/** What `--require-version` and `--cluster-id` demand of a server, and the exit code that follows. */
import semver from 'semver';
import type { MetaDocument } from '@mdp/protocol';
import type { ProbeResult } from '@mdp/cluster';

export const EXIT = Object.freeze({
  /** An MDP server answered and every MDP server that answered meets the requirements. */
  found: 0,
  /** No MDP server answered. */
  nothing: 1,
  /** An MDP server answered but fails `--require-version` or `--cluster-id`. */
  incompatible: 2,
  /** Bad command line (EX_USAGE of sysexits.h). */
  usage: 64,
});

export interface Requirements {
  readonly requireVersion?: string | undefined;
  readonly clusterId?: string | undefined;
}

/** Why `meta` fails the requirements; empty when it meets them. */
export function problemsOf(meta: MetaDocument, requirements: Requirements): string[] {
  const problems: string[] = [];
  const { requireVersion, clusterId } = requirements;
  if (requireVersion !== undefined && !meta.supportedProtocolRanges.some((range) => satisfies(requireVersion, range))) {
    const accepted = meta.supportedProtocolRanges.length ? meta.supportedProtocolRanges.join(', ') : 'no version';
    problems.push(`protocol ${requireVersion} is not accepted (server accepts ${accepted})`);
  }
  if (clusterId !== undefined && meta.cluster.id !== clusterId) {
    problems.push(`cluster is ${JSON.stringify(meta.cluster.id)}, not ${JSON.stringify(clusterId)}`);
  }
  return problems;
}

/** `semver.satisfies` that treats a range the server got wrong as not satisfied rather than throwing. */
function satisfies(version: string, range: string): boolean {
  try {
    return semver.satisfies(version, range);
  } catch {
    return false;
  }
}

/** A probe result with the requirement problems of an MDP answer attached. */
export type CheckedResult = (Extract<ProbeResult, { ok: true }> & { readonly problems: readonly string[] }) | Extract<ProbeResult, { ok: false }>;

export function check(result: ProbeResult, requirements: Requirements): CheckedResult {
  return result.ok ? { ...result, problems: problemsOf(result.meta, requirements) } : result;
}

/** 2 if any MDP server fails the requirements, else 0 if any MDP server answered, else 1. */
export function exitCodeOf(results: readonly CheckedResult[]): number {
  const servers = results.filter((result) => result.ok);
  if (servers.some((server) => server.problems.length > 0)) return EXIT.incompatible;
  return servers.length > 0 ? EXIT.found : EXIT.nothing;
}
