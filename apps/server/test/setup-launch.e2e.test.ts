/**
 * The whole point of `setup`: the entry it writes must start a working MCP server. This test runs
 * the real binary's `setup --cursor` against a temporary HOME, reads back the command line it
 * wrote, launches exactly that with the MCP SDK's stdio client (as Cursor would) and lists the
 * tools: the four generic tools of the MCP bridge must be there.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
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

describe('the entry setup writes', () => {
  it('launches an MCP server over stdio that lists listClients, listPaths, callPath and callPaths', async () => {
    const root = await mkdtemp(join(tmpdir(), 'mdp-setup-launch-'));
    cleanup.push(() => rm(root, { recursive: true, force: true }));
    const home = join(root, 'home');
    const project = join(root, 'project');
    await Promise.all([mkdir(home), mkdir(project)]);
    // The host's environment; the settings keep the launched server off the shared default port
    // and out of any cluster on this machine (a host would pass the same through its `env`).
    const env = { HOME: home, PATH: '' };
    const serverEnv = { ...env, MDP_PORT: '0', MDP_CLUSTER_MODE: 'standalone' };

    const result = await setup(['--cursor'], env, project);
    expect(result).toEqual({ code: 0, stderr: '' });
    const config = JSON.parse(await readFile(join(home, '.cursor', 'mcp.json'), 'utf8')) as {
      mcpServers: { mdp: { command: string; args: string[] } };
    };
    const { command, args } = config.mcpServers.mdp;

    // Exactly the command line from the file, started the way a host starts it.
    const transport = new StdioClientTransport({ command, args, env: serverEnv, cwd: project, stderr: 'ignore' });
    const client = new Client({ name: 'setup-launch-test', version: '1.0.0' });
    cleanup.push(() => client.close());
    await client.connect(transport);

    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['listClients', 'listPaths', 'callPath', 'callPaths']));
  });
});
