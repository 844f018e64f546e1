export {
  InvalidTargetError,
  PROBE_DEFAULTS,
  metaUrlOf,
  normalizeTarget,
  probeMeta,
  scanRange,
} from './meta-probe.js';
export type { BaseScheme, ProbeFailureKind, ProbeOptions, ProbeResult, ScanOptions } from './meta-probe.js';
export type { PeerTls, PeerTlsSource } from './tls.js';
export { createClusterNode } from './node.js';
export type { ClusterFeatures, ClusterNode, ClusterSelf, ClusterView, LeaderChange } from './api.js';
export type { ClusterConfigError } from './admission.js';
export { CLUSTER_DEFAULTS, CLUSTER_MODES } from './options.js';
export type { ClusterMode, ClusterNodeOptions } from './options.js';
export { DISCOVERY_DEFAULTS } from './discovery.js';
export type { DiscoveryOptions } from './discovery.js';
export { membershipFingerprint } from './membership.js';
export type { Membership } from './membership.js';
export type { ProxyStatus } from './proxy.js';
export { MIRROR_PROOF_HEADER } from './mirror-proof.js';
export type { MirrorPeer } from './mirror-proof.js';
export { mirroredId, proxyMarker } from '@mdp/protocol';
export type { MdpProxyMetadata } from '@mdp/protocol';
export { upstreamAccepts } from './version.js';
export { quorumSize } from './election.js';
export type { Role } from './election.js';
export { systemClock } from './clock.js';
export type { Clock } from './clock.js';
