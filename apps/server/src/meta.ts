import { PROTOCOL_NAME, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_RANGES, type MetaDocument } from '@mdp/protocol';
import type { ServerUrls } from './urls.js';

export type ClusterView = MetaDocument['cluster'];
export type FeaturesView = MetaDocument['features'];

/** The cluster view of a server that is on its own: leader of a cluster of one. */
export function standaloneCluster(clusterId: string, serverId: string, leaderUrl: string): ClusterView {
  return {
    id: clusterId,
    membershipMode: 'dynamic',
    membershipFingerprint: 'dynamic',
    role: 'leader',
    term: 0,
    leaderId: serverId,
    leaderUrl,
    leaseDurationMs: 4000,
    knownMemberCount: 1,
    reachableMemberCount: 1,
    quorumSize: 1,
    hasQuorum: true,
  };
}

export function buildMetaDocument(serverId: string, urls: ServerUrls, cluster: ClusterView, features: FeaturesView): MetaDocument {
  return {
    protocol: PROTOCOL_NAME,
    protocolVersion: PROTOCOL_VERSION,
    supportedProtocolRanges: [...SUPPORTED_PROTOCOL_RANGES],
    serverId,
    endpoints: {
      ws: urls.ws,
      httpLoop: urls.httpLoop,
      auth: urls.auth,
      meta: urls.meta,
      cluster: urls.cluster,
    },
    features,
    cluster,
  };
}
