/** Flags of `mdp-server setup`, parsed and checked. */
import { parseArgs } from 'node:util';
import { HOST_IDS, HOSTS, PROJECT_COMMAND, type HostId, type Scope } from './hosts.js';

/** The MCP endpoint of a server started with default flags (SPEC §13.1: Streamable HTTP at /mcp). */
export const DEFAULT_MCP_URL = 'http://127.0.0.1:47372/mcp';
export const DEFAULT_NAME = 'mdp';

export const SETUP_HELP = `Usage: mdp-server setup [hosts] [options]

Adds this MDP server to your agent hosts' MCP configuration, in each host's own file and format.
Running it again changes nothing; other servers, comments and keys you added are kept, and
--remove gives back the file as it was. A file it cannot parse, or one made read-only, is left
untouched (exit 1).

Hosts, by name or by flag (setup cursor codex, or setup --cursor --codex); none given: every
host found installed, from its command on PATH or its config folder:
  claude-code, --claude-code   Claude Code (through the claude CLI when on PATH, else .claude.json)
  codex, --codex               Codex (~/.codex/config.toml)
  cursor, --cursor             Cursor (~/.cursor/mcp.json)
  vscode, --vscode             VS Code (mcp.json in the user profile)
  windsurf, --windsurf         Windsurf (~/.codeium/windsurf/mcp_config.json; user scope only)
  zed, --zed                   Zed (context_servers in its settings.json)

Options:
  --scope user|project         user (default): your own config, launching this installation by
                               its absolute path; project: the config in the current folder
                               (.mcp.json, .codex/, .cursor/, .vscode/, .zed/) that a team
                               commits, launching '${PROJECT_COMMAND} mcp' from PATH, so it names no
                               path of this machine (install mdp-server on each one)
  --name <name>                the entry's name (default ${DEFAULT_NAME}; letters, digits, - and _)
  --transport stdio|http       stdio (default): the host starts 'mdp-server mcp' itself;
                               http: the host connects to a running server's MCP endpoint
  --url <url>                  the endpoint for --transport http (default ${DEFAULT_MCP_URL});
                               implies --transport http
  --dry-run                    print a unified diff of every file it would change; write nothing
  --remove                     take out the entry named --name (and nothing else)
  -h, --help                   show this help

Exit status: 0 done, 1 a host's config could not be read, parsed or written, 64 usage error or
no host found.`;

export interface SetupRequest {
  /** Hosts named by flags or by name; empty means "every host found installed". */
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
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: true,
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
    }) as { values: Record<string, string | boolean | undefined>; positionals: string[] });
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

  const unknown = positionals.find((word) => !isHostId(word));
  if (unknown !== undefined) return { kind: 'error', message: `unknown host '${unknown}' (hosts: ${HOST_IDS.join(', ')})` };
  const hosts = HOST_IDS.filter((id) => values[id] === true || positionals.includes(id));
  if (scope === 'project') {
    const userOnly = hosts.find((id) => !HOSTS[id].scopes.includes('project'));
    if (userOnly) return { kind: 'error', message: `${HOSTS[userOnly].label} has no project-level MCP config; use --scope user` };
  }
  return {
    kind: 'run',
    request: { hosts, scope, name, transport, url: url ?? DEFAULT_MCP_URL, dryRun: values['dry-run'] === true, remove: values['remove'] === true },
  };
}

function isHostId(word: string): word is HostId {
  return (HOST_IDS as readonly string[]).includes(word);
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
