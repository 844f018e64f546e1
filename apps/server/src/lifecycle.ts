/**
 * The lifecycle of the features (feature.ts) on their listener, the one place its order is carried
 * out:
 *
 *   listen ──▶ every feature's `prepare`, awaited together (one rejects: listen rejects, nothing bound)
 *          ──▶ bind (auto mode: the next free port of the range when an MDP server holds it; its own
 *              port held by a member of its cluster as a second port: asked back, port-claim.ts)
 *          ──▶ the listening line ──▶ each feature's `start`, in list order (one throws: unbound again)
 *          ──▶ every feature's `started`, awaited together (one rejects: closed again, listen rejects)
 *   close ───▶ the listener stops accepting ──▶ each feature's `stopping`, in reverse list order
 *          ──▶ each feature's `close`, in reverse list order, one after the other ──▶ connections end
 *
 * `reloadTls` hands re-read TLS files to the listener.
 */
import type { ListeningInfo, ServerFeature } from './feature.js';
import { portFallbackOf } from './cluster.js';
import type { OwnedContext } from './context.js';
import { bindServing, closeListener, type BindOptions, type Server } from './listener.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './settings/options.js';
import type { ReloadResult, TlsState } from './tls.js';
import { advertisedAuthority, defaultServerId, serverUrls } from './urls.js';

export interface Lifecycle {
  /** Bind and start serving. Rejects (e.g. EADDRINUSE) without leaving anything open. */
  listen(): Promise<ListeningInfo>;
  /** Read the TLS files again; a server without TLS says so. */
  reloadTls(): ReloadResult;
  /** Graceful shutdown. Idempotent. */
  close(): Promise<void>;
}

export function serverLifecycle(
  ctx: OwnedContext,
  server: Server,
  features: readonly ServerFeature[],
  options: Pick<MdpServerOptions, 'port' | 'serverId' | 'cluster'>,
  /** How to get its own port back from a member of its cluster (`portClaimOf`), if it may. */
  claim?: (port: number, serverId: string) => BindOptions['claim'],
): Lifecycle {
  const { bindHost, logger, tls } = ctx;
  const secure = tls !== undefined;

  const start = (port: number): ListeningInfo => {
    const serverId = options.serverId ?? defaultServerId(bindHost, port);
    const info: ListeningInfo = { host: bindHost, port, serverId, secure, urls: serverUrls(advertisedAuthority(bindHost, port, undefined), secure) };
    ctx.setInfo(info);
    server.on('error', (error) => logger.error('http.server_error', { error }));
    logger.info('server.listening', { url: info.urls.http, ws: info.urls.ws, serverId, authPolicy: ctx.guarded, ...(tls ? { tls: tlsSummary(tls) } : {}) });
    try {
      for (const feature of features) feature.start?.(info);
    } catch (error) {
      // Bad options found at start (e.g. a static member list without this server): do not serve half-configured.
      ctx.setInfo(undefined);
      throw error;
    }
    return info;
  };

  let closing: Promise<void> | undefined;
  const lifecycle: Lifecycle = {
    async listen() {
      const port = options.port ?? SERVER_DEFAULTS.port;
      const fallbackPorts = portFallbackOf(options.cluster, port, options.port !== undefined);
      const serverId = options.serverId ?? defaultServerId(bindHost, port);
      await Promise.all(features.map((feature) => feature.prepare?.()));
      const info = await bindServing(
        server,
        { host: bindHost, port, logger, fallbackPorts, secure, claim: port === 0 ? undefined : claim?.(port, serverId) },
        start,
      );
      try {
        await Promise.all(features.map((feature) => feature.started?.()));
      } catch (error) {
        await lifecycle.close();
        ctx.setInfo(undefined);
        throw error;
      }
      return info;
    },
    reloadTls() {
      if (!tls || !('setSecureContext' in server)) return { ok: false, error: 'the server does not use TLS' };
      return tls.reload(server);
    },
    close() {
      closing ??= (async () => {
        const reversed = [...features].reverse();
        await closeListener(server, async () => {
          for (const feature of reversed) feature.stopping?.();
          for (const feature of reversed) await feature.close?.();
        });
        logger.info('server.closed', { serverId: ctx.info()?.serverId });
      })();
      return closing;
    },
  };
  return lifecycle;
}

/** What the listening line says of TLS. */
function tlsSummary(tls: TlsState): Record<string, unknown> {
  const { subject, validTo } = tls.current;
  return { certFile: tls.options.certFile, subject, validTo, peerCertificates: tls.verifiesPeers };
}
