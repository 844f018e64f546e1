/**
 * MCP end-to-end harness: an agent (the SDK's own Client) on a real server, over stdio (the built
 * binary, spawned) or Streamable HTTP (in process, port 0), and MDP clients over the websocket
 * and the HTTP loop. Everything started here is stopped by `stopMcp()`.
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
import type { CallClientMessage, ClientDescriptor } from '@mdp/protocol';
import { ClientFailure, NO_ANSWER, startServer, stopAll, type CallHandler } from './harness.js';
import type { MdpServerOptions } from '../src/options.js';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

const started: Array<{ close(): Promise<void> }> = [];

export async function stopMcp(): Promise<void> {
  for (const item of started.splice(0).reverse()) await item.close().catch(() => undefined);
  await stopAll();
}

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
  started.push(client);
  const http = await listening;
  return { client, notes, http, ws: http.replace(/^http/, 'ws'), stderr: () => stderr };
}

/** An in-process server with `options`, the agent on its /mcp. */
export async function httpAgent(options: MdpServerOptions = {}, requestInit?: RequestInit): Promise<Agent> {
  const t = await startServer(options);
  const { client, notes } = agentClient();
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.http}/mcp`), requestInit ? { requestInit } : {}));
  started.push(client);
  return { client, notes, http: t.http, ws: t.ws };
}

/** A minimal MDP client over the HTTP loop: it registers, then long-polls and answers calls. */
export class LoopClient {
  handler: CallHandler = () => 'ok';
  private closed = false;
  private readonly abort = new AbortController();

  private constructor(
    private readonly base: string,
    readonly sessionId: string,
  ) {}

  static async connect(http: string, desc: ClientDescriptor): Promise<LoopClient> {
    const base = `${http}/mdp/http-loop`;
    const res = await fetch(`${base}/connect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const { sessionId } = (await res.json()) as { sessionId: string };
    const client = new LoopClient(base, sessionId);
    started.push(client);
    const registered = await client.send({ type: 'registerClient', client: desc });
    if (registered.status !== 202) throw new Error(`register failed: ${registered.status}`);
    void client.pollLoop();
    return client;
  }

  send(message: unknown): Promise<Response> {
    return fetch(`${this.base}/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': this.sessionId },
      body: JSON.stringify({ message }),
    });
  }

  private async pollLoop(): Promise<void> {
    while (!this.closed) {
      let res: Response;
      try {
        res = await fetch(`${this.base}/poll?waitMs=200`, { headers: { 'x-mdp-session-id': this.sessionId }, signal: this.abort.signal });
      } catch {
        return;
      }
      if (res.status !== 200) {
        await res.body?.cancel();
        if (res.status === 204) continue;
        return;
      }
      const { message } = (await res.json()) as { message: CallClientMessage };
      if (message.type === 'callClient') void this.answer(message);
    }
  }

  private async answer(call: CallClientMessage): Promise<void> {
    const result = await this.handler(call);
    if (result === NO_ANSWER) return;
    const answer =
      result instanceof ClientFailure
        ? { type: 'callClientResult', requestId: call.requestId, ok: false, error: result.error }
        : { type: 'callClientResult', requestId: call.requestId, ok: true, data: result };
    await this.send(answer).catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    await fetch(`${this.base}/disconnect`, { method: 'POST', headers: { 'x-mdp-session-id': this.sessionId } }).catch(() => undefined);
  }
}
