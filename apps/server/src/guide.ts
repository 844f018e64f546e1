/**
 * The server's guide for agents that only have HTTP (SPEC §14): a short Markdown text served at
 * `GET /SKILL.md` (where the reference server serves its own) and, the same text, as the MCP
 * resource `mdp:///SKILL.md`. Pure: the facts come in, the text goes out; `features/guide.ts` gathers
 * the facts and serves it, the MCP bridge is handed a function that does both.
 *
 * What a client publishes (descriptions, names) never appears here: those are the apps' words, and
 * this text speaks for the server. Only counts, this server's URLs and, as an example, one client id
 * and skill path, both inside a URL (the id percent-encoded, the path within the path grammar).
 */
import type { ClusterView } from '@mdp/protocol';

/** Where the guide is served. Not a skill route: those are `/skills/…` and `/<clientId>/skills/…`. */
export const GUIDE_PATH = '/SKILL.md';

/** Client ids the nested skill route never takes (`@mdp/skills-gateway`): such a client has only the direct form. */
const NOT_NESTED = new Set(['mdp', 'skills']);

export interface GuideFacts {
  /** HTTP base URL of the server as the reader reaches it, no trailing slash (`http://127.0.0.1:47372`). */
  readonly http: string;
  readonly serverId: string;
  /** Clients registered on this node, mirrors of other members' clients included. */
  readonly clients: number;
  /** Of those, the mirrors of other members' clients. */
  readonly mirrored: number;
  /** Paths those clients publish. */
  readonly paths: number;
  /** This node's cluster view; `undefined` when it runs alone (standalone). */
  readonly cluster: Pick<ClusterView, 'role' | 'leaderId'> | undefined;
  /** A skill of a connected client to show; `undefined` when no client publishes one without parameters. */
  readonly example: { readonly clientId: string; readonly path: string } | undefined;
  /** The URL of the MCP endpoint; `undefined` when the server does not serve MCP over HTTP. */
  readonly mcp: string | undefined;
  /** URI of the MCP resource that holds this text. */
  readonly mcpResource: string;
  /** An auth policy guards the server: every route below needs a credential. */
  readonly guarded: boolean;
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

function connected(f: GuideFacts): string[] {
  const lines = [
    f.clients === 0
      ? 'No client is connected right now. Ask again later, or list the clients (below) when you expect one.'
      : `${plural(f.clients, 'client')} connected here, publishing ${plural(f.paths, 'path')} in all.`,
  ];
  if (f.cluster?.role === 'leader' && f.mirrored > 0) {
    lines.push(
      `This node leads its cluster: ${plural(f.mirrored, 'client is', 'clients are')} mirrored here from other members (as \`<serverId>.<clientId>\`).`,
    );
  } else if (f.cluster && f.cluster.role !== 'leader') {
    const leader = f.cluster.leaderId === '' ? 'no leader is known yet' : `the leader is \`${f.cluster.leaderId}\``;
    lines.push(
      `This node is a ${f.cluster.role} in a cluster (${leader}): these counts are its own clients; the host API answers for every client of the cluster.`,
    );
  }
  return lines;
}

function skillExample(f: GuideFacts): string[] {
  if (!f.example) return [];
  const id = encodeURIComponent(f.example.clientId);
  const forms = [`${f.http}/skills/${id}${f.example.path}`, ...(NOT_NESTED.has(f.example.clientId) ? [] : [`${f.http}/${id}/skills${f.example.path}`])];
  return ['', 'A connected client publishes this one, for example:', '', ...forms.map((url) => `- \`GET ${url}\``)];
}

/** The guide's Markdown. */
export function guideText(f: GuideFacts): string {
  const u = f.http;
  const lines = [
    `# MDP server ${f.serverId}`,
    '',
    'This is an MDP (Model Drive Protocol) server. Apps, web pages and tools connect to it as MDP clients and publish paths:',
    'skills (Markdown that explains the client and what it can do: read these first), prompts, and endpoints (an HTTP-like',
    'method and path). With plain HTTP you can list the clients, read their skills and call any of their paths. Every URL',
    "below is this server's.",
    ...(f.guarded ? ['', 'This server requires a credential: send `Authorization: Bearer <token>` with every request below.'] : []),
    '',
    '## Connected now',
    '',
    ...connected(f),
    '',
    '## Host API (JSON)',
    '',
    `- \`GET ${u}/mdp/clients\`: the clients and their paths (\`?search=<text>\` filters).`,
    `- \`GET ${u}/mdp/paths?clientId=<id>\`: the paths of one client (of all without \`clientId\`); only the first level`,
    '  unless you add `search=<text>` or `depth=<n>`.',
    '- Both list a page at a time (100 by default, `limit=<n>` up to 1000). While there is more, the answer has a',
    '  `nextCursor`: ask again with `cursor=<nextCursor>` until it has none (a page may hold fewer items, even none).',
    `- \`POST ${u}/mdp/call\` with \`{"clientId": "<id>", "method": "GET", "path": "/docs/skill.md", "query": {}, "body": {}}\`:`,
    '  call one path; the answer is `{"ok": true, "data": ...}`.',
    `- \`POST ${u}/mdp/call-many\` with \`{"method": "GET", "path": "/docs/skill.md"}\` (add \`"clientIds": [...]\` to choose):`,
    '  the same path on every client that has it.',
    '',
    'POST bodies are JSON, sent with `Content-Type: application/json`. Errors are `{"error": {"code": ..., "message": ...}}`',
    'with 400 (the message names the bad field), 401 (a credential is needed), 404 (no such client or path), 502 (the client',
    'answered with an error or went away) or 504 (no answer in time).',
    '',
    '## Reading a skill',
    '',
    'A skill lives at a path that ends in `skill.md`, `SKILL.md` or `.skill.md`. Read it with a GET at either route:',
    '',
    `- \`GET ${u}/skills/<clientId>/<path>\``,
    `- \`GET ${u}/<clientId>/skills/<path>\``,
    '',
    'The client id is percent-encoded. The final `skill.md` may be left out (`/skills/<clientId>/docs` reads',
    '`/docs/skill.md`), and query parameters are passed on to the client.',
    ...skillExample(f),
    '',
    '## When a read fails',
    '',
    '- 404 with an empty body: no such client, or no such skill on it. The reason is in the response headers',
    '  `MDP-Error-Code` (`unknown_client` or `unknown_path`) and `MDP-Error` (one sentence). List the clients and their',
    '  paths to see what is there.',
    '- 400 `{"error": "..."}`: a malformed path. 502 `{"error": ...}`: the client failed or went away. 504: it did not',
    '  answer in time. 405: skill routes take only GET (and OPTIONS).',
    '',
    '## MCP',
    '',
    ...(f.mcp
      ? [
          `Agents that speak MCP use \`${f.mcp}\` (Streamable HTTP): the tools \`listClients\`, \`listPaths\`, \`callPath\` and`,
          `\`callPaths\`, and every skill as a resource. This guide is the resource \`${f.mcpResource}\` there.`,
        ]
      : ['This server does not serve MCP over HTTP.']),
    '',
    '## More',
    '',
    `- \`GET ${u}/mdp/meta\`: protocol version, endpoints (the MDP websocket for clients) and the cluster view.`,
    `- \`${u}/mdp/inspector\`: a web page that lists the clients and their paths and calls them.`,
    '',
  ];
  return lines.join('\n');
}
