/** The `cluster` object of GET /mdp/meta (SPEC §9–§10), from an election snapshot. */
import type { ClusterView } from './api.js';
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

/** A standalone node's snapshot: leader of one in term 0. */
export function standaloneSnapshot(serverId: string, wsUrl: string): ElectionSnapshot {
  return { role: 'leader', term: 0, leaderId: serverId, leaderUrl: wsUrl, knownMemberCount: 1, reachableMemberCount: 1, quorumSize: 1, hasQuorum: true };
}
