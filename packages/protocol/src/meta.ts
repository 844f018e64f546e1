/** Building metadata documents (SPEC §9). Pure: servers, probes and tests share one shape. */
import { PROTOCOL_NAME, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_RANGES } from './version.js';
import type { MetaDocument } from './schemas.js';

export type MetaEndpoints = MetaDocument['endpoints'];
export type ClusterView = MetaDocument['cluster'];
export type FeaturesView = MetaDocument['features'];

/**
 * The endpoint URLs of a server reachable at `authority` (`host:port`, IPv6 hosts bracketed);
 * `https`/`wss` ones when it serves TLS (`secure`).
 */
export function metaEndpoints(authority: string, secure = false): MetaEndpoints {
  const http = `${secure ? 'https' : 'http'}://${authority}`;
  const ws = `${secure ? 'wss' : 'ws'}://${authority}`;
  return {
    ws,
    httpLoop: `${http}/mdp/http-loop`,
    auth: `${http}/mdp/auth`,
    meta: `${http}/mdp/meta`,
    cluster: `${ws}/mdp/cluster`,
  };
}

/**
 * The cluster view of a server that is on its own: leader of a cluster of one, term 0. The lease
 * is the one it would give followers (the cluster's option; `@mdp/cluster` holds its default).
 */
export function standaloneClusterView(clusterId: string, serverId: string, leaderUrl: string, leaseDurationMs: number): ClusterView {
  return {
    id: clusterId,
    membershipMode: 'dynamic',
    membershipFingerprint: 'dynamic',
    role: 'leader',
    term: 0,
    leaderId: serverId,
    leaderUrl,
    leaseDurationMs,
    knownMemberCount: 1,
    reachableMemberCount: 1,
    quorumSize: 1,
    hasQuorum: true,
  };
}

export function buildMetaDocument(serverId: string, endpoints: MetaEndpoints, cluster: ClusterView, features: FeaturesView): MetaDocument {
  return {
    protocol: PROTOCOL_NAME,
    protocolVersion: PROTOCOL_VERSION,
    supportedProtocolRanges: [...SUPPORTED_PROTOCOL_RANGES],
    serverId,
    endpoints,
    features,
    cluster,
  };
}
