/**
 * The agent hosts `mdp-server setup` knows: where each keeps its MCP servers, in which format,
 * under which key, and what an entry launching this installation looks like there.
 *
 * Every location and key below comes from the host's own current documentation (URL beside it).
 * Paths are computed from the environment handed in, never from the process, so tests can point
 * every host at a temporary HOME and project folder.
 */
import { join } from 'node:path';

export const HOST_IDS = ['claude-code', 'codex', 'cursor', 'vscode', 'windsurf', 'zed'] as const;
export type HostId = (typeof HOST_IDS)[number];
export type Scope = 'user' | 'project';

/**
 * What a project-scope entry launches over stdio: the `bin` of the `@mdp/server` package, found on
 * PATH. A project's config is committed and read on every teammate's machine, so it names no path
 * of this one (node binary, checkout); the package runner form (`npx -y @mdp/server mcp`) would
 * fetch and run whatever the registry serves under that name at every start, and `@mdp/server` is
 * not published there (README, "Project scope").
 */
export const PROJECT_COMMAND = 'mdp-server';

/** What the entry starts: this installation over stdio, or a running server's MCP endpoint. */
export type Launch =
  | { readonly transport: 'stdio'; readonly command: string; readonly args: readonly string[] }
  | { readonly transport: 'http'; readonly url: string };

/** The environment setup works in, passed explicitly (tests use temporary folders). */
export interface SetupPlace {
  readonly home: string;
  readonly cwd: string;
  readonly platform: NodeJS.Platform;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export type ConfigFormat = 'json' | 'jsonc' | 'toml';

export interface HostSpec {
  readonly id: HostId;
  readonly label: string;
  /** Where the host documents its MCP configuration. */
  readonly docs: string;
  readonly format: ConfigFormat;
  /** The table/object that maps server names to entries. */
  readonly key: string;
  /** The scopes the host has a config file for (Windsurf has no project-level one). */
  readonly scopes: readonly Scope[];
  /** The config file for one of `scopes`. */
  file(scope: Scope, place: SetupPlace): string;
  /** Our entry: only the keys in `owned`; keys the user adds beside them are left alone. */
  entry(launch: Launch): Record<string, unknown>;
  /** Keys setup manages in its entry: set when the launch needs them, removed when it does not. */
  readonly owned: readonly string[];
  /** Executables whose presence on PATH means the host is installed. */
  readonly commands: readonly string[];
  /** Files or folders whose presence means the host is installed (or has been run). */
  markers(place: SetupPlace): string[];
}

const configHome = (p: SetupPlace): string => p.env['XDG_CONFIG_HOME'] || join(p.home, '.config');
const appData = (p: SetupPlace): string => p.env['APPDATA'] || join(p.home, 'AppData', 'Roaming');

function vscodeUserDir(p: SetupPlace): string {
  if (p.platform === 'darwin') return join(p.home, 'Library', 'Application Support', 'Code', 'User');
  if (p.platform === 'win32') return join(appData(p), 'Code', 'User');
  return join(configHome(p), 'Code', 'User');
}

function zedConfigDir(p: SetupPlace): string {
  if (p.platform === 'win32') return join(appData(p), 'Zed');
  if (p.platform === 'darwin') return join(p.home, '.config', 'zed');
  return join(configHome(p), 'zed');
}

const codexHome = (p: SetupPlace): string => p.env['CODEX_HOME'] || join(p.home, '.codex');
const claudeUserFile = (p: SetupPlace): string => join(p.env['CLAUDE_CONFIG_DIR'] || p.home, '.claude.json');

/** `command` + `args` for stdio, the URL under `urlKey` for http: the shape most hosts use. */
const untyped =
  (urlKey: string) =>
  (l: Launch): Record<string, unknown> =>
    l.transport === 'stdio' ? { command: l.command, args: [...l.args] } : { [urlKey]: l.url };
/** The same with a `type` ("stdio" | "http"), which Claude Code and VS Code want. */
const typed = (l: Launch): Record<string, unknown> => ({ type: l.transport, ...untyped('url')(l) });

export const HOSTS: Readonly<Record<HostId, HostSpec>> = {
  // https://code.claude.com/docs/en/mcp — `claude mcp add|add-json|remove --scope user|project`;
  // user scope lives in ~/.claude.json (top-level `mcpServers`; $CLAUDE_CONFIG_DIR moves the
  // file), project scope in `.mcp.json` at the project root. Entries carry `type` ("stdio" |
  // "http"). Setup prefers the `claude` CLI and edits the file itself only when `claude` is not on
  // PATH.
  'claude-code': {
    id: 'claude-code',
    label: 'Claude Code',
    docs: 'https://code.claude.com/docs/en/mcp',
    format: 'json',
    key: 'mcpServers',
    scopes: ['user', 'project'],
    file: (scope, p) => (scope === 'user' ? claudeUserFile(p) : join(p.cwd, '.mcp.json')),
    entry: typed,
    owned: ['type', 'command', 'args', 'url'],
    commands: ['claude'],
    markers: (p) => [claudeUserFile(p), join(p.home, '.claude')],
  },
  // https://developers.openai.com/codex/mcp and https://developers.openai.com/codex/config-basic —
  // `[mcp_servers.<name>]` tables in ~/.codex/config.toml ($CODEX_HOME moves it), or in
  // `.codex/config.toml` of a (trusted) project; `command` + `args` for stdio, `url` for
  // Streamable HTTP.
  codex: {
    id: 'codex',
    label: 'Codex',
    docs: 'https://developers.openai.com/codex/mcp',
    format: 'toml',
    key: 'mcp_servers',
    scopes: ['user', 'project'],
    file: (scope, p) => (scope === 'user' ? join(codexHome(p), 'config.toml') : join(p.cwd, '.codex', 'config.toml')),
    entry: untyped('url'),
    owned: ['command', 'args', 'url'],
    commands: ['codex'],
    markers: (p) => [codexHome(p)],
  },
  // https://cursor.com/docs/mcp — `mcpServers` in ~/.cursor/mcp.json (global) or `.cursor/mcp.json`
  // in the project; `command` + `args` for stdio, `url` for a remote server.
  cursor: {
    id: 'cursor',
    label: 'Cursor',
    docs: 'https://cursor.com/docs/mcp',
    format: 'jsonc',
    key: 'mcpServers',
    scopes: ['user', 'project'],
    file: (scope, p) => join(scope === 'user' ? p.home : p.cwd, '.cursor', 'mcp.json'),
    entry: untyped('url'),
    owned: ['command', 'args', 'url'],
    commands: ['cursor'],
    markers: (p) => [join(p.home, '.cursor')],
  },
  // https://code.visualstudio.com/docs/copilot/reference/mcp-configuration — `servers` with a
  // required `type` in `mcp.json` of the user profile (…/Code/User/mcp.json, beside settings.json)
  // or in the workspace's `.vscode/mcp.json`; JSON with comments.
  vscode: {
    id: 'vscode',
    label: 'VS Code',
    docs: 'https://code.visualstudio.com/docs/copilot/reference/mcp-configuration',
    format: 'jsonc',
    key: 'servers',
    scopes: ['user', 'project'],
    file: (scope, p) => (scope === 'user' ? join(vscodeUserDir(p), 'mcp.json') : join(p.cwd, '.vscode', 'mcp.json')),
    entry: typed,
    owned: ['type', 'command', 'args', 'url'],
    commands: ['code'],
    markers: (p) => [vscodeUserDir(p)],
  },
  // https://docs.windsurf.com/windsurf/cascade/mcp — `mcpServers` in
  // ~/.codeium/windsurf/mcp_config.json (no project-level file); remote servers use `serverUrl`.
  windsurf: {
    id: 'windsurf',
    label: 'Windsurf',
    docs: 'https://docs.windsurf.com/windsurf/cascade/mcp',
    format: 'jsonc',
    key: 'mcpServers',
    scopes: ['user'],
    file: (_scope, p) => join(p.home, '.codeium', 'windsurf', 'mcp_config.json'),
    entry: untyped('serverUrl'),
    owned: ['command', 'args', 'serverUrl'],
    commands: ['windsurf'],
    markers: (p) => [join(p.home, '.codeium', 'windsurf')],
  },
  // https://zed.dev/docs/ai/mcp and https://zed.dev/docs/configuring-zed — `context_servers` in the
  // settings file (~/.config/zed/settings.json, %APPDATA%\Zed on Windows) or the project's
  // `.zed/settings.json`; `command` + `args` for stdio, `url` for a remote server; JSON with
  // comments and trailing commas.
  zed: {
    id: 'zed',
    label: 'Zed',
    docs: 'https://zed.dev/docs/ai/mcp',
    format: 'jsonc',
    key: 'context_servers',
    scopes: ['user', 'project'],
    file: (scope, p) => (scope === 'user' ? join(zedConfigDir(p), 'settings.json') : join(p.cwd, '.zed', 'settings.json')),
    entry: untyped('url'),
    owned: ['command', 'args', 'url'],
    commands: ['zed', 'zeditor'],
    markers: (p) => [zedConfigDir(p)],
  },
};
