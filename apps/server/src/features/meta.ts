/** `GET /mdp/meta` (SPEC §9): the metadata document, with the cluster's live view. */
import type { IncomingMessage } from 'node:http';
import { buildMetaDocument, metaEndpoints } from '@mdp/protocol';
import type { ServerContext, ServerFeature } from '../feature.js';
import { readerAuthority } from '../urls.js';
import type { ClusterFeature } from './cluster.js';

export function metaFeature(ctx: ServerContext, cluster: ClusterFeature, bindHost: string): ServerFeature {
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
        return c.json(buildMetaDocument(info.serverId, endpoints, cluster.view(info), cluster.features()));
      });
      app.all('/mdp/meta', (c) => c.body(null, 405, { allow: 'GET, OPTIONS' }));
    },
  };
}
