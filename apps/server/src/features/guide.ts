/**
 * `GET /SKILL.md` (SPEC §14): the server's guide for agents that only have HTTP (guide.ts has the
 * text), answered on node's request. The same text is the MCP resource `mdp:///SKILL.md`: the MCP
 * feature hands the bridge `GuideSource.text`.
 *
 * It follows the host API's rules (guarded-routes.ts): other sites' pages and rebound DNS names get
 * 403, and under an auth policy a request without an accepted credential gets 401. It lists no
 * client data beyond counts, but it names a connected client and one of its skills, and the counts
 * say what runs on this machine: what `/mdp/clients` shows only to those who may see it. An agent
 * without the credential could use none of the URLs it names anyway.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientsSeenBy, originProblem, type Viewer } from '@mdp/core';
import { isSkillPath, proxyMarker } from '@mdp/protocol';
import { SERVER_GUIDE_URI } from '@mdp/mcp-bridge/lite';
import type { ServerContext, ServerFeature } from '../feature.js';
import { GUIDE_PATH, guideText, type GuideFacts } from '../guide.js';
import { MCP_PATH } from './mcp-http.js';
import { readerAuthority, serverUrls } from '../urls.js';
import type { ClusterFeature } from './cluster.js';

const ALLOW = 'GET, HEAD, OPTIONS';
const MARKDOWN = 'text/markdown; charset=utf-8';

export interface GuideSource {
  /**
   * The guide as a reader reaches the server: with the `Host` it sent and the local port it came in
   * on (the URLs of `/mdp/meta`'s rule), or, without them, the listening URLs; of the clients
   * `viewer` sees (every one without a viewer). Empty before listening.
   */
  text(hostHeader?: string, localPort?: number, viewer?: Viewer): string;
}

export interface GuideOptions {
  readonly cluster: ClusterFeature;
  /** The address the server binds (wildcard binds name the host the reader used). */
  readonly bindHost: string;
  /** Whether `/mcp` is served. */
  readonly mcpHttp: boolean;
  /** The cluster's server ids (a mirror's bare id may be a shared one under them). */
  readonly isServerId: (id: string) => boolean;
}

/**
 * What the guide says of the connected clients `viewer` sees (under tenancy by principal its own and
 * the shared ones, SPEC §12.7): counts, and the shallowest static skill as an example.
 */
function clientFacts(
  ctx: ServerContext,
  viewer: Viewer | undefined,
  isServerId: (id: string) => boolean,
): Pick<GuideFacts, 'clients' | 'mirrored' | 'paths' | 'example'> {
  let paths = 0;
  let mirrored = 0;
  let example: { clientId: string; path: string; depth: number } | undefined;
  const seen = clientsSeenBy(ctx.tenancy, viewer, isServerId);
  const all = ctx.router.listClients();
  const clients = seen ? all.filter(seen) : all;
  for (const client of clients) {
    paths += client.paths.length;
    if (proxyMarker(client.descriptor)) mirrored++;
    // The first client's shallowest skill without parameters; a depth of 2 (`/docs/skill.md`) or less cannot be beaten.
    if (example && example.depth <= 2) continue;
    for (const descriptor of client.paths) {
      if (descriptor.type !== 'skill' || !isSkillPath(descriptor.path) || descriptor.path.includes('/:')) continue;
      const depth = descriptor.path.split('/').length - 1;
      if (!example || depth < example.depth) example = { clientId: client.id, path: descriptor.path, depth };
    }
  }
  return { clients: clients.length, mirrored, paths, example: example && { clientId: example.clientId, path: example.path } };
}

export function guideSource(ctx: ServerContext, options: GuideOptions): GuideSource {
  return {
    text(hostHeader, localPort, viewer) {
      const info = ctx.info();
      if (!info) return '';
      const http = serverUrls(readerAuthority(options.bindHost, info.port, hostHeader, localPort), info.secure).http;
      const standalone = (options.cluster.node?.mode ?? 'standalone') === 'standalone';
      return guideText({
        http,
        serverId: info.serverId,
        ...clientFacts(ctx, viewer, options.isServerId),
        cluster: standalone ? undefined : options.cluster.view(info),
        mcp: options.mcpHttp ? `${http}${MCP_PATH}` : undefined,
        mcpResource: SERVER_GUIDE_URI,
        guarded: ctx.authorize !== undefined,
      });
    },
  };
}

function answer(response: ServerResponse, status: number, headers: Record<string, string | number>, body?: string): void {
  response.writeHead(status, body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

const refusal = (code: string, message: string): string => JSON.stringify({ error: { code, message } });

export function guideFeature(ctx: ServerContext, source: GuideSource): ServerFeature {
  const serve = (request: IncomingMessage, response: ServerResponse): void => {
    const problem = originProblem({ host: request.headers.host, origin: request.headers.origin }, ctx.originPolicy);
    if (problem) return answer(response, 403, { 'content-type': 'application/json' }, refusal('forbidden', problem));
    const cors = ctx.guardedCorsFor(request);
    if (request.method !== 'GET' && request.method !== 'HEAD') return answer(response, 405, { ...cors, allow: ALLOW, 'content-length': 0 });
    if (ctx.authorize && !ctx.authorize(ctx.extractAuth(request.headers))) {
      return answer(response, 401, { ...cors, 'content-type': 'application/json', 'www-authenticate': 'Bearer' }, refusal('unauthorized', 'Unauthorized'));
    }
    const text = source.text(request.headers.host, request.socket.localPort, ctx.viewerOf(ctx.extractAuth(request.headers)));
    const headers = { ...cors, 'content-type': MARKDOWN, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) };
    if (request.method === 'HEAD') return answer(response, 200, headers);
    answer(response, 200, headers, text);
  };
  return {
    name: 'guide',
    handle(request, response, url) {
      if (url !== GUIDE_PATH && !url.startsWith(`${GUIDE_PATH}?`)) return false;
      serve(request, response);
      return true;
    },
  };
}
