/**
 * Clients coming and going, at info (issue 22: at the default level nothing said a client had
 * registered): `client.join`, `client.update` and `client.leave` with id, transport and path count.
 */
import type { ServerContext, ServerFeature } from '../feature.js';

export function clientLogFeature(ctx: ServerContext): ServerFeature {
  // What a leaving client had: the router's event names only its id.
  const known = new Map<string, { transport: string; paths: number }>();
  const unsubscribe = ctx.router.onClientEvent((event) => {
    if (event.type === 'unregistered') {
      const last = known.get(event.clientId);
      known.delete(event.clientId);
      ctx.logger.info('client.leave', { clientId: event.clientId, transport: last?.transport, paths: last?.paths });
      return;
    }
    const { client } = event;
    const fields = { clientId: client.id, transport: client.transportKind, paths: client.paths.length };
    known.set(client.id, { transport: fields.transport, paths: fields.paths });
    ctx.logger.info(event.type === 'registered' ? 'client.join' : 'client.update', fields);
  });
  return {
    name: 'client-log',
    close: () => {
      unsubscribe();
      known.clear();
    },
  };
}
