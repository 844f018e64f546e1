/** `GET /mdp/meta` (SPEC §9): the metadata document, with the cluster's live view. */
import type { IncomingMessage } from 'node:http';
import { buildMetaDocument, metaEndpoints } from '@mdp/protocol';
import type { ServerContext, ServerFeature } from '../feature.js';
import { readerAuthority } from '../urls.js';
import type { BusFeature } from './bus.js';
import type { ClusterFeature } from './cluster.js';

/**
 * In bus mode (`bus`, SPEC §16) the document keeps the seed's schema, its cluster object says each
 * node is its own leader of a fleet (`membershipFingerprint` `nats-bus:<prefix>`), and a `fleet`
 * object beside the seed's fields names the bus.
 */
export function metaFeature(ctx: ServerContext, cluster: ClusterFeature, bindHost: string, bus?: BusFeature): ServerFeature {
  return {
    name: 'meta',
    routes(app) {
      app.get('/mdp/meta', (c) => {
        const info = ctx.info();
        if (!info) return c.json({ error: 'Server is not listening' }, 503);
        // Asked on a second port (the default one, served while leading), the document still names
        // this server's own endpoints: discovery then sees this server, not another at that address.
        const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
        const endpoints = metaEndpoints(readerAuthority(bindHost, info.port, c.req.header('host'), incoming?.socket.localPort), info.secure);
        const view = cluster.view(info);
        const document = buildMetaDocument(info.serverId, endpoints, bus ? bus.view(view) : view, cluster.features());
        const fleet = bus?.summary();
        return c.json(fleet ? { ...document, fleet } : document);
      });
      app.all('/mdp/meta', (c) => c.body(null, 405, { allow: 'GET, OPTIONS' }));
    },
  };
}
