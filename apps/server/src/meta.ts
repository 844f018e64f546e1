/** The server's /mdp/meta: the protocol's builders over this server's advertised URLs. */
import { buildMetaDocument as build, type ClusterView, type FeaturesView, type MetaDocument } from '@mdp/protocol';
import type { ServerUrls } from './urls.js';

export { standaloneClusterView as standaloneCluster } from '@mdp/protocol';
export type { ClusterView, FeaturesView } from '@mdp/protocol';

export function buildMetaDocument(serverId: string, urls: ServerUrls, cluster: ClusterView, features: FeaturesView): MetaDocument {
  const { http: _http, ...endpoints } = urls;
  return build(serverId, endpoints, cluster, features);
}
