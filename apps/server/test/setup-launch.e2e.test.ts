/**
 * The whole point of `setup`: the entry it writes must start a working MCP server. This test runs
 * the real binary's `setup --cursor` against a temporary HOME, reads back the command line it
 * wrote, launches exactly that with the MCP SDK's stdio client (as Cursor would) and lists the
 * tools: the four generic tools of the MCP bridge must be there. The project-scope entry is read
 * as a teammate would: on a machine whose PATH has `mdp-server` (the package's bin) and node.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
/** The package's bin, as `npm install -g` or a deploy links it onto PATH. */
const BIN = fileURLToPath(new URL('../bin/mdp-server.js', import.meta.url));
const cleanup: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function setup(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, 'setup', ...args], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

async function place(): Promise<{ root: string; home: string; project: string }> {
  const root = await mkdtemp(join(tmpdir(), 'mdp-setup-launch-'));
  cleanup.push(() => rm(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  const project = join(root, 'project');
  await Promise.all([mkdir(home), mkdir(project)]);
  return { root, home, project };
}

async function listTools(command: string, args: string[], env: Record<string, string>, cwd: string): Promise<string[]> {
  const transport = new StdioClientTransport({ command, args, env, cwd, stderr: 'ignore' });
  const client = new Client({ name: 'setup-launch-test', version: '1.0.0' });
  cleanup.push(() => client.close());
  await client.connect(transport);
  const { tools } = await client.listTools();
  return tools.map((tool) => tool.name);
}

// The settings keep a launched server off the shared default port and out of any cluster on this
// machine (a host would pass the same through its `env`).
const SERVER_ENV = { MDP_PORT: '0', MDP_CLUSTER_MODE: 'standalone' };

describe('the entry setup writes', () => {
  it('launches an MCP server over stdio that lists listClients, listPaths, callPath and callPaths', async () => {
    const { home, project } = await place();
    const env = { HOME: home, PATH: '' };

    const result = await setup(['--cursor'], env, project);
    expect(result).toEqual({ code: 0, stderr: '' });
    const config = JSON.parse(await readFile(join(home, '.cursor', 'mcp.json'), 'utf8')) as {
      mcpServers: { mdp: { command: string; args: string[] } };
    };
    const { command, args } = config.mcpServers.mdp;

    // Exactly the command line from the file, started the way a host starts it.
    const names = await listTools(command, args, { ...env, ...SERVER_ENV }, project);
    expect(names).toEqual(expect.arrayContaining(['listClients', 'listPaths', 'callPath', 'callPaths']));
  });

  it("--scope project: the committed entry starts mdp-server from a teammate's PATH", async () => {
    const { root, home, project } = await place();
    const result = await setup(['cursor', '--scope', 'project'], { HOME: home, PATH: '' }, project);
    expect(result.code).toBe(0);
    const text = await readFile(join(project, '.cursor', 'mcp.json'), 'utf8');
    expect(text).not.toContain(CLI);
    expect(text).not.toContain(process.execPath);
    const { command, args } = (JSON.parse(text) as { mcpServers: { mdp: { command: string; args: string[] } } }).mcpServers.mdp;

    // The teammate's machine: another HOME, mdp-server and node on PATH, nothing else.
    const teammate = join(root, 'teammate');
    const bin = join(teammate, 'bin');
    await mkdir(bin, { recursive: true });
    await symlink(BIN, join(bin, 'mdp-server'));
    const env = { HOME: teammate, PATH: [bin, dirname(process.execPath)].join(delimiter), ...SERVER_ENV };
    const names = await listTools(command, args, env, project);
    expect(names).toEqual(expect.arrayContaining(['listClients', 'listPaths', 'callPath', 'callPaths']));
  });
});
