/** Pure planning of config edits: text in, text and change out (no file system). */
import { parse as parseJsonc } from 'jsonc-parser';
import { parse as parseToml } from '@decimalturn/toml-patch';
import { describe, expect, it } from 'vitest';
import type { EditPlan, EditResult } from '../src/setup/config-edit.js';
import { HOSTS, type HostId, type Launch } from '../src/setup/hosts.js';
import { describePlan, entryChanges, planConfig } from '../src/setup/plan.js';

const STDIO: Launch = { transport: 'stdio', command: '/opt/node/bin/node', args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'] };
const MOVED: Launch = { transport: 'stdio', command: '/opt/node/bin/node', args: ['/srv/mdp/apps/server/dist/cli.js', 'mcp'] };
const HTTP: Launch = { transport: 'http', url: 'http://127.0.0.1:47372/mcp' };

function ok(result: EditResult): EditPlan {
  if (!result.ok) throw new Error(`expected a plan, got: ${result.message} (line ${result.line})`);
  return result;
}

function read(id: HostId, text: string): Record<string, unknown> {
  return (HOSTS[id].format === 'toml' ? parseToml(text) : parseJsonc(text)) as Record<string, unknown>;
}

function entryOf(id: HostId, text: string, name = 'mdp'): unknown {
  return (read(id, text)[HOSTS[id].key] as Record<string, unknown> | undefined)?.[name];
}

describe('the entry each host gets', () => {
  it.each([
    ['claude-code', { type: 'stdio', command: STDIO.command, args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'] }, { type: 'http', url: HTTP.url }],
    ['codex', { command: STDIO.command, args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'] }, { url: HTTP.url }],
    ['cursor', { command: STDIO.command, args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'] }, { url: HTTP.url }],
    ['vscode', { type: 'stdio', command: STDIO.command, args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'] }, { type: 'http', url: HTTP.url }],
    ['windsurf', { command: STDIO.command, args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'] }, { serverUrl: HTTP.url }],
    ['zed', { command: STDIO.command, args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'] }, { url: HTTP.url }],
  ] as const)('%s: stdio and http', (id, stdio, http) => {
    const first = ok(planConfig(HOSTS[id], undefined, 'mdp', STDIO));
    expect(entryOf(id, first.text)).toEqual(stdio);
    const created = ok(planConfig(HOSTS[id], undefined, 'mdp', HTTP));
    expect(entryOf(id, created.text)).toEqual(http);
  });
});

describe('JSON and JSONC files', () => {
  const USER = `{
    // servers I added by hand
    "context_servers": {
        "docs": { "command": "npx", "args": ["-y", "docs"] }, // keep this one
    },
    "theme": "One Dark",
}
`;

  it("adds our entry next to the user's, keeping comments, trailing commas and indentation", () => {
    const plan = ok(planConfig(HOSTS.zed, USER, 'mdp', STDIO));
    expect(plan.status).toBe('added');
    expect(plan.text).toContain('// servers I added by hand');
    expect(plan.text).toContain('"docs": { "command": "npx", "args": ["-y", "docs"] },');
    expect(plan.text).toContain('// keep this one');
    expect(plan.text).toContain('\n        "mdp": {\n            "command": "/opt/node/bin/node",');
    const parsed = read('zed', plan.text) as { context_servers: Record<string, unknown>; theme: string };
    expect(parsed.context_servers['docs']).toEqual({ command: 'npx', args: ['-y', 'docs'] });
    expect(parsed.theme).toBe('One Dark');
  });

  it('is idempotent: planning the result again changes nothing', () => {
    const first = ok(planConfig(HOSTS.zed, USER, 'mdp', STDIO));
    const second = ok(planConfig(HOSTS.zed, first.text, 'mdp', STDIO));
    expect(second.status).toBe('unchanged');
    expect(second.text).toBe(first.text);
    expect(describePlan(second, 'mdp')).toBe('"mdp" already up to date');
  });

  it('removing gives back the exact text it started from', () => {
    const added = ok(planConfig(HOSTS.zed, USER, 'mdp', STDIO));
    const removed = ok(planConfig(HOSTS.zed, added.text, 'mdp', undefined));
    expect(removed.status).toBe('removed');
    expect(removed.text).toBe(USER);
    expect(ok(planConfig(HOSTS.zed, USER, 'mdp', undefined)).status).toBe('absent');
  });

  it('puts our entry first, so comments stay with the entries they describe, and --remove keeps them', () => {
    const text = '{\n  "mcpServers": {\n    // the docs server\n    "docs": { "command": "npx" }, // pinned\n    "git": { "command": "uvx" } // last\n  }\n}\n';
    const added = ok(planConfig(HOSTS.cursor, text, 'mdp', HTTP));
    expect(added.text).toBe(
      '{\n  "mcpServers": {\n    "mdp": {\n      "url": "http://127.0.0.1:47372/mcp"\n    },\n    // the docs server\n    "docs": { "command": "npx" }, // pinned\n    "git": { "command": "uvx" } // last\n  }\n}\n',
    );
    expect(ok(planConfig(HOSTS.cursor, added.text, 'mdp', undefined)).text).toBe(text);
  });

  it('updates an entry of ours in place, keeps keys the user added to it, and says what changed', () => {
    const text =
      '{\n  "mcpServers": {\n    "mdp": {\n      "command": "/opt/node/bin/node",\n      "args": ["/old/cli.js", "mcp"],\n      "env": { "DEBUG": "1" } // mine\n    }\n  }\n}\n';
    const plan = ok(planConfig(HOSTS.cursor, text, 'mdp', STDIO));
    expect(plan.status).toBe('updated');
    expect(plan.changed).toEqual(['args']);
    expect(plan.text).toContain('"env": { "DEBUG": "1" } // mine');
    expect(entryOf('cursor', plan.text)).toEqual({ command: '/opt/node/bin/node', args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'], env: { DEBUG: '1' } });
    expect(entryChanges(plan)).toEqual(['  args: ["/old/cli.js","mcp"] -> ["/opt/mdp/apps/server/dist/cli.js","mcp"]']);
    expect(describePlan(plan, 'mdp')).toBe('updated "mdp" (args)');
  });

  it("switching to http drops command and args but not the user's keys", () => {
    const stdio = ok(
      planConfig(HOSTS.vscode, '{\n  "servers": {\n    "mdp": { "type": "stdio", "command": "n", "args": ["a"], "env": {} }\n  }\n}\n', 'mdp', HTTP),
    );
    expect(entryOf('vscode', stdio.text)).toEqual({ type: 'http', url: HTTP.url, env: {} });
    expect([...stdio.changed].sort()).toEqual(['args', 'command', 'type', 'url']);
  });

  it('keeps tabs and CRLF line endings', () => {
    const text = '{\r\n\t"mcpServers": {\r\n\t\t"docs": {\r\n\t\t\t"command": "npx"\r\n\t\t}\r\n\t}\r\n}\r\n';
    const plan = ok(planConfig(HOSTS.cursor, text, 'mdp', STDIO));
    expect(plan.text).toContain('\r\n\t\t"mdp": {\r\n\t\t\t"command": "/opt/node/bin/node",\r\n');
    expect(plan.text.replaceAll('\r\n', '')).not.toContain('\n');
  });

  it('writes into an empty object and an empty file with the braces on their own lines', () => {
    expect(ok(planConfig(HOSTS.cursor, '{}', 'mdp', HTTP)).text).toBe(
      '{\n  "mcpServers": {\n    "mdp": {\n      "url": "http://127.0.0.1:47372/mcp"\n    }\n  }\n}',
    );
    expect(ok(planConfig(HOSTS.cursor, '{\n  "mcpServers": {}\n}\n', 'mdp', HTTP)).text).toBe(
      '{\n  "mcpServers": {\n    "mdp": {\n      "url": "http://127.0.0.1:47372/mcp"\n    }\n  }\n}\n',
    );
    expect(ok(planConfig(HOSTS.cursor, '  \n', 'mdp', HTTP)).text).toBe(
      '{\n  "mcpServers": {\n    "mdp": {\n      "url": "http://127.0.0.1:47372/mcp"\n    }\n  }\n}\n',
    );
  });

  it('takes out only our entry, and the servers object it leaves empty', () => {
    const text = '{\n  "mcpServers": {\n    "mdp": {\n      "url": "x"\n    }\n  },\n  "other": 1\n}\n';
    expect(ok(planConfig(HOSTS.cursor, text, 'mdp', undefined)).text).toBe('{\n  "other": 1\n}\n');
    const last = '{\n  "other": 1,\n  "mcpServers": {\n    "mdp": {\n      "url": "x"\n    }\n  }\n}\n';
    expect(ok(planConfig(HOSTS.cursor, last, 'mdp', undefined)).text).toBe('{\n  "other": 1\n}\n');
  });

  it.each([
    [
      'last, no trailing comma: the comma before it goes, the comment after that comma stays',
      '{\n  "mcpServers": {\n    "docs": { "command": "x" }, // docs\n    "mdp": { "url": "u" }\n  }\n}\n',
      '{\n  "mcpServers": {\n    "docs": { "command": "x" } // docs\n  }\n}\n',
    ],
    [
      'a comment on its own line goes with it, the one above stays',
      '{\n  "mcpServers": {\n    "docs": { "command": "x" },\n    // above\n    "mdp": { "url": "u" } // on its line\n  }\n}\n',
      '{\n  "mcpServers": {\n    "docs": { "command": "x" }\n    // above\n  }\n}\n',
    ],
    [
      'a servers object with a comment of the user stays, as {}',
      '{\n  "mcpServers": {\n    "mdp": { "url": "u" }\n  }, // mine\n  "theme": 1\n}\n',
      '{\n  "mcpServers": {}, // mine\n  "theme": 1\n}\n',
    ],
    [
      'and one with a comment inside keeps it',
      '{\n  "mcpServers": {\n    // add servers here\n    "mdp": { "url": "u" }\n  }\n}\n',
      '{\n  "mcpServers": {\n    // add servers here\n  }\n}\n',
    ],
  ])('remove never takes a comment of the user: %s', (_case, text, expected) => {
    expect(ok(planConfig(HOSTS.cursor, text, 'mdp', undefined)).text).toBe(expected);
  });

  it.each([
    ['zed', '{\n  // how it looks\n  "theme": "One Dark",\n  // bigger\n  "ui_font_size": 16,\n}\n'],
    ['vscode', '{\n\t// inputs the servers ask for\n\t"inputs": []\n}'],
    ['cursor', '{\r\n  // the rest\r\n  "other": 1\r\n}\r\n'],
    ['claude-code', '{\n  "numStartups": 3,\n  "projects": {}\n}\n'],
  ] as const)('%s: add then remove in a file without the servers object gives back its bytes, comments included', (id, text) => {
    const added = ok(planConfig(HOSTS[id], text, 'mdp', STDIO));
    expect(entryOf(id, added.text)).toBeDefined();
    expect(ok(planConfig(HOSTS[id], added.text, 'mdp', undefined)).text).toBe(text);
  });

  it.each([
    ['{\n  "a": 1\n  "b": 2\n}\n', 3, 3, 'comma expected'],
    ['{\n  "mcpServers": {\n', 3, 1, 'close brace expected'],
    ['[1, 2]\n', 1, 1, 'the top level is not an object'],
    ['{\n  "mcpServers": []\n}\n', 2, 17, '"mcpServers" is not an object'],
    ['{\n  "mcpServers": { "mdp": "node" }\n}\n', 2, 26, '"mcpServers"."mdp" is not an object'],
  ])('refuses %j, naming line %i column %i', (text, line, column, message) => {
    const result = planConfig(HOSTS.cursor, text, 'mdp', STDIO);
    expect(result).toEqual({ ok: false, line, column, message });
  });

  it("Claude Code's file is strict JSON: a comment is an error there, but fine in JSONC hosts", () => {
    const text = '{\n  // note\n  "mcpServers": {}\n}\n';
    expect(planConfig(HOSTS['claude-code'], text, 'mdp', STDIO)).toMatchObject({ ok: false, line: 2, message: 'comments are not allowed in this file' });
    expect(planConfig(HOSTS.vscode, text, 'mdp', STDIO).ok).toBe(true);
  });
});

describe('a file that starts with a UTF-8 byte-order mark', () => {
  it.each([
    ['claude-code', '\uFEFF{\n  "mcpServers": {\n    "docs": { "command": "npx" }\n  }\n}\n'],
    ['cursor', '\uFEFF{\n  // mine\n  "mcpServers": {\n    "docs": { "command": "npx" },\n  },\n}\n'],
    ['codex', '\uFEFF# mine\n[mcp_servers.docs]\ncommand = "npx"\n'],
  ] as const)('%s: is read, keeps its mark, and comes back byte for byte', (id, text) => {
    const added = ok(planConfig(HOSTS[id], text, 'mdp', STDIO));
    expect(added.text.startsWith('\uFEFF')).toBe(true);
    expect(added.text.slice(1)).not.toContain('\uFEFF');
    expect(entryOf(id, added.text.slice(1))).toMatchObject({ command: STDIO.command });
    expect(ok(planConfig(HOSTS[id], added.text, 'mdp', STDIO))).toMatchObject({ status: 'unchanged', text: added.text });
    expect(ok(planConfig(HOSTS[id], added.text, 'mdp', undefined)).text).toBe(text);
  });

  it('names the line of a parse error after the mark as without it', () => {
    expect(planConfig(HOSTS.cursor, '\uFEFF{\n  "a": 1\n  "b": 2\n}\n', 'mdp', STDIO)).toMatchObject({ ok: false, line: 3, column: 3 });
  });
});

describe('TOML files (Codex)', () => {
  const USER = `# Codex, configured by hand
model = "o3" # my favourite

[mcp_servers.docs]
# the documentation server
command = "npx"
args = ["-y", "docs"]

[profiles.review]
model = "gpt-5"
`;

  it('adds [mcp_servers.mdp] and keeps every comment, table and key of the user', () => {
    const plan = ok(planConfig(HOSTS.codex, USER, 'mdp', STDIO));
    expect(plan.status).toBe('added');
    for (const line of USER.split('\n')) expect(plan.text).toContain(line);
    const parsed = parseToml(plan.text) as { mcp_servers: Record<string, unknown>; profiles: unknown; model: string };
    expect(parsed.mcp_servers['mdp']).toEqual({ command: '/opt/node/bin/node', args: ['/opt/mdp/apps/server/dist/cli.js', 'mcp'] });
    expect(parsed.mcp_servers['docs']).toEqual({ command: 'npx', args: ['-y', 'docs'] });
    expect(parsed.profiles).toEqual({ review: { model: 'gpt-5' } });
  });

  it('is idempotent, and removing restores the original bytes', () => {
    const first = ok(planConfig(HOSTS.codex, USER, 'mdp', STDIO));
    const again = ok(planConfig(HOSTS.codex, first.text, 'mdp', STDIO));
    expect(again.status).toBe('unchanged');
    expect(again.text).toBe(first.text);
    expect(ok(planConfig(HOSTS.codex, first.text, 'mdp', undefined)).text).toBe(USER);
  });

  it('a new file holds just our table, ends with a newline, and --remove empties it again', () => {
    const created = ok(planConfig(HOSTS.codex, undefined, 'mdp', STDIO));
    expect(created.text.endsWith('\n')).toBe(true);
    expect(Object.keys(parseToml(created.text) as object)).toEqual(['mcp_servers']);
    expect(ok(planConfig(HOSTS.codex, created.text, 'mdp', undefined)).text.trim()).toBe('');
  });

  it("updates an existing [mcp_servers.mdp] table in place, keeping the user's keys and comments", () => {
    const text = '[mcp_servers.mdp]\ncommand = "/opt/node/bin/node" # node 22\nargs = ["/old/cli.js", "mcp"]\nstartup_timeout_sec = 20\n';
    const plan = ok(planConfig(HOSTS.codex, text, 'mdp', MOVED));
    expect(plan.status).toBe('updated');
    expect(plan.changed).toEqual(['args']);
    expect(plan.text).toBe(
      '[mcp_servers.mdp]\ncommand = "/opt/node/bin/node" # node 22\nargs = ["/srv/mdp/apps/server/dist/cli.js", "mcp"]\nstartup_timeout_sec = 20\n',
    );
  });

  it('switches an entry to http', () => {
    const plan = ok(planConfig(HOSTS.codex, '[mcp_servers.mdp]\ncommand = "n"\nargs = ["a"]\n', 'mdp', HTTP));
    expect(entryOf('codex', plan.text)).toEqual({ url: HTTP.url });
  });

  it('writes our entry after the last server table, so the comment above the next table stays with it (and stays on --remove)', () => {
    const text = 'model = "o3"\n\n[mcp_servers.docs]\ncommand = "npx"\n\n# Profiles I use\n[profiles.fast]\nmodel = "gpt-5"\n';
    const added = ok(planConfig(HOSTS.codex, text, 'mdp', STDIO));
    expect(added.text).toBe(
      'model = "o3"\n\n[mcp_servers.docs]\ncommand = "npx"\n\n' +
        '[mcp_servers.mdp]\ncommand = "/opt/node/bin/node"\nargs = [ "/opt/mdp/apps/server/dist/cli.js", "mcp" ]\n\n' +
        '# Profiles I use\n[profiles.fast]\nmodel = "gpt-5"\n',
    );
    expect(ok(planConfig(HOSTS.codex, added.text, 'mdp', undefined)).text).toBe(text);
  });

  // The file's own style decides the entry's; a file with no server gets Codex's documented tables.
  it.each([
    ['empty file', '', '[mcp_servers.mdp]\nurl = "http://127.0.0.1:47372/mcp"\n'],
    ['no server yet', '# mine\nmodel = "o3"\n', '# mine\nmodel = "o3"\n\n[mcp_servers.mdp]\nurl = "http://127.0.0.1:47372/mcp"\n'],
    [
      'tables',
      '[mcp_servers.docs]\ncommand = "npx"\n[mcp_servers.docs.env]\nA = "1"\n\n# P\n[profiles.p]\n',
      '[mcp_servers.docs]\ncommand = "npx"\n[mcp_servers.docs.env]\nA = "1"\n\n[mcp_servers.mdp]\nurl = "http://127.0.0.1:47372/mcp"\n\n# P\n[profiles.p]\n',
    ],
    [
      'dotted keys at the top level',
      'model = "o3"\nmcp_servers.docs.command = "npx"\n\n# P\n[profiles.p]\n',
      'model = "o3"\nmcp_servers.docs.command = "npx"\nmcp_servers.mdp.url = "http://127.0.0.1:47372/mcp"\n\n# P\n[profiles.p]\n',
    ],
    [
      'dotted keys in [mcp_servers]',
      '[mcp_servers]\ndocs.command = "npx"\n# P\n[profiles.p]\n',
      '[mcp_servers]\ndocs.command = "npx"\nmdp.url = "http://127.0.0.1:47372/mcp"\n# P\n[profiles.p]\n',
    ],
    [
      'inline tables in [mcp_servers]',
      '[mcp_servers]\ndocs = { command = "npx" } # docs\n\n# P\n[profiles.p]\n',
      '[mcp_servers]\ndocs = { command = "npx" } # docs\nmdp = { url = "http://127.0.0.1:47372/mcp" }\n\n# P\n[profiles.p]\n',
    ],
    [
      'one inline mcp_servers',
      'mcp_servers = { docs = { command = "npx" } }\n',
      'mcp_servers = { docs = { command = "npx" }, mdp = { url = "http://127.0.0.1:47372/mcp" } }\n',
    ],
  ])('%s: written in the same style, idempotent, and removed to the original bytes', (_style, text, expected) => {
    const added = ok(planConfig(HOSTS.codex, text, 'mdp', HTTP));
    expect(added.text).toBe(expected);
    expect(ok(planConfig(HOSTS.codex, added.text, 'mdp', HTTP)).status).toBe('unchanged');
    expect(ok(planConfig(HOSTS.codex, added.text, 'mdp', undefined)).text).toBe(text);
  });

  it.each([
    [
      'a table',
      '[mcp_servers.mdp]\ncommand = "n" # pinned\nargs = ["a"]\nenv = { A = "1" }\n\n# P\n[profiles.p]\n',
      '[mcp_servers.mdp]\nenv = { A = "1" }\nurl = "http://127.0.0.1:47372/mcp"\n\n# P\n[profiles.p]\n',
    ],
    [
      'dotted keys',
      'mcp_servers.mdp.command = "n"\nmcp_servers.mdp.args = ["a"]\n\n# P\n[profiles.p]\n',
      'mcp_servers.mdp.url = "http://127.0.0.1:47372/mcp"\n\n# P\n[profiles.p]\n',
    ],
  ])('switching %s to http changes its own lines only; the comment above the next table stays there', (_style, text, expected) => {
    const plan = ok(planConfig(HOSTS.codex, text, 'mdp', HTTP));
    expect(plan.text).toBe(expected);
    const back = ok(planConfig(HOSTS.codex, plan.text, 'mdp', STDIO));
    expect(back.text).toContain('\n\n# P\n[profiles.p]\n');
    expect(entryOf('codex', back.text)).toMatchObject({ command: STDIO.command, args: STDIO.args });
  });

  it('keeps CRLF line endings and a file without a final line break', () => {
    const crlf = 'model = "o3"\r\n\r\n[mcp_servers.docs]\r\ncommand = "npx"\r\n\r\n# P\r\n[profiles.p]\r\n';
    const added = ok(planConfig(HOSTS.codex, crlf, 'mdp', STDIO));
    expect(added.text.replaceAll('\r\n', '')).not.toContain('\n');
    expect(ok(planConfig(HOSTS.codex, added.text, 'mdp', undefined)).text).toBe(crlf);
    const open = 'model = "o3"';
    const openAdded = ok(planConfig(HOSTS.codex, open, 'mdp', STDIO));
    expect(openAdded.text.endsWith('"mcp" ]')).toBe(true);
    expect(ok(planConfig(HOSTS.codex, openAdded.text, 'mdp', undefined)).text).toBe(open);
  });

  it.each([
    ['model = "o3"\n[mcp_servers.docs]\ncommand = \n', 3],
    ['[a]\nx = 1\n[a]\ny = 2\n', 3],
    ['ok = true\nname = "unterminated\n', 2],
  ])('refuses %j, naming line %i', (text, line) => {
    const result = planConfig(HOSTS.codex, text, 'mdp', STDIO);
    expect(result.ok).toBe(false);
    expect(result).toMatchObject({ line });
  });

  it('refuses mcp_servers that is not a table, and an entry of ours that is not a table', () => {
    expect(planConfig(HOSTS.codex, 'mcp_servers = 3\n', 'mdp', STDIO)).toMatchObject({ ok: false, message: '"mcp_servers" is not a table' });
    expect(planConfig(HOSTS.codex, '[mcp_servers]\nmdp = "x"\n', 'mdp', STDIO)).toMatchObject({ ok: false, message: '"mcp_servers.mdp" is not a table' });
  });
});
