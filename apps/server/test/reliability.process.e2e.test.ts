/**
 * Reliability with real `mdp-server` processes on loopback, each process of a simulated user given
 * that user's temporary state directory (its cluster secret, its term files), on a range of free
 * ports whose first port stands in for the default 47372:
 *
 * - a pair keeps a leader through SIGKILL, restart and SIGTERM, in both roles (default heartbeat
 *   and lease: the survivor must lead within 5 s as a user would see it);
 * - three processes that lose two: the last leads;
 * - the hub on the default port is killed with a reconnecting client attached: the client is
 *   readable again through the default port within 5 s;
 * - two users' servers on one range form two clusters;
 * - SIGTERM with 500 reads in flight against a slow client: every reader is answered, and the
 *   process exits in time (exit 0: the CLI's backstop, one second after the drain deadline, exits 1).
 */
import { Agent, request } from 'node:http';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { freePorts, removeScratch, scratchDir } from '@mdp/test-kit';
import {
  FAST_CLUSTER,
  ReconnectingClient,
  agreedLeader,
  followsNext,
  kill,
  lastRole,
  leadsNext,
  logged,
  metaOf,
  killAll,
  spawnServer,
  terminate,
  type Proc,
  type ServerArgs,
} from './processes.js';

const clients: ReconnectingClient[] = [];

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  killAll();
});

afterAll(() => removeScratch());

/** A simulated user: a state directory of their own. */
const user = (): string => scratchDir('mdp-user-');

const id = (p: Proc): string => `127.0.0.1:${p.port}`;

/**
 * The default heartbeat and lease (what a failover takes depends on them: a gone member is proven
 * by probes every half heartbeat), with short election time-outs and discovery rounds, which only
 * delay a lone server's first election and the moment a restarted server counts again.
 */
const DEFAULTS_QUICK_START = ['--election-timeout-min-ms', '1000', '--election-timeout-max-ms', '1500', '--discover-interval-ms', '300'];

describe('a pair of processes (default heartbeat and lease)', () => {
  it('keeps a leader through SIGKILL, restart and SIGTERM, in both roles', { timeout: 120_000 }, async () => {
    const range = await freePorts(3);
    const [start, portA, portB] = range as [number, number, number];
    const state = user();
    const args = (port: number): ServerArgs => ({
      port,
      rangeStart: start,
      rangeSize: 3,
      stateDir: state,
      clusterId: `pair-${start}`,
      extra: DEFAULTS_QUICK_START,
    });
    let procs = [spawnServer(args(portA)), spawnServer(args(portB))];
    let leader = await agreedLeader(procs, 20_000);

    for (let round = 0; round < 2; round += 1) {
      const survivor = procs.find((p) => p !== leader) as Proc;
      // SIGKILL of the leader: the survivor leads within 5 s.
      let mark = survivor.stdout.length;
      await kill(leader);
      await leadsNext(survivor, 5000, mark);
      expect((await metaOf(survivor.port)).cluster).toMatchObject({ role: 'leader', knownMemberCount: 1, hasQuorum: true });
      // Restarted, it follows, and counts again once the leader's discovery found it.
      let joinMark = survivor.logs.length;
      const restarted = spawnServer(args(leader.port));
      await followsNext(restarted, survivor, 10_000, 0);
      await logged(survivor, 'cluster.member_joined', { id: id(restarted) }, 10_000, joinMark);
      // SIGTERM of the follower: the leader still leads, without stepping down.
      mark = survivor.stdout.length;
      const logMark = survivor.logs.length;
      expect(await terminate(restarted)).toEqual({ code: 0, signal: null });
      await logged(survivor, 'cluster.member_departed', { id: id(restarted), reason: 'left' }, 5000, logMark);
      expect(survivor.stdout.slice(mark)).not.toMatch(/stepped down/);
      expect(lastRole(survivor)).toBe('leader');
      expect((await metaOf(survivor.port)).cluster).toMatchObject({ role: 'leader', knownMemberCount: 1 });
      // Back as a follower; next round the roles are swapped.
      joinMark = survivor.logs.length;
      const again = spawnServer(args(leader.port));
      await followsNext(again, survivor, 10_000, 0);
      await logged(survivor, 'cluster.member_joined', { id: id(again) }, 10_000, joinMark);
      procs = [survivor, again];
      leader = survivor;
    }

    // SIGKILL of the follower: the leader leads again within 5 s (it may step down and re-elect).
    const follower = procs.find((p) => p !== leader) as Proc;
    const logMark = leader.logs.length;
    await kill(follower);
    await logged(leader, 'cluster.member_departed', { id: id(follower), reason: 'refused' }, 5000, logMark);
    if (lastRole(leader) !== 'leader') await leadsNext(leader, 5000);
    // SIGTERM of the leader: the other one (restarted) leads within 5 s.
    const joinMark = leader.logs.length;
    const other = spawnServer(args(follower.port));
    await followsNext(other, leader, 10_000, 0);
    await logged(leader, 'cluster.member_joined', { id: id(other) }, 10_000, joinMark);
    await logged(other, 'cluster.member_joined', { id: id(leader) }, 10_000);
    const mark = other.stdout.length;
    expect(await terminate(leader)).toEqual({ code: 0, signal: null });
    await leadsNext(other, 5000, mark);
    expect(await terminate(other)).toEqual({ code: 0, signal: null });
  });
});

describe('three processes', () => {
  it('that lose two (the leader among them): the last one leads', { timeout: 60_000 }, async () => {
    // The first port of the range is the default port, which the leader takes as well: no member
    // listens there, or a leader elected before that member binds it would have to give it back
    // (port-back.process.e2e.test.ts), which this test is not about.
    const [start, ...ports] = (await freePorts(4)) as [number, ...number[]];
    const state = user();
    const procs = ports.map((port) =>
      spawnServer({ port, rangeStart: start, rangeSize: 4, stateDir: state, clusterId: `three-${start}`, extra: FAST_CLUSTER }),
    );
    const leader = await agreedLeader(procs, 20_000);
    const [last, other] = procs.filter((p) => p !== leader) as [Proc, Proc];
    const mark = last.stdout.length;
    await Promise.all([kill(leader), kill(other)]);
    await leadsNext(last, 5000, mark);
    expect((await metaOf(last.port)).cluster).toMatchObject({ role: 'leader', knownMemberCount: 1, quorumSize: 1, hasQuorum: true });
    expect(await terminate(last)).toEqual({ code: 0, signal: null });
  });
});

describe('the default port', () => {
  it('a reconnecting client of the killed hub is readable through the default port again within 5 s', { timeout: 60_000 }, async () => {
    const range = await freePorts(2);
    const [home, other] = range as [number, number];
    const state = user();
    const args = (port: number): ServerArgs => ({
      port,
      rangeStart: home,
      rangeSize: 2,
      stateDir: state,
      clusterId: `home-${home}`,
      extra: [...DEFAULTS_QUICK_START, '--log-level', 'debug'],
    });
    const hub = spawnServer(args(home));
    await leadsNext(hub, 20_000, 0);
    const next = spawnServer(args(other));
    await followsNext(next, hub, 20_000, 0);
    const client = new ReconnectingClient(
      `ws://127.0.0.1:${home}`,
      { id: 'app', name: 'App', paths: [{ type: 'skill', path: '/docs/skill.md' }] },
      (path) => `read ${path}`,
    );
    clients.push(client);
    await logged(hub, 'client.registered', { clientId: 'app' });

    const logMark = next.logs.length;
    await kill(hub);
    // Back, registered and readable through the default port: the new leader serves it.
    await logged(next, 'server.default_port_held', { port: home }, 5000, logMark);
    await logged(next, 'client.registered', { clientId: 'app' }, 5000, logMark);
    const res = await fetch(`http://127.0.0.1:${home}/skills/app/docs`);
    expect(await res.text()).toBe('read /docs/skill.md');
    const meta = await metaOf(home);
    expect(meta.serverId).toBe(id(next));
    expect(meta.endpoints.ws).toBe(`ws://127.0.0.1:${other}`);
    expect(meta.cluster).toMatchObject({ role: 'leader', leaderId: id(next) });
    expect(client.connections).toBe(2);
  });
});

describe("two users' servers on one range", () => {
  it('form two clusters: neither follows the other, nobody crashes, and the hub port goes to its own user', { timeout: 60_000 }, async () => {
    const range = await freePorts(3);
    const [home, mine, theirs] = range as [number, number, number];
    const alice = user();
    const bob = user();
    const args = (port: number, stateDir: string): ServerArgs => ({ port, rangeStart: home, rangeSize: 3, stateDir, clusterId: 'mdp', extra: FAST_CLUSTER });
    const hub = spawnServer(args(home, alice));
    await leadsNext(hub, 20_000, 0);
    const bobs = spawnServer(args(theirs, bob));
    const alices = spawnServer(args(mine, alice));
    await followsNext(alices, hub, 20_000, 0);
    await leadsNext(bobs, 20_000, 0);
    await logged(bobs, 'cluster.peer_refused', { reason: 'no valid cluster secret proof' });
    expect(bobs.stdout).not.toMatch(/following/);
    expect((await metaOf(theirs)).cluster).toMatchObject({ role: 'leader', knownMemberCount: 1 });
    expect((await metaOf(home)).cluster).toMatchObject({ role: 'leader', knownMemberCount: 2 });

    // Alice's hub goes: her other server takes over the hub port, Bob's never does.
    await kill(hub);
    await logged(alices, 'server.default_port_held', { port: home }, 10_000);
    expect((await metaOf(home)).serverId).toBe(id(alices));
    expect(bobs.logs.some((l) => l.event === 'server.default_port_held')).toBe(false);
    expect(lastRole(bobs)).toBe('leader');
    for (const p of [alices, bobs]) expect(await terminate(p)).toEqual({ code: 0, signal: null });
  });
});

describe('SIGTERM with reads in flight', () => {
  it('answers every one of 500 readers of a slow client and exits in time', { timeout: 60_000 }, async () => {
    const [port] = (await freePorts(1)) as [number];
    // Info level: 500 reads logged at debug fill the stderr pipe of a busy test process, and the
    // server's blocking writes to it then slow the very shutdown this test times.
    const extra = ['--cluster-mode', 'standalone', '--drain-timeout-ms', '1000'];
    const server = spawnServer({ port, rangeStart: port, rangeSize: 1, stateDir: user(), clusterId: 'drain', extra });
    await logged(server, 'server.listening');
    const calls: { path: string; answer: () => void }[] = [];
    let allSent: () => void = () => undefined;
    const sent = new Promise<void>((resolve) => (allSent = resolve));
    const ws = new WebSocket(`ws://127.0.0.1:${port}`);
    await new Promise((resolve) => ws.once('open', resolve));
    let registered: () => void = () => undefined;
    const applied = new Promise<void>((resolve) => (registered = resolve));
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { type: string; requestId: string; path: string };
      // The pong of the ping sent after registerClient: the server applies a session's messages in order.
      if (m.type === 'pong') registered();
      if (m.type !== 'callClient') return;
      calls.push({
        path: m.path,
        answer: () => ws.send(JSON.stringify({ type: 'callClientResult', requestId: m.requestId, ok: true, data: `done ${m.path}` })),
      });
      if (calls.length === 500) allSent();
    });
    ws.send(JSON.stringify({ type: 'registerClient', client: { id: 'slow', name: 'Slow', paths: [{ type: 'skill', path: '/:n/skill.md' }] } }));
    ws.send(JSON.stringify({ type: 'ping', timestamp: 1 }));
    await applied;

    const agent = new Agent({ keepAlive: false, maxSockets: 500 });
    const reads = Array.from({ length: 500 }, (_, n) => read(port, `/skills/slow/${n}`, agent));
    await sent;
    server.child.kill('SIGTERM');
    await logged(server, 'server.draining', { pending: 500 });
    // The slow client answers half of them during the drain; the other half never.
    for (const call of calls.filter((_, i) => i % 2 === 0)) call.answer();
    const statuses = await Promise.all(reads);
    expect(statuses.filter((s) => s === 200)).toHaveLength(250);
    expect(statuses.filter((s) => s === 502)).toHaveLength(250);
    // Exit 0 means it finished before the backstop (deadline + 1 s) had to end it with 1.
    expect(await server.exited).toEqual({ code: 0, signal: null });
    ws.terminate();
    agent.destroy();
  });
});

/** One skill read on its own connection; the HTTP status, or 0 when no answer came. */
function read(port: number, path: string, agent: Agent): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}
