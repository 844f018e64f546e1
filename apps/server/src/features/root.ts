/**
 * `GET /`: where to go from here (issue 22: `/` answered an empty 404). JSON for programs, a short
 * page for a browser (it asks for `text/html`). Links are relative, so they work behind any host.
 * An agent is pointed at `/SKILL.md`, the guide written for it.
 */
import type { ServerContext, ServerFeature } from '../feature.js';
import { GUIDE_PATH } from '../guide.js';

export const PROTOCOL_DOCS_URL = 'https://github.com/modeldriveprotocol/modeldriveprotocol/tree/main/docs';

const LINKS = {
  guide: GUIDE_PATH,
  meta: '/mdp/meta',
  inspector: '/mdp/inspector',
  clients: '/mdp/clients',
  paths: '/mdp/paths',
  health: '/healthz',
  ready: '/readyz',
  metrics: '/metrics',
  docs: PROTOCOL_DOCS_URL,
} as const;

/** Where a skill read's 404 says why: its body is empty, as the MDP seed fixes it (SPEC §8). */
export const SKILL_ROUTES = {
  direct: '/skills/<clientId>/<skillPath>',
  nested: '/<clientId>/skills/<skillPath>',
  notFound: '404 with an empty body; the reason is in the MDP-Error-Code (unknown_client, unknown_path) and MDP-Error response headers',
} as const;

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] as string);

function page(serverId: string): string {
  const item = (href: string, label: string, what: string): string => `<li><a href="${href}">${label}</a> — ${what}</li>`;
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>MDP server ${escapeHtml(serverId)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>MDP server</h1>
<p>Server id <code>${escapeHtml(serverId)}</code>. MDP clients connect over the websocket or the HTTP loop and publish paths; skills are read at <code>/skills/&lt;clientId&gt;/&lt;path&gt;</code>.
A read that finds nothing answers 404 with an empty body; the <code>MDP-Error-Code</code> and <code>MDP-Error</code> response headers say why.</p>
<ul>
${item(LINKS.guide, '/SKILL.md', 'a short guide to this server for agents: what is connected, its URLs, how to read a skill')}
${item(LINKS.inspector, 'Inspector', 'clients and their paths, live; call any path')}
${item(LINKS.meta, '/mdp/meta', 'the metadata document: endpoints and cluster view')}
${item(LINKS.clients, '/mdp/clients', 'registered clients (host API)')}
${item(LINKS.health, '/healthz', 'health')} ${item(LINKS.ready, '/readyz', 'readiness')} ${item(LINKS.metrics, '/metrics', 'Prometheus metrics')}
${item(LINKS.docs, 'Protocol documentation', 'Model Drive Protocol')}
</ul>
</body>
</html>
`;
}

export function rootFeature(ctx: ServerContext): ServerFeature {
  return {
    name: 'root',
    routes(app) {
      app.get('/', (c) => {
        const serverId = ctx.info()?.serverId ?? '';
        if ((c.req.header('accept') ?? '').includes('text/html')) {
          return c.html(page(serverId), 200, { 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'" });
        }
        return c.json({ name: 'mdp-server', serverId, links: LINKS, skillRoutes: SKILL_ROUTES });
      });
      app.all('/', (c) => c.json({ error: { code: 'bad_request', message: `${c.req.method} is not allowed on /` } }, 405, { allow: 'GET, HEAD, OPTIONS' }));
    },
  };
}
