/** Flags of `mdp-server setup`, parsed and checked. */
import { parseArgs } from 'node:util';
import { HOST_IDS, HOSTS, type HostId, type Scope } from './hosts.js';

/** The MCP endpoint of a server started with default flags (SPEC: Streamable HTTP at /mcp). */
export const DEFAULT_MCP_URL = 'http://127.0.0.1:47372/mcp';
export const DEFAULT_NAME = 'mdp';

export const SETUP_HELP = `Usage: mdp-server setup [hosts] [options]

Adds this MDP server to your agent hosts' MCP configuration, in each host's own file and format,
launching this installation by its absolute path. Running it again changes nothing; other servers,
comments and keys you added are kept. A file it cannot parse is left untouched (exit 1).

Hosts (none given: every host found installed, from its command on PATH or its config folder):
  --claude-code              Claude Code (through the claude CLI when on PATH, else its JSON file)
  --codex                    Codex (~/.codex/config.toml)
  --cursor                   Cursor (~/.cursor/mcp.json)
  --vscode                   VS Code (mcp.json in the user profile)
  --windsurf                 Windsurf (~/.codeium/windsurf/mcp_config.json; user scope only)
  --zed                      Zed (context_servers in its settings.json)

Options:
  --scope user|project       user: your own config (default); project: the config in the current
                             folder (.mcp.json, .codex/, .cursor/, .vscode/, .zed/)
  --name <name>              the entry's name (default ${DEFAULT_NAME}; letters, digits, - and _)
  --transport stdio|http     stdio (default): the host starts 'mdp-server mcp' itself;
                             http: the host connects to a running server's MCP endpoint
  --url <url>                the endpoint for --transport http (default ${DEFAULT_MCP_URL});
                             implies --transport http
  --dry-run                  print a unified diff of every file it would change; write nothing
  --remove                   take out the entry named --name (and nothing else)
  -h, --help                 show this help

Exit status: 0 done, 1 a host's config could not be read, parsed or written, 64 usage error or
no host found.`;

export interface SetupRequest {
  /** Hosts named by flags; empty means "every host found installed". */
  readonly hosts: readonly HostId[];
  readonly scope: Scope;
  readonly name: string;
  readonly transport: 'stdio' | 'http';
  readonly url: string;
  readonly dryRun: boolean;
  readonly remove: boolean;
}

export type SetupCommand =
  | { readonly kind: 'help' }
  | { readonly kind: 'error'; readonly message: string }
  | { readonly kind: 'run'; readonly request: SetupRequest };

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function parseSetupArgs(argv: readonly string[]): SetupCommand {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        ...Object.fromEntries(HOST_IDS.map((id) => [id, { type: 'boolean' as const }])),
        scope: { type: 'string' },
        name: { type: 'string' },
        transport: { type: 'string' },
        url: { type: 'string' },
        'dry-run': { type: 'boolean' },
        remove: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }) as { values: Record<string, string | boolean | undefined> });
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
  if (values['help']) return { kind: 'help' };

  const scope = values['scope'] ?? 'user';
  if (scope !== 'user' && scope !== 'project') return { kind: 'error', message: `--scope must be user or project, not '${String(scope)}'` };
  const name = (values['name'] as string | undefined) ?? DEFAULT_NAME;
  if (!NAME.test(name)) return { kind: 'error', message: `--name must be 1 to 64 letters, digits, '-' or '_', not '${name}'` };

  const url = values['url'] as string | undefined;
  const transport = (values['transport'] as string | undefined) ?? (url === undefined ? 'stdio' : 'http');
  if (transport !== 'stdio' && transport !== 'http') return { kind: 'error', message: `--transport must be stdio or http, not '${transport}'` };
  if (url !== undefined && transport === 'stdio') return { kind: 'error', message: '--url needs --transport http (stdio launches this installation)' };
  if (url !== undefined && !isHttpUrl(url)) return { kind: 'error', message: `--url must be an http:// or https:// URL, not '${url}'` };

  const hosts = HOST_IDS.filter((id) => values[id] === true);
  if (scope === 'project') {
    const userOnly = hosts.find((id) => !HOSTS[id].scopes.includes('project'));
    if (userOnly) return { kind: 'error', message: `${HOSTS[userOnly].label} has no project-level MCP config; use --scope user` };
  }
  return {
    kind: 'run',
    request: { hosts, scope, name, transport, url: url ?? DEFAULT_MCP_URL, dryRun: values['dry-run'] === true, remove: values['remove'] === true },
  };
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
