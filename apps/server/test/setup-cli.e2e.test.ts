/** `mdp-server setup` as the real binary, against a temporary HOME and project folder. */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const roots: string[] = [];

afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

async function sandbox(): Promise<{ root: string; home: string; project: string }> {
  const root = await mkdtemp(join(tmpdir(), 'mdp-setup-cli-'));
  roots.push(root);
  const home = join(root, 'home');
  const project = join(root, 'project');
  await Promise.all([mkdir(home), mkdir(project)]);
  return { root, home, project };
}

function run(script: string, args: string[], place: { home: string; project: string }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Only what setup needs: no real HOME, no PATH (so no host is found on it), no XDG dirs.
  const child = spawn(process.execPath, [script, 'setup', ...args], {
    cwd: place.project,
    env: { HOME: place.home, PATH: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('mdp-server setup (binary)', () => {
  it('--help exits 0 and names every flag', async () => {
    const place = await sandbox();
    const r = await run(CLI, ['--help'], place);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: mdp-server setup/);
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
      expect(r.stdout).toContain(flag);
    }
  });

  it('a usage error is one line on stderr and exit 64', async () => {
    const place = await sandbox();
    const r = await run(CLI, ['--cursr'], place);
    expect(r.code).toBe(64);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^mdp-server setup: Unknown option '--cursr'.*\(see mdp-server setup --help\)\n$/);
  });

  it('with no host installed it says so and exits 64', async () => {
    const place = await sandbox();
    const r = await run(CLI, [], place);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/found no agent host installed/);
  });

  it('`setup cursor --scope project` writes a project entry that names no path of this machine', async () => {
    const place = await sandbox();
    const r = await run(CLI, ['cursor', '--scope', 'project'], place);
    expect(r.code).toBe(0);
    const text = await readFile(join(place.project, '.cursor', 'mcp.json'), 'utf8');
    expect(JSON.parse(text)).toEqual({ mcpServers: { mdp: { command: 'mdp-server', args: ['mcp'] } } });
    expect(text).not.toContain(process.execPath);
    expect(text).not.toContain(place.root);
    expect(r.stderr).toMatch(/note: the project entries launch 'mdp-server' from PATH/);
  });

  it('an unknown host name is one line on stderr and exit 64', async () => {
    const place = await sandbox();
    const r = await run(CLI, ['cusror'], place);
    expect(r.code).toBe(64);
    expect(r.stderr).toBe("mdp-server setup: unknown host 'cusror' (hosts: claude-code, codex, cursor, vscode, windsurf, zed) (see mdp-server setup --help)\n");
  });

  it('writes an entry that launches this installation by the real path of dist/cli.js, even through a symlink', async () => {
    const place = await sandbox();
    // A linked bin (pnpm, npm link): the entry must name the file it links to.
    const linked = join(place.root, 'linked-cli.js');
    await symlink(CLI, linked);
    const r = await run(linked, ['--cursor'], place);
    expect(r.code).toBe(0);
    const config = JSON.parse(await readFile(join(place.home, '.cursor', 'mcp.json'), 'utf8')) as { mcpServers: Record<string, unknown> };
    expect(config.mcpServers['mdp']).toEqual({ command: process.execPath, args: [await realpath(CLI), 'mcp'] });
  });
});
