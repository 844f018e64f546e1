/**
 * `mdp-server setup` against a temporary HOME and project folder, for every host: the real files,
 * the real atomic writes, and (for Claude Code) a fake `claude` placed first on a temporary PATH.
 * Nothing here reads or writes the real HOME: the environment is passed in explicitly.
 */
import { execFileSync } from 'node:child_process';
import { chmod, link, lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseToml } from '@decimalturn/toml-patch';
import { parse as parseJsonc } from 'jsonc-parser';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CONFIG_BYTES } from '../src/setup/fs-io.js';
import { runSetup, type SetupContext } from '../src/setup/run.js';
import { HOSTS, PROJECT_COMMAND, type HostId } from '../src/setup/hosts.js';
import { planConfig } from '../src/setup/plan.js';

const NODE = '/opt/node/bin/node';
const CLI = '/opt/mdp/apps/server/dist/cli.js';
const roots: string[] = [];

afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

interface World {
  root: string;
  home: string;
  project: string;
  /** First (and by default only) folder on PATH. */
  bin: string;
}

async function world(): Promise<World> {
  const root = await mkdtemp(join(tmpdir(), 'mdp-setup-'));
  roots.push(root);
  const w = { root, home: join(root, 'home'), project: join(root, 'project'), bin: join(root, 'bin') };
  await Promise.all([mkdir(w.home), mkdir(w.project), mkdir(w.bin)]);
  return w;
}

interface Run {
  code: number;
  out: string;
  err: string;
}

async function setup(w: World, argv: string[], options: { env?: Record<string, string>; cli?: string } = {}): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: SetupContext = {
    place: { home: w.home, cwd: w.project, platform: 'linux', env: { HOME: w.home, PATH: w.bin, ...options.env } },
    install: { node: NODE, cli: options.cli ?? CLI },
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  };
  const code = await runSetup(argv, ctx);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const readText = (file: string): Promise<string> => readFile(file, 'utf8');
const missing = (file: string): Promise<boolean> =>
  stat(file).then(
    () => false,
    () => true,
  );

async function put(file: string, text: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, text);
}

/** Every host, with its documented files and a realistic file of the user's own. */
interface HostCase {
  id: HostId;
  flag: string;
  user: (w: World) => string;
  project?: (w: World) => string;
  key: string;
  parse: (text: string) => Record<string, unknown>;
  entry: Record<string, unknown>;
  /** The entry in project scope: `mdp-server` from PATH, no path of this machine. */
  projectEntry: Record<string, unknown>;
  /**
   * A file the user wrote, with a server of their own and a key or table after the servers
   * (with comments above them where the format has comments).
   */
  own: string;
  ownServer: Record<string, unknown>;
  /** A file of the user's with no servers object/table at all. */
  bare: string;
  /** Text each host's parser refuses, with the line it should name. */
  broken: string;
  brokenLine: number;
}

const strictJson = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>;
const jsonc = (text: string): Record<string, unknown> => parseJsonc(text) as Record<string, unknown>;
const toml = (text: string): Record<string, unknown> => parseToml(text) as Record<string, unknown>;

const JSONC_OWN = (key: string): string => `{
  // the servers I use every day
  "${key}": {
    "docs": { "command": "npx", "args": ["-y", "docs-server"] }, // documentation
  },
  // how it looks
  "theme": "dark",
}
`;
const JSONC_BARE = '{\n  // how it looks\n  "theme": "dark",\n  // bigger\n  "ui_font_size": 16,\n}\n';
const JSON_BROKEN = '{\n  "theme": "dark"\n  "mcpServers": {}\n}\n';

/** The four JSONC hosts differ only in their files, their key and their entry. */
function jsoncCase(id: HostId, user: HostCase['user'], project: HostCase['project'], key: string, typed: boolean): HostCase {
  const type = typed ? { type: 'stdio' } : {};
  return {
    id,
    flag: `--${id}`,
    user,
    ...(project ? { project } : {}),
    key,
    parse: jsonc,
    entry: { ...type, command: NODE, args: [CLI, 'mcp'] },
    projectEntry: { ...type, command: 'mdp-server', args: ['mcp'] },
    own: JSONC_OWN(key),
    ownServer: { command: 'npx', args: ['-y', 'docs-server'] },
    bare: JSONC_BARE,
    broken: JSON_BROKEN,
    brokenLine: 3,
  };
}

const CASES: HostCase[] = [
  {
    id: 'claude-code',
    flag: '--claude-code',
    user: (w) => join(w.home, '.claude.json'),
    project: (w) => join(w.project, '.mcp.json'),
    key: 'mcpServers',
    parse: strictJson,
    entry: { type: 'stdio', command: NODE, args: [CLI, 'mcp'] },
    projectEntry: { type: 'stdio', command: 'mdp-server', args: ['mcp'] },
    own: '{\n  "numStartups": 12,\n  "mcpServers": {\n    "docs": {\n      "type": "stdio",\n      "command": "npx",\n      "args": ["-y", "docs-server"]\n    }\n  },\n  "theme": "dark"\n}\n',
    ownServer: { type: 'stdio', command: 'npx', args: ['-y', 'docs-server'] },
    bare: '{\n  "numStartups": 12,\n  "theme": "dark"\n}\n',
    broken: JSON_BROKEN,
    brokenLine: 3,
  },
  {
    id: 'codex',
    flag: '--codex',
    user: (w) => join(w.home, '.codex', 'config.toml'),
    project: (w) => join(w.project, '.codex', 'config.toml'),
    key: 'mcp_servers',
    parse: toml,
    entry: { command: NODE, args: [CLI, 'mcp'] },
    projectEntry: { command: 'mdp-server', args: ['mcp'] },
    own: '# written by hand\nmodel = "o3" # the one I like\n\n[mcp_servers.docs]\n# documentation\ncommand = "npx"\nargs = ["-y", "docs-server"]\n\n# Profiles I use\n[profiles.fast]\nmodel = "gpt-5-mini"\n',
    ownServer: { command: 'npx', args: ['-y', 'docs-server'] },
    bare: '# written by hand\nmodel = "o3"\n\n# Profiles I use\n[profiles.fast]\nmodel = "gpt-5-mini"\n',
    broken: 'model = "o3"\n\n[mcp_servers.docs]\ncommand = \n',
    brokenLine: 4,
  },
  jsoncCase(
    'cursor',
    (w) => join(w.home, '.cursor', 'mcp.json'),
    (w) => join(w.project, '.cursor', 'mcp.json'),
    'mcpServers',
    false,
  ),
  jsoncCase(
    'vscode',
    (w) => join(w.home, '.config', 'Code', 'User', 'mcp.json'),
    (w) => join(w.project, '.vscode', 'mcp.json'),
    'servers',
    true,
  ),
  jsoncCase('windsurf', (w) => join(w.home, '.codeium', 'windsurf', 'mcp_config.json'), undefined, 'mcpServers', false),
  jsoncCase(
    'zed',
    (w) => join(w.home, '.config', 'zed', 'settings.json'),
    (w) => join(w.project, '.zed', 'settings.json'),
    'context_servers',
    false,
  ),
];

const servers = (c: HostCase, text: string): Record<string, unknown> => c.parse(text)[c.key] as Record<string, unknown>;

describe.each(CASES)('setup $flag (its file; for Claude Code: no claude on PATH)', (c) => {
  it('first run creates the file, valid in its format, holding our entry', async () => {
    const w = await world();
    const r = await setup(w, [c.flag]);
    expect(r).toMatchObject({ code: 0, err: '' });
    const text = await readText(c.user(w));
    expect(servers(c, text)).toEqual({ mdp: c.entry });
    if (c.parse !== toml) expect(() => JSON.parse(text)).not.toThrow();
    expect(r.out).toContain(`${c.user(w)}: added "mdp"`);
  });

  it('second run changes no byte', async () => {
    const w = await world();
    await setup(w, [c.flag]);
    const first = await readText(c.user(w));
    const before = await stat(c.user(w));
    const r = await setup(w, [c.flag]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('"mdp" already up to date');
    expect(await readText(c.user(w))).toBe(first);
    expect((await stat(c.user(w))).ino).toBe(before.ino);
  });

  it("keeps the user's servers, keys and comments; --remove then gives back their file byte for byte", async () => {
    const w = await world();
    await put(c.user(w), c.own);
    expect((await setup(w, [c.flag])).code).toBe(0);
    const text = await readText(c.user(w));
    for (const line of c.own.split('\n')) expect(text).toContain(line.trim());
    expect(servers(c, text)).toEqual({ docs: c.ownServer, mdp: c.entry });

    const removed = await setup(w, [c.flag, '--remove']);
    expect(removed.code).toBe(0);
    expect(removed.out).toContain('removed "mdp"');
    expect(await readText(c.user(w))).toBe(c.own);
    expect((await setup(w, [c.flag, '--remove'])).out).toContain('no "mdp" entry, nothing to remove');
  });

  it('add then --remove in a file with no servers yet gives back its bytes, comments included', async () => {
    const w = await world();
    await put(c.user(w), c.bare);
    expect((await setup(w, [c.flag])).code).toBe(0);
    expect(servers(c, await readText(c.user(w)))).toEqual({ mdp: c.entry });
    expect((await setup(w, [c.flag, '--remove'])).code).toBe(0);
    expect(await readText(c.user(w))).toBe(c.bare);
  });

  it('reads a file that starts with a byte-order mark, keeps the mark, and --remove gives back its bytes', async () => {
    const w = await world();
    await put(c.user(w), `\uFEFF${c.own}`);
    const r = await setup(w, [c.flag]);
    expect(r).toMatchObject({ code: 0, err: '' });
    const bytes = await readFile(c.user(w));
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(servers(c, bytes.subarray(3).toString('utf8'))).toEqual({ docs: c.ownServer, mdp: c.entry });
    expect((await setup(w, [c.flag])).out).toContain('"mdp" already up to date');
    expect((await setup(w, [c.flag, '--remove'])).code).toBe(0);
    expect(await readText(c.user(w))).toBe(`\uFEFF${c.own}`);
  });

  it('updates an entry of ours that points elsewhere in place, and shows the change', async () => {
    const w = await world();
    await setup(w, [c.flag], { cli: '/old/place/dist/cli.js' });
    const r = await setup(w, [c.flag]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('updated "mdp" (args)');
    expect(r.out).toMatch(/^-.*\/old\/place\/dist\/cli\.js/m);
    expect(r.out).toMatch(/^\+.*\/opt\/mdp\/apps\/server\/dist\/cli\.js/m);
    expect(servers(c, await readText(c.user(w)))).toEqual({ mdp: c.entry });
  });

  it('leaves a file it cannot parse untouched, names it and the line, and exits 1', async () => {
    const w = await world();
    await put(c.user(w), c.broken);
    const r = await setup(w, [c.flag]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`cannot parse ${c.user(w)} at line ${c.brokenLine}`);
    expect(r.err).toContain('left it untouched');
    expect(await readText(c.user(w))).toBe(c.broken);
  });

  it('--dry-run prints a unified diff and writes nothing', async () => {
    const w = await world();
    const fresh = await setup(w, [c.flag, '--dry-run']);
    expect(fresh.code).toBe(0);
    expect(fresh.out).toContain('--- /dev/null');
    expect(fresh.out).toContain(`+++ ${c.user(w)}`);
    expect(fresh.out).toContain('dry run, nothing written');
    expect(await missing(c.user(w))).toBe(true);

    await put(c.user(w), c.own);
    const existing = await setup(w, [c.flag, '--dry-run', '--transport', 'http']);
    expect(existing.out).toContain(`--- ${c.user(w)}`);
    expect(existing.out).toMatch(/^\+.*http:\/\/127\.0\.0\.1:47372\/mcp/m);
    expect(await readText(c.user(w))).toBe(c.own);
  });

  it("keeps the file's mode", async () => {
    const w = await world();
    await put(c.user(w), c.own);
    await chmod(c.user(w), 0o600);
    await setup(w, [c.flag]);
    expect((await stat(c.user(w))).mode & 0o777).toBe(0o600);
    await chmod(c.user(w), 0o640);
    await setup(w, [c.flag, '--remove']);
    expect((await stat(c.user(w))).mode & 0o777).toBe(0o640);
  });

  it.runIf(c.project !== undefined)('--scope project writes the project file and leaves the user file alone', async () => {
    const w = await world();
    const r = await setup(w, [c.flag, '--scope', 'project']);
    expect(r.code).toBe(0);
    expect(servers(c, await readText(c.project!(w)))).toEqual({ mdp: c.projectEntry });
    expect(await missing(c.user(w))).toBe(true);
  });

  it.runIf(c.project !== undefined)('--scope project names no path of this machine: a teammate can use the committed file', async () => {
    const w = await world();
    await put(c.project!(w), c.own);
    expect((await setup(w, [c.flag, '--scope', 'project'])).code).toBe(0);
    const text = await readText(c.project!(w));
    for (const path of [NODE, CLI, w.root, process.execPath]) expect(text).not.toContain(path);
    // No quoted string that starts like an absolute path (POSIX or Windows).
    expect(text).not.toMatch(/["'](\/|[A-Za-z]:\\)/);
    expect(servers(c, text)).toEqual({ docs: c.ownServer, mdp: c.projectEntry });
    await setup(w, [c.flag, '--scope', 'project', '--remove']);
    expect(await readText(c.project!(w))).toBe(c.own);
  });

  it.runIf(c.project !== undefined)('--scope project moves an entry that launched this checkout by path to the name', async () => {
    const w = await world();
    const old = planConfig(HOSTS[c.id], c.own, 'mdp', { transport: 'stdio', command: NODE, args: [CLI, 'mcp'] });
    await put(c.project!(w), old.ok ? old.text : '');
    const r = await setup(w, [c.flag, '--scope', 'project']);
    expect(r.out).toContain('updated "mdp" (command, args)');
    const text = await readText(c.project!(w));
    expect(text).not.toContain(NODE);
    expect(text).not.toContain(CLI);
    expect(servers(c, text)).toEqual({ docs: c.ownServer, mdp: c.projectEntry });
  });
});

describe('setup: entries and names', () => {
  it('--transport http writes each host its own shape of the URL entry; --url picks the endpoint', async () => {
    const w = await world();
    const r = await setup(w, ['--cursor', '--windsurf', '--vscode', '--url', 'https://mdp.example.test/mcp']);
    expect(r.code).toBe(0);
    const url = 'https://mdp.example.test/mcp';
    expect(servers(CASES[2]!, await readText(join(w.home, '.cursor', 'mcp.json')))).toEqual({ mdp: { url } });
    expect(servers(CASES[4]!, await readText(join(w.home, '.codeium', 'windsurf', 'mcp_config.json')))).toEqual({ mdp: { serverUrl: url } });
    expect(servers(CASES[3]!, await readText(join(w.home, '.config', 'Code', 'User', 'mcp.json')))).toEqual({ mdp: { type: 'http', url } });
  });

  it('--name names the entry, and --remove takes out only that one', async () => {
    const w = await world();
    await setup(w, ['--codex']);
    await setup(w, ['--codex', '--name', 'mdp-http', '--transport', 'http']);
    const file = join(w.home, '.codex', 'config.toml');
    expect(Object.keys(servers(CASES[1]!, await readText(file)))).toEqual(['mdp', 'mdp-http']);
    await setup(w, ['--codex', '--remove', '--name', 'mdp-http']);
    expect(servers(CASES[1]!, await readText(file))).toEqual({ mdp: { command: NODE, args: [CLI, 'mcp'] } });
  });

  it('follows XDG_CONFIG_HOME and CODEX_HOME when they are set', async () => {
    const w = await world();
    const xdg = join(w.root, 'xdg');
    const codexHome = join(w.root, 'codex-home');
    await setup(w, ['--zed', '--vscode', '--codex'], { env: { XDG_CONFIG_HOME: xdg, CODEX_HOME: codexHome } });
    expect(await missing(join(xdg, 'zed', 'settings.json'))).toBe(false);
    expect(await missing(join(xdg, 'Code', 'User', 'mcp.json'))).toBe(false);
    expect(await missing(join(codexHome, 'config.toml'))).toBe(false);
  });

  it('writes through a symlinked config file: the link stays, its target changes', async () => {
    const w = await world();
    const target = join(w.root, 'dotfiles', 'mcp.json');
    await put(target, '{}\n');
    await mkdir(join(w.home, '.cursor'));
    await symlink(target, join(w.home, '.cursor', 'mcp.json'));
    expect((await setup(w, ['--cursor'])).code).toBe(0);
    expect((await lstat(join(w.home, '.cursor', 'mcp.json'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(w.home, '.cursor', 'mcp.json'))).toBe(target);
    expect(servers(CASES[2]!, await readText(target))).toEqual({ mdp: { command: NODE, args: [CLI, 'mcp'] } });
  });

  // Review findings: a read-only config was replaced all the same (mode kept), and a symlink to a
  // file not made yet was replaced by a plain file, losing the dotfile manager's link.
  it('refuses a config file made read-only, and leaves it as it was', async () => {
    const w = await world();
    const file = join(w.home, '.cursor', 'mcp.json');
    await put(file, '{}\n');
    await chmod(file, 0o444);
    const r = await setup(w, ['--cursor']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `mdp-server setup: Cursor: cannot write ${file}: it is read-only (mode 0444); make it writable for setup to edit it, or edit it by hand`,
    );
    expect(await readText(file)).toBe('{}\n');
    expect((await stat(file)).mode & 0o777).toBe(0o444);
  });

  it('writes the target of a symlink to a file not made yet, and keeps the link', async () => {
    const w = await world();
    const target = join(w.root, 'dotfiles', 'cursor', 'mcp.json');
    await mkdir(join(w.home, '.cursor'), { recursive: true });
    await symlink(target, join(w.home, '.cursor', 'mcp.json'));
    expect((await setup(w, ['--cursor'])).code).toBe(0);
    expect(await readlink(join(w.home, '.cursor', 'mcp.json'))).toBe(target);
    expect(servers(CASES[2]!, await readText(target))).toEqual({ mdp: { command: NODE, args: [CLI, 'mcp'] } });
  });

  it('one broken host does not stop the others, and the exit says something failed', async () => {
    const w = await world();
    await put(join(w.home, '.cursor', 'mcp.json'), '{ nope');
    const r = await setup(w, ['--cursor', '--zed']);
    expect(r.code).toBe(1);
    expect(await missing(join(w.home, '.config', 'zed', 'settings.json'))).toBe(false);
  });
});

describe('setup: usage', () => {
  it.each([
    [['--bogus'], /Unknown option '--bogus'/],
    [['stray'], /unknown host 'stray' \(hosts: claude-code, codex, cursor, vscode, windsurf, zed\)/],
    [['cursor', 'curser'], /unknown host 'curser'/],
    [['windsurf', '--scope', 'project'], /Windsurf has no project-level MCP config/],
    [['--scope', 'global'], /--scope must be user or project/],
    [['--transport', 'sse'], /--transport must be stdio or http/],
    [['--url', 'ftp://x'], /--url must be an http/],
    [['--url', 'http://x/mcp', '--transport', 'stdio'], /--url needs --transport http/],
    [['--name', 'my server'], /--name must be/],
    [['--windsurf', '--scope', 'project'], /Windsurf has no project-level MCP config/],
  ])('refuses %j with one line and exit 64', async (argv, message) => {
    const w = await world();
    const r = await setup(w, argv);
    expect(r.code).toBe(64);
    expect(r.err).toMatch(message);
    expect(r.err.split('\n')).toHaveLength(1);
    expect(r.out).toBe('');
  });

  it('takes hosts by name, as the usage line says, alone or beside their flags', async () => {
    const w = await world();
    const r = await setup(w, ['cursor', 'codex', '--zed']);
    expect(r).toMatchObject({ code: 0, err: '' });
    for (const file of [join(w.home, '.cursor', 'mcp.json'), join(w.home, '.codex', 'config.toml'), join(w.home, '.config', 'zed', 'settings.json')]) {
      expect(await missing(file)).toBe(false);
    }
    expect(await missing(join(w.home, '.config', 'Code', 'User', 'mcp.json'))).toBe(true);
    const named = await setup(w, ['--remove', 'claude-code', 'cursor', '--cursor']);
    expect(named.code).toBe(0);
    expect(named.out).toContain('removed "mdp"');
    expect(named.out).toContain('Claude Code');
  });

  it('--help describes every flag', async () => {
    const w = await world();
    const r = await setup(w, ['--help']);
    expect(r.code).toBe(0);
    for (const flag of [
      '--claude-code',
      '--codex',
      '--cursor',
      '--vscode',
      '--windsurf',
      '--zed',
      '--scope',
      '--name',
      '--transport',
      '--url',
      '--dry-run',
      '--remove',
    ]) {
      expect(r.out).toContain(flag);
    }
  });
});

describe('setup --scope project and PATH', () => {
  it("launches the package's own bin by name", async () => {
    const manifest = JSON.parse(await readText(fileURLToPath(new URL('../package.json', import.meta.url)))) as { bin: Record<string, string> };
    expect(Object.keys(manifest.bin)).toContain(PROJECT_COMMAND);
  });

  it('says so when mdp-server is not on PATH here (the entry still is written, exit 0)', async () => {
    const w = await world();
    const r = await setup(w, ['cursor', '--scope', 'project']);
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/note: the project entries launch 'mdp-server' from PATH, and it is not on PATH here/);
    expect(servers(CASES[2]!, await readText(join(w.project, '.cursor', 'mcp.json')))).toEqual({ mdp: { command: 'mdp-server', args: ['mcp'] } });
  });

  it('says nothing when it is, nor in user scope, nor for --transport http', async () => {
    const w = await world();
    await executable(join(w.bin, 'mdp-server'), '#!/bin/sh\nexit 0\n');
    expect((await setup(w, ['cursor', '--scope', 'project'])).err).toBe('');
    const other = await world();
    expect((await setup(other, ['cursor'])).err).toBe('');
    expect((await setup(other, ['cursor', '--scope', 'project', '--transport', 'http'])).err).toBe('');
  });
});

describe('setup with no host flag', () => {
  it('finds no host in an empty HOME with an empty PATH: says so and exits 64', async () => {
    const w = await world();
    const r = await setup(w, []);
    expect(r.code).toBe(64);
    expect(r.err).toMatch(/found no agent host installed/);
    expect(r.err).toMatch(/mdp-server setup cursor/);
  });

  it('sets up the hosts it finds and says how it found each', async () => {
    const w = await world();
    await mkdir(join(w.home, '.cursor'));
    await executable(join(w.bin, 'codex'), '#!/bin/sh\nexit 0\n');
    const r = await setup(w, []);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`Found Codex (codex on PATH (${join(w.bin, 'codex')})), Cursor (${join(w.home, '.cursor')} exists)`);
    expect(await missing(join(w.home, '.codex', 'config.toml'))).toBe(false);
    expect(await missing(join(w.home, '.cursor', 'mcp.json'))).toBe(false);
    expect(await missing(join(w.home, '.config', 'zed', 'settings.json'))).toBe(true);
  });

  it('skips a host without project scope under --scope project, saying so', async () => {
    const w = await world();
    await mkdir(join(w.home, '.codeium', 'windsurf'), { recursive: true });
    await mkdir(join(w.home, '.cursor'));
    const r = await setup(w, ['--scope', 'project']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('Windsurf: skipped, it has no project-level MCP config');
    expect(await missing(join(w.project, '.cursor', 'mcp.json'))).toBe(false);
  });

  it('does not count a non-executable file on PATH', async () => {
    const w = await world();
    await writeFile(join(w.bin, 'zed'), 'not a program');
    expect((await setup(w, [])).code).toBe(64);
  });
});

async function executable(file: string, text: string): Promise<void> {
  await writeFile(file, text);
  await chmod(file, 0o755);
}

/**
 * A stand-in for the `claude` CLI: records each call's arguments and working folder, and does to
 * the JSON file what the real `claude mcp add-json|remove` does (including refusing to add a name
 * that exists), so a second setup run can see its own work.
 */
const FAKE_CLAUDE = `#!${process.execPath}
const fs = require('node:fs');
const path = require('node:path');
const argv = process.argv.slice(2);
fs.appendFileSync(process.env.FAKE_CLAUDE_LOG, JSON.stringify({ argv, cwd: process.cwd() }) + '\\n');
if (process.env.FAKE_CLAUDE_FAIL) { console.error('claude: something went wrong'); process.exit(1); }
const [, verb, , scope, name, json] = argv;
const file = scope === 'user' ? path.join(process.env.HOME, '.claude.json') : path.join(process.cwd(), '.mcp.json');
const data = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
data.mcpServers = data.mcpServers || {};
if (verb === 'add-json') {
  if (data.mcpServers[name]) { console.error('MCP server ' + name + ' already exists'); process.exit(1); }
  data.mcpServers[name] = JSON.parse(json);
} else if (verb === 'remove') {
  if (!data.mcpServers[name]) { console.error('No MCP server found with name: ' + name); process.exit(1); }
  delete data.mcpServers[name];
}
fs.writeFileSync(file, JSON.stringify(data, null, 2) + '\\n');
`;

describe('setup --claude-code through the claude CLI on PATH', () => {
  async function withClaude(): Promise<{ w: World; log: string; calls: () => Promise<Array<{ argv: string[]; cwd: string }>> }> {
    const w = await world();
    await executable(join(w.bin, 'claude'), FAKE_CLAUDE);
    const log = join(w.root, 'claude-calls.jsonl');
    await writeFile(log, '');
    const calls = async (): Promise<Array<{ argv: string[]; cwd: string }>> =>
      (await readText(log))
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { argv: string[]; cwd: string });
    return { w, log, calls };
  }

  const ENTRY = { type: 'stdio', command: NODE, args: [CLI, 'mcp'] };

  it('adds the entry with `claude mcp add-json --scope user`, and a second run calls nothing', async () => {
    const { w, log, calls } = await withClaude();
    const r = await setup(w, ['--claude-code'], { env: { FAKE_CLAUDE_LOG: log } });
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toContain(`Claude Code (through ${join(w.bin, 'claude')}): added "mdp"`);
    expect(await calls()).toEqual([{ argv: ['mcp', 'add-json', '--scope', 'user', 'mdp', JSON.stringify(ENTRY)], cwd: w.project }]);
    expect(JSON.parse(await readText(join(w.home, '.claude.json')))).toEqual({ mcpServers: { mdp: ENTRY } });

    const again = await setup(w, ['--claude-code'], { env: { FAKE_CLAUDE_LOG: log } });
    expect(again.code).toBe(0);
    expect(again.out).toContain('"mdp" already up to date');
    expect(await calls()).toHaveLength(1);
  });

  it('updates an entry of ours by remove + add-json, keeping the keys the user added to it', async () => {
    const { w, log, calls } = await withClaude();
    await put(
      join(w.home, '.claude.json'),
      JSON.stringify({ mcpServers: { mdp: { type: 'stdio', command: NODE, args: ['/old/cli.js', 'mcp'], env: { DEBUG: '1' } } } }),
    );
    const r = await setup(w, ['--claude-code'], { env: { FAKE_CLAUDE_LOG: log } });
    expect(r.code).toBe(0);
    expect(r.out).toContain('updated "mdp" (args)');
    expect(r.out).toContain(`args: ["/old/cli.js","mcp"] -> ["${CLI}","mcp"]`);
    const updated = { ...ENTRY, env: { DEBUG: '1' } };
    expect((await calls()).map((c) => c.argv)).toEqual([
      ['mcp', 'remove', '--scope', 'user', 'mdp'],
      ['mcp', 'add-json', '--scope', 'user', 'mdp', JSON.stringify({ type: 'stdio', command: NODE, args: [CLI, 'mcp'], env: { DEBUG: '1' } })],
    ]);
    expect(JSON.parse(await readText(join(w.home, '.claude.json')))).toEqual({ mcpServers: { mdp: updated } });
  });

  it('--remove runs `claude mcp remove` only when our entry is there', async () => {
    const { w, log, calls } = await withClaude();
    await setup(w, ['--claude-code'], { env: { FAKE_CLAUDE_LOG: log } });
    const r = await setup(w, ['--claude-code', '--remove'], { env: { FAKE_CLAUDE_LOG: log } });
    expect(r.code).toBe(0);
    expect((await calls()).at(-1)!.argv).toEqual(['mcp', 'remove', '--scope', 'user', 'mdp']);
    await setup(w, ['--claude-code', '--remove'], { env: { FAKE_CLAUDE_LOG: log } });
    expect(await calls()).toHaveLength(2);
  });

  it('--scope project runs the CLI in the project folder with --scope project, launching mdp-server from PATH', async () => {
    const { w, log, calls } = await withClaude();
    expect((await setup(w, ['--claude-code', '--scope', 'project'], { env: { FAKE_CLAUDE_LOG: log } })).code).toBe(0);
    const project = { type: 'stdio', command: 'mdp-server', args: ['mcp'] };
    expect(await calls()).toEqual([{ argv: ['mcp', 'add-json', '--scope', 'project', 'mdp', JSON.stringify(project)], cwd: w.project }]);
    expect(JSON.parse(await readText(join(w.project, '.mcp.json')))).toEqual({ mcpServers: { mdp: project } });
  });

  it('--dry-run prints the claude commands and runs none', async () => {
    const { w, log, calls } = await withClaude();
    const r = await setup(w, ['--claude-code', '--dry-run'], { env: { FAKE_CLAUDE_LOG: log } });
    expect(r.code).toBe(0);
    expect(r.out).toContain(`claude mcp add-json --scope user mdp '${JSON.stringify(ENTRY)}'`);
    expect(await calls()).toEqual([]);
    expect(await missing(join(w.home, '.claude.json'))).toBe(true);
  });

  it('a failing claude is reported with its message and exit 1', async () => {
    const { w, log } = await withClaude();
    const r = await setup(w, ['--claude-code'], { env: { FAKE_CLAUDE_LOG: log, FAKE_CLAUDE_FAIL: '1' } });
    expect(r.code).toBe(1);
    expect(r.err).toContain('claude: something went wrong');
  });

  it('an unparsable ~/.claude.json is left alone: no claude call, the file named, exit 1', async () => {
    const { w, log, calls } = await withClaude();
    await put(join(w.home, '.claude.json'), JSON_BROKEN);
    const r = await setup(w, ['--claude-code'], { env: { FAKE_CLAUDE_LOG: log } });
    expect(r.code).toBe(1);
    expect(r.err).toContain(`cannot parse ${join(w.home, '.claude.json')} at line 3`);
    expect(await calls()).toEqual([]);
  });
});

describe('files setup must not read or replace (from the security review)', () => {
  const cursorFile = (w: World): string => join(w.home, '.cursor', 'mcp.json');

  it('refuses a FIFO and a device instead of hanging or reading forever', async () => {
    const w = await world();
    await mkdir(dirname(cursorFile(w)), { recursive: true });
    execFileSync('mkfifo', [cursorFile(w)]);
    const fifo = await setup(w, ['--cursor']);
    expect(fifo.code).toBe(1);
    expect(fifo.err).toContain(`cannot read ${cursorFile(w)}: it is not a regular file`);

    const other = await world();
    await mkdir(dirname(cursorFile(other)), { recursive: true });
    await symlink('/dev/zero', cursorFile(other));
    const device = await setup(other, ['--cursor']);
    expect(device.code).toBe(1);
    expect(device.err).toContain('it is not a regular file');
  });

  it('refuses a file too large to be a config file, leaving it as it is', async () => {
    const w = await world();
    const huge = `{"x": "${'a'.repeat(MAX_CONFIG_BYTES)}"}`;
    await put(cursorFile(w), huge);
    const r = await setup(w, ['--cursor']);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`more than the ${MAX_CONFIG_BYTES} a config file may have`);
    expect((await stat(cursorFile(w))).size).toBe(huge.length);
  });

  it('refuses a file with another hard link (replacing it would leave the link behind)', async () => {
    const w = await world();
    await put(cursorFile(w), '{}\n');
    await link(cursorFile(w), join(w.root, 'other-name.json'));
    const r = await setup(w, ['--cursor']);
    expect(r.code).toBe(1);
    expect(r.err).toContain('other hard link');
    expect(await readText(join(w.root, 'other-name.json'))).toBe('{}\n');
  });

  it('refuses a servers key written twice (the host reads the last, an edit would land in the first)', async () => {
    const w = await world();
    const twice = '{\n  "mcpServers": {},\n  "mcpServers": {\n    "docs": {"command": "x"}\n  }\n}\n';
    await put(cursorFile(w), twice);
    const r = await setup(w, ['--cursor']);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`cannot parse ${cursorFile(w)} at line 3`);
    expect(r.err).toContain('"mcpServers" appears more than once');
    expect(await readText(cursorFile(w))).toBe(twice);
  });
});
