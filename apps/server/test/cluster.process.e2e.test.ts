/**
 * Three real `mdp-server` processes in auto mode on loopback: they find each other over a port
 * range, elect one leader, and survive SIGKILL of it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMetaDocument, type MetaDocument } from '@mdp/protocol';
import { freePorts } from './ports.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

interface Proc {
  readonly child: ChildProcess;
  readonly port: number;
  stdout: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function spawnServer(port: number, base: number, clusterId: string): Proc {
  const args = [
    CLI,
    ['--port', port],
    ['--cluster-id', clusterId],
    ['--discover-start-port', base],
    ['--discover-attempts', 3],
    ['--discover-interval-ms', 300],
    ['--cluster-heartbeat-interval-ms', 100],
    ['--lease-duration-ms', 800],
    ['--election-timeout-min-ms', 1000],
    ['--election-timeout-max-ms', 1500],
    ['--cluster-state-dir', 'none'],
    ['--log-level', 'warn'],
  ].flat().map(String);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const proc: Proc = {
    child,
    port,
    stdout: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (proc.stdout += d));
  child.stderr!.resume();
  return proc;
}

async function clusterOf(proc: Proc): Promise<MetaDocument['cluster'] | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${proc.port}/mdp/meta`, { signal: AbortSignal.timeout(500) });
    const doc = parseMetaDocument(await res.json());
    return doc.ok ? doc.value.cluster : undefined;
  } catch {
    return undefined;
  }
}

/** Sample every process' /mdp/meta every 50 ms until one leader is agreed by all; returns its port. */
async function agreedLeader(procs: Proc[], timeoutMs: number, leadersSeen: Map<number, string>): Promise<Proc> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const views = await Promise.all(procs.map(clusterOf));
    for (const v of views) {
      if (v?.role !== 'leader') continue;
      const other = leadersSeen.get(v.term);
      expect(other === undefined || other === v.leaderId, `two leaders in term ${v.term}`).toBe(true);
      leadersSeen.set(v.term, v.leaderId);
    }
    const leaders = views.filter((v) => v?.role === 'leader');
    const leader = leaders[0];
    if (leaders.length === 1 && leader && views.every((v) => v?.leaderId === leader.leaderId && v.term === leader.term)) {
      return procs[views.indexOf(leader)] as Proc;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no agreed leader within ${timeoutMs} ms`);
}

describe('three mdp-server processes in auto mode', () => {
  it('find each other, elect one leader, and replace it when it is killed', { timeout: 60_000 }, async () => {
    const ports = await freePorts(3);
    const clusterId = `proc-${ports[0]}`;
    const procs = ports.map((port) => spawnServer(port, ports[0] as number, clusterId));
    const leadersSeen = new Map<number, string>();

    const first = await agreedLeader(procs, 20_000, leadersSeen);
    // A process that started listening a little later may be agreed on (it dialled in and follows)
    // before the leader's own discovery counts it as a member: wait for that round.
    await expect.poll(async () => (await clusterOf(first))?.knownMemberCount, { timeout: 5000, interval: 50 }).toBe(3);
    const firstMeta = await clusterOf(first);
    expect(firstMeta).toMatchObject({ id: clusterId, knownMemberCount: 3, quorumSize: 2, hasQuorum: true });
    // Each process printed one line saying whether it leads or whom it follows.
    for (const p of procs) {
      await expect.poll(() => p.stdout, { timeout: 5000 }).toMatch(/mdp-server: cluster .*: (this node is the leader|following \S+)/);
    }
    expect(first.stdout).toMatch(/this node is the leader/);

    const killedAt = Date.now();
    first.child.kill('SIGKILL');
    await first.exited;
    const rest = procs.filter((p) => p !== first);
    const second = await agreedLeader(rest, 10_000, leadersSeen);
    const failoverMs = Date.now() - killedAt;
    const secondMeta = await clusterOf(second);
    expect(secondMeta?.term).toBeGreaterThan(firstMeta?.term ?? 0);
    expect(secondMeta).toMatchObject({ knownMemberCount: 3, quorumSize: 2, hasQuorum: true });
    process.stdout.write(`multi-process failover after SIGKILL: ${failoverMs} ms\n`);

    for (const p of rest) p.child.kill('SIGTERM');
    for (const p of rest) expect(await p.exited).toEqual({ code: 0, signal: null });
  });
});
