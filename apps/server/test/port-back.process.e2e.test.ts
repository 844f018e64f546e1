/**
 * A server's own port goes back to it, with real `mdp-server` processes on loopback (the first port
 * of each test's range stands in for the default 47372):
 *
 * - the owner of the default port is killed, the survivor serves that port too and a reconnecting
 *   client comes back to it there; the owner restarted with the same `--port` gets the port back
 *   (the survivor lets go, proven with the cluster secret) and the client ends up on the owner;
 * - five servers of one cluster started together, the one on the default port last (after the
 *   leader took that port): all serve their own ports;
 * - the port held by a server of another cluster, of another user, or by a program that is not MDP:
 *   the server exits with the clear error, as before;
 * - a seeded run of kills, stops and restarts on the same ports (the owner of the default port
 *   more often): every restarted server serves its own port and the three agree on a leader. The
 *   seed is printed on failure (MDP_PORTBACK_SEED replays one).
 */
import { createServer, type Server } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePorts, removeScratch, scratchDir } from '@mdp/test-kit';
import {
  FAST_CLUSTER,
  ReconnectingClient,
  agreedLeader,
  followsNext,
  kill,
  killAll,
  leadsNext,
  logged,
  metaOf,
  spawnServer,
  terminate,
  type Proc,
  type ServerArgs,
} from './processes.js';

const clients: ReconnectingClient[] = [];
const listeners: Server[] = [];

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  for (const l of listeners.splice(0)) l.close();
  killAll();
});

afterAll(() => removeScratch());

/** A simulated user: a state directory of their own (their cluster secret). */
const user = (): string => scratchDir('mdp-portback-');

const id = (p: Proc): string => `127.0.0.1:${p.port}`;

/** Waits on events, never on time: generous bounds for a loaded machine. */
const BOUND_MS = 20_000;

/** The line the CLI prints when the port stays taken (cli-notices.ts). */
const inUseBy = (port: number, holder: string): RegExp => new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use by ${holder}`);

/** Resolves with how `proc` exited and what it printed on stderr that is not a log line. */
async function exitOf(proc: Proc): Promise<{ code: number | null; text: string }> {
  const { code } = await proc.exited;
  return {
    code,
    text: proc.logs
      .filter((l) => l.event === 'text')
      .map((l) => String(l.text))
      .join('\n'),
  };
}

describe('a server restarted on its own port', () => {
  it('gets it back from the member that served it meanwhile, and its reconnecting client ends up on it', { timeout: 120_000 }, async () => {
    const range = await freePorts(2);
    const [home, other] = range as [number, number];
    const state = user();
    const args = (port: number): ServerArgs => ({
      port,
      rangeStart: home,
      rangeSize: 2,
      stateDir: state,
      clusterId: `back-${home}`,
      extra: [...FAST_CLUSTER, '--log-level', 'debug'],
    });
    const owner = spawnServer(args(home));
    await leadsNext(owner, BOUND_MS, 0);
    const survivor = spawnServer(args(other));
    await followsNext(survivor, owner, BOUND_MS, 0);
    const client = new ReconnectingClient(
      `ws://127.0.0.1:${home}`,
      { id: 'app', name: 'App', paths: [{ type: 'skill', path: '/docs/skill.md' }] },
      (path) => `read ${path}`,
    );
    clients.push(client);
    await logged(owner, 'client.registered', { clientId: 'app' }, BOUND_MS);

    // The owner dies; the survivor serves its port too, and the client comes back there.
    let mark = survivor.logs.length;
    await kill(owner);
    await logged(survivor, 'server.default_port_held', { port: home }, BOUND_MS, mark);
    await logged(survivor, 'client.registered', { clientId: 'app' }, BOUND_MS, mark);
    expect((await metaOf(home)).serverId).toBe(id(survivor));

    // Restarted with the same --port (a supervisor, an IDE): it serves that port again.
    mark = survivor.logs.length;
    const again = spawnServer(args(home));
    await logged(again, 'server.listening', { url: `http://127.0.0.1:${home}` }, BOUND_MS);
    await logged(survivor, 'server.default_port_yielded', { port: home, to: id(again) }, BOUND_MS, mark);
    expect((await metaOf(home)).serverId).toBe(id(again));
    // The client, cut from the survivor's second port, reconnects to the one address it knows: the owner.
    await logged(again, 'client.registered', { clientId: 'app' }, BOUND_MS);
    const res = await fetch(`http://127.0.0.1:${home}/skills/app/docs`);
    expect(await res.text()).toBe('read /docs/skill.md');
    expect(client.connections).toBe(3);
    // The two are one cluster again.
    await agreedLeader([again, survivor], BOUND_MS);
    for (const p of [again, survivor]) expect(await terminate(p)).toEqual({ code: 0, signal: null });
  });

  it('five servers of one cluster started together, the one on the default port last: all serve their own ports', { timeout: 120_000 }, async () => {
    const ports = await freePorts(5);
    const [home, ...rest] = ports as [number, ...number[]];
    const state = user();
    const args = (port: number): ServerArgs => ({ port, rangeStart: home, rangeSize: 5, stateDir: state, clusterId: `five-${home}`, extra: FAST_CLUSTER });
    const first = rest.map((port) => spawnServer(args(port)));
    // A leader is elected without the fifth and takes its port as the default port.
    const leader = await agreedLeader(first, BOUND_MS);
    await logged(leader, 'server.default_port_held', { port: home }, BOUND_MS);
    const mark = leader.logs.length;
    const last = spawnServer(args(home));
    await logged(last, 'server.listening', { url: `http://127.0.0.1:${home}` }, BOUND_MS);
    await logged(leader, 'server.default_port_yielded', { port: home, to: id(last) }, BOUND_MS, mark);
    const all = [...first, last];
    await agreedLeader(all, BOUND_MS);
    for (const p of all) expect((await metaOf(p.port)).serverId, `port ${p.port}`).toBe(id(p));
    for (const p of all) expect(await terminate(p)).toEqual({ code: 0, signal: null });
  });

  it('does not get it from a server of another cluster or another user, nor from a program that is not MDP: the clear error, as before', {
    timeout: 120_000,
  }, async () => {
    const range = await freePorts(2);
    const [home, other] = range as [number, number];
    const bob = user();
    const clusterId = `theirs-${home}`;
    const args = (port: number, stateDir: string, cluster = clusterId): ServerArgs => ({
      port,
      rangeStart: home,
      rangeSize: 2,
      stateDir,
      clusterId: cluster,
      extra: FAST_CLUSTER,
    });
    const hub = spawnServer(args(home, bob));
    await leadsNext(hub, BOUND_MS, 0);
    const holder = spawnServer(args(other, bob));
    await followsNext(holder, hub, BOUND_MS, 0);
    await kill(hub);
    await logged(holder, 'server.default_port_held', { port: home }, BOUND_MS);

    // Another cluster id, same user: never asks.
    const otherCluster = await exitOf(spawnServer(args(home, bob, `mine-${home}`)));
    expect(otherCluster.code).toBe(1);
    expect(otherCluster.text).toMatch(inUseBy(home, 'another MDP server'));
    // The same cluster id, another user (another secret): asks, and is refused.
    const alice = await exitOf(spawnServer(args(home, user())));
    expect(alice.code).toBe(1);
    expect(alice.text).toMatch(inUseBy(home, 'another MDP server'));
    await logged(holder, 'server.port_release_refused', { port: home, reason: 'cluster secret not proven' }, BOUND_MS);
    expect(holder.logs.some((l) => l.event === 'server.default_port_yielded')).toBe(false);
    expect((await metaOf(home)).serverId).toBe(id(holder));

    // A program that is not MDP.
    const plain = createServer((socket) => socket.end('SSH-2.0-not-mdp\r\n'));
    listeners.push(plain);
    const [port] = (await freePorts(1)) as [number];
    await new Promise<void>((resolve) => plain.listen(port, '127.0.0.1', resolve));
    const stranger = await exitOf(spawnServer({ ...args(port, user()), rangeStart: home }));
    expect(stranger.code).toBe(1);
    expect(stranger.text).toMatch(inUseBy(port, 'another program'));
    expect(await terminate(holder)).toEqual({ code: 0, signal: null });
  });
});

describe('kills and restarts on the same ports', () => {
  const seed = Number(process.env.MDP_PORTBACK_SEED ?? 20260115);
  const ROUNDS = 6;

  it(`every restarted server serves its own port (seed ${seed})`, { timeout: 240_000 }, async () => {
    const random = mulberry32(seed);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
    const ports = await freePorts(3);
    const home = ports[0] as number;
    const state = user();
    const args = (port: number): ServerArgs => ({ port, rangeStart: home, rangeSize: 3, stateDir: state, clusterId: `faults-${home}`, extra: FAST_CLUSTER });
    const procs = ports.map((port) => spawnServer(args(port)));
    const steps: string[] = [];
    try {
      await agreedLeader(procs, BOUND_MS);
      for (let round = 0; round < ROUNDS; round += 1) {
        // The owner of the default port half the time: its port is the one a survivor takes.
        const index = random() < 0.5 ? 0 : pick([1, 2]);
        const victim = procs[index] as Proc;
        const how = random() < 0.7 ? 'kill' : 'stop';
        const wait = pick(['at once', 'soon', 'once the port is held'] as const);
        steps.push(`round ${round}: ${how} ${id(victim)}, restart ${wait}`);
        const others = procs.filter((p) => p !== victim);
        const marks = others.map((p) => p.logs.length);
        if (how === 'kill') await kill(victim);
        else expect(await terminate(victim)).toEqual({ code: 0, signal: null });
        if (wait === 'soon') await new Promise((resolve) => setTimeout(resolve, 300));
        if (wait === 'once the port is held' && index === 0) {
          await Promise.any(others.map((p, i) => logged(p, 'server.default_port_held', { port: home }, BOUND_MS, marks[i])));
        }
        const restarted = spawnServer(args(victim.port));
        procs[index] = restarted;
        await logged(restarted, 'server.listening', { url: `http://127.0.0.1:${victim.port}` }, BOUND_MS);
        await agreedLeader(procs, BOUND_MS);
      }
      for (const p of procs) expect((await metaOf(p.port)).serverId).toBe(id(p));
      for (const p of procs) expect(await terminate(p)).toEqual({ code: 0, signal: null });
    } catch (error) {
      process.stderr.write(`port-back fault run failed with seed ${seed} (replay: MDP_PORTBACK_SEED=${seed})\n${steps.join('\n')}\n`);
      throw error;
    }
  });
});

/** A small seeded generator (mulberry32): the same seed replays the same run. */
function mulberry32(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
