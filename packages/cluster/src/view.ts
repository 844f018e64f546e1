/** The `cluster` object of GET /mdp/meta (SPEC §9–§10), from an election snapshot. */
import type { ClusterView } from '@mdp/protocol';
import type { ElectionSnapshot } from './election-driver.js';
import type { Membership } from './membership.js';

export function clusterView(
  clusterId: string,
  membership: { readonly mode: Membership['mode']; readonly fingerprint: string },
  leaseDurationMs: number,
  view: ElectionSnapshot,
): ClusterView {
  return {
    id: clusterId,
    membershipMode: membership.mode,
    membershipFingerprint: membership.fingerprint,
    role: view.role,
    term: view.term,
    leaderId: view.leaderId ?? '',
    leaderUrl: view.leaderUrl ?? '',
    leaseDurationMs,
    knownMemberCount: view.knownMemberCount,
    reachableMemberCount: view.reachableMemberCount,
    quorumSize: view.quorumSize,
    hasQuorum: view.hasQuorum,
  };
}
