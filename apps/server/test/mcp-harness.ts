/**
 * MCP end-to-end harness: an agent (the SDK's own Client) on a real server, over stdio (the built
 * binary, spawned) or Streamable HTTP (in process, port 0). MDP clients over the websocket and the
 * HTTP loop are the kit's. Everything started here is stopped by the kit's `stopAll()`.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { track } from '@mdp/test-kit';
import { startServer } from './harness.js';
import type { MdpServerOptions } from '../src/settings/options.js';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** Stop an agent after the test; an agent whose server already went away may fail to close, which is fine. */
const trackAgent = (client: Client): void => void track({ close: () => client.close().catch(() => undefined) });

export type Kind = 'tools' | 'prompts' | 'resources';

/** The list_changed notifications an agent received, to wait on. */
export class Notifications {
  readonly counts: Record<Kind, number> = { tools: 0, prompts: 0, resources: 0 };
  private readonly waiters: Array<{ kind: Kind; count: number; resolve: () => void }> = [];

  constructor(client: Client) {
    const on = (kind: Kind) => () => {
      this.counts[kind] += 1;
      for (const waiter of [...this.waiters]) {
        if (waiter.kind === kind && this.counts[kind] >= waiter.count) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, on('tools'));
    client.setNotificationHandler(PromptListChangedNotificationSchema, on('prompts'));
    client.setNotificationHandler(ResourceListChangedNotificationSchema, on('resources'));
  }

  /** Resolves once `kind` has been notified `count` times in all. */
  reach(kind: Kind, count: number): Promise<void> {
    if (this.counts[kind] >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ kind, count, resolve }));
  }
}

export interface Agent {
  readonly client: Client;
  readonly notes: Notifications;
  /** The MDP server's HTTP and websocket URLs. */
  readonly http: string;
  readonly ws: string;
}

function agentClient(): { client: Client; notes: Notifications } {
  const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
  return { client, notes: new Notifications(client) };
}

/** `mdp-server mcp` spawned with `args`, driven over its stdin/stdout. */
export async function stdioAgent(args: string[] = []): Promise<Agent & { stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--port', '0', '--cluster-mode', 'standalone', '--log-level', 'warn', ...args],
    stderr: 'pipe',
  });
  let stderr = '';
  const listening = new Promise<string>((resolve, reject) => {
    transport.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    transport.stderr!.on('end', () => reject(new Error(`mdp-server exited: ${stderr}`)));
  });
  // Awaited below; when the binary refuses to start, connect fails first.
  listening.catch(() => undefined);
  const { client, notes } = agentClient();
  await client.connect(transport);
  trackAgent(client);
  const http = await listening;
  return { client, notes, http, ws: http.replace(/^http/, 'ws'), stderr: () => stderr };
}

/** An in-process server with `options`, the agent on its /mcp. */
export async function httpAgent(options: MdpServerOptions = {}, requestInit?: RequestInit): Promise<Agent> {
  const t = await startServer(options);
  const { client, notes } = agentClient();
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.http}/mcp`), requestInit ? { requestInit } : {}));
  trackAgent(client);
  return { client, notes, http: t.http, ws: t.ws };
}
