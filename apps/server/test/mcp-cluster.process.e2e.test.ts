/**
 * Three `mdp-server mcp` processes on one machine, default cluster timing: a hub and two
 * followers. The agent of one follower lists and calls a client attached to the other follower
 * (through the hub); then the hub is killed, and the same agent session calls the same client by
 * the id it listed before, once a new leader is elected: no restart, no new listing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { TestClient, freePorts } from '@mdp/test-kit';
import { CLI } from './mcp-harness.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** What a process wrote on stderr, with a way to wait for a line. */
class Output {
  text = '';
  private readonly waiters: Array<{ match: RegExp; resolve: (m: RegExpExecArray) => void; from: number }> = [];

  add(chunk: string): void {
    this.text += chunk;
    for (const waiter of [...this.waiters]) {
      const found = waiter.match.exec(this.text.slice(waiter.from));
      if (found) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(found);
      }
    }
  }

  /** The first match of `match` in what is written from now on (or already, with `from: 0`). */
  next(match: RegExp, from = this.text.length): Promise<RegExpExecArray> {
    const found = match.exec(this.text.slice(from));
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => this.waiters.push({ match, resolve, from }));
  }
}

function argsFor(port: number, base: number): string[] {
  // Default cluster timing; only the discovery range is the test's own.
  return ['mcp', '--port', String(port), '--discover-start-port', String(base), '--discover-attempts', '3', '--log-level', 'info'];
}

/** A member whose stdin stays open (closing it would stop `mdp-server mcp`); no agent talks to it. */
function member(port: number, base: number, env: NodeJS.ProcessEnv): { child: ChildProcess; out: Output } {
  const child = spawn(process.execPath, [CLI, ...argsFor(port, base)], { stdio: ['pipe', 'ignore', 'pipe'], env });
  const out = new Output();
  child.stderr!.setEncoding('utf8').on('data', (d: string) => out.add(d));
  cleanup.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, out };
}

describe('an agent on a follower of a three-process cluster', () => {
  it('lists and calls a client on the other follower, and keeps calling it by that id after the hub is killed', async () => {
    const state = await mkdtemp(join(tmpdir(), 'mdp-mcp-cluster-'));
    cleanup.push(() => rm(state, { recursive: true, force: true }));
    // One user's servers: one state directory (their term and vote files are per server id).
    const env = { ...process.env, XDG_STATE_HOME: state };
    const [hubPort, agentPort, otherPort] = await freePorts(3);
    const base = hubPort as number;

    const hub = member(hubPort as number, base, env);
    await hub.out.next(/this node is the leader/, 0);
    const other = member(otherPort as number, base, env);
    await other.out.next(/following/, 0);

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, ...argsFor(agentPort as number, base)],
      env: env as Record<string, string>,
      stderr: 'pipe',
    });
    const agentOut = new Output();
    transport.stderr!.on('data', (d: Buffer) => agentOut.add(d.toString()));
    const agent = new Client({ name: 'cluster-agent', version: '1.0.0' });
    let toolsChanged: () => void = () => undefined;
    agent.setNotificationHandler(ToolListChangedNotificationSchema, () => toolsChanged());
    await agent.connect(transport);
    cleanup.push(() => agent.close());
    await agentOut.next(/following/, 0);

    // An app on the other follower, mirrored into the hub.
    const changed = new Promise<void>((resolve) => (toolsChanged = resolve));
    const app = await TestClient.connect(`ws://127.0.0.1:${otherPort}`);
    cleanup.push(() => app.close());
    app.handler = (call) => ({ served: call.path, body: call.body });
    app.send({ type: 'registerClient', client: { id: 'app', name: 'App', paths: [{ type: 'endpoint', method: 'POST', path: '/act' }] } });
    await changed;
    // The agent's node aliases client ids only under the server ids it admitted: the other
    // follower's may be admitted after the mirror is listed, which its log line tells.
    await agentOut.next(new RegExp(`"event":"cluster\\.member_joined"[^\\n]*"id":"127\\.0\\.0\\.1:${otherPort}"`), 0);

    const listed = (await agent.callTool({ name: 'listClients', arguments: { search: 'App' } })).structuredContent as {
      clients: Array<{ id: string; aliases: string[] }>;
    };
    expect(listed.clients).toHaveLength(1);
    const id = listed.clients[0]!.id;
    expect(id).toBe(`127.0.0.1:${otherPort}.app`);
    expect(listed.clients[0]!.aliases).toEqual(['app']);

    const call = async (n: number) => agent.callTool({ name: 'callPath', arguments: { clientId: id, method: 'POST', path: '/act', body: { n } } });
    expect((await call(1)).structuredContent).toEqual({ ok: true, data: { served: '/act', body: { n: 1 } } });

    // The hub dies; once a survivor leads, the same session and the same id work again.
    const killedAt = performance.now();
    const elected = Promise.race([
      agentOut.next(/"event":"cluster.leader_changed"[^\n]*"role":"leader"/),
      other.out.next(/"event":"cluster.leader_changed"[^\n]*"role":"leader"/),
    ]);
    hub.child.kill('SIGKILL');
    await elected;
    const again = await call(2);
    const failoverMs = performance.now() - killedAt;
    expect(again.isError ?? false).toBe(false);
    expect(again.structuredContent).toEqual({ ok: true, data: { served: '/act', body: { n: 2 } } });
    console.info(`[mcp-cluster] the agent's next call succeeded ${failoverMs.toFixed(0)} ms after the hub was killed`);
  }, 60_000);
});
