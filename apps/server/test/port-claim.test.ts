/**
 * The wiring of a port claim (port-claim.ts) on a manual clock, with the bind, the probe and the
 * request to the holder faked: what it asks and of whom, how long it tries, that it leaves no timer,
 * and how the holder's answers are read.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { PORT_CLAIM_DEFAULTS, type AskOutcome, type PortReleaseRequest, type ProbeResult } from '@mdp/cluster';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOL_RANGES, type MetaDocument } from '@mdp/protocol';
import { manualClock, recordingLogger, settle } from '@mdp/test-kit';
import { askOutcome, claimPort, type PortClaimOptions } from '../src/port-claim.js';

const PORT = 4000;
const HOLDER = '127.0.0.1:4001';

function inUse(): NodeJS.ErrnoException {
  return Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
}

function memberMeta(serverId: string, port: number, clusterId = 'c1'): ProbeResult {
  const base = `127.0.0.1:${port}`;
  const meta = {
    protocol: 'mdp',
    protocolVersion: PROTOCOL_VERSION,
    supportedProtocolRanges: [...SUPPORTED_PROTOCOL_RANGES],
    serverId,
    endpoints: {
      ws: `ws://${base}`,
      httpLoop: `http://${base}/mdp/http-loop`,
      cluster: `ws://${base}/mdp/cluster`,
      meta: `http://${base}/mdp/meta`,
      auth: `http://${base}/mdp/auth`,
    },
    cluster: {
      id: clusterId,
      membershipMode: 'dynamic',
      membershipFingerprint: 'dynamic',
      role: 'leader',
      term: 2,
      leaderId: serverId,
      leaderUrl: `ws://${base}`,
      leaseDurationMs: 4000,
      knownMemberCount: 1,
      reachableMemberCount: 1,
      quorumSize: 1,
      hasQuorum: true,
    },
    features: { upstreamProxy: true, clusterControl: true },
  } as MetaDocument;
  return { ok: true, url: `http://127.0.0.1:${PORT}`, meta };
}

const ADDRESS: AddressInfo = { address: '127.0.0.1', family: 'IPv4', port: PORT };

/** A claim on a manual clock: the probe answers `looks` in turn (the last one repeats), binds fail while `held()`. */
function setup(over: { looks: ProbeResult[]; answers?: AskOutcome[]; held?: () => boolean; bindError?: NodeJS.ErrnoException }) {
  const clock = manualClock();
  const log = recordingLogger();
  const asked: { url: string; body: PortReleaseRequest }[] = [];
  let binds = 0;
  let released = false;
  const options: PortClaimOptions = {
    host: '127.0.0.1',
    port: PORT,
    clusterId: 'c1',
    serverId: `127.0.0.1:${PORT}`,
    secure: false,
    releaseRequest: (to, port) => ({ clusterId: 'c1', serverId: `127.0.0.1:${PORT}`, to, port, timestamp: 1, proof: 'p' }),
    logger: log.logger,
    clock,
    probe: async () => (over.looks.length > 1 ? over.looks.shift() : over.looks[0]) as ProbeResult,
    ask: async (url, body) => {
      asked.push({ url, body });
      const answer = over.answers?.shift() ?? { kind: 'released' };
      if (answer.kind === 'released') released = true;
      return answer;
    },
  };
  let outcome: AddressInfo | undefined | Error | 'pending' = 'pending';
  const done = claimPort(options, async () => {
    binds += 1;
    if (over.bindError) throw over.bindError;
    if ((over.held ?? (() => !released))()) throw inUse();
    return ADDRESS;
  }).then(
    (address) => (outcome = address),
    (error: Error) => (outcome = error),
  );
  return { clock, log, asked, done, binds: () => binds, outcome: () => outcome };
}

describe('claiming a port back, wired', () => {
  it('asks the member that holds it, at its own address, then binds', async () => {
    const s = setup({ looks: [memberMeta(HOLDER, 4001)] });
    await s.done;
    expect(s.outcome()).toEqual(ADDRESS);
    expect(s.asked).toEqual([
      {
        url: 'http://127.0.0.1:4001/mdp/cluster/release-port',
        body: { clusterId: 'c1', serverId: '127.0.0.1:4000', to: HOLDER, port: PORT, timestamp: 1, proof: 'p' },
      },
    ]);
    expect(s.binds()).toBe(1);
    await s.log.seen('server.port_claim_asked', { port: PORT, holder: HOLDER });
    await s.log.seen('server.port_claimed', { port: PORT, from: HOLDER });
    expect(s.clock.pending()).toBe(0);
  });

  it('waits on its clock while nothing answers there, and gives up after the bound with no timer left', async () => {
    const s = setup({ looks: [{ ok: false, url: 'http://127.0.0.1:4000', kind: 'unreachable', reason: 'no answer within 1000 ms' }], held: () => true });
    await settle();
    expect(s.outcome()).toBe('pending');
    await s.clock.advanceSettled(PORT_CLAIM_DEFAULTS.timeoutMs - 1);
    expect(s.outcome()).toBe('pending');
    await s.clock.advanceSettled(1);
    await s.done;
    expect(s.outcome()).toBeUndefined();
    expect(s.binds()).toBeGreaterThan(5);
    expect(s.asked).toEqual([]);
    // Nobody was asked: the bind error tells the rest, the log only at debug.
    expect(s.log.records.find((l) => l.event === 'server.port_claim_failed')).toMatchObject({ level: 'debug', reason: 'still in use 5000 ms later' });
    expect(s.clock.pending()).toBe(0);
  });

  it('a holder that dies while asked: binds once its port is free', async () => {
    let free = false;
    const s = setup({ looks: [memberMeta(HOLDER, 4001)], answers: [{ kind: 'unreachable', reason: 'socket hang up' }], held: () => !free });
    await settle();
    expect(s.outcome()).toBe('pending');
    free = true;
    await s.clock.advanceSettled(PORT_CLAIM_DEFAULTS.retryMinMs);
    await s.done;
    expect(s.outcome()).toEqual(ADDRESS);
  });

  it('gives up at once on a refusal, or a server of another cluster, warning only when it asked', async () => {
    const refused = setup({ looks: [memberMeta(HOLDER, 4001)], answers: [{ kind: 'refused', reason: 'HTTP 403: cluster secret not proven' }] });
    await refused.done;
    expect(refused.outcome()).toBeUndefined();
    await refused.log.seen('server.port_claim_failed', { level: 'warn', reason: 'its holder refused: HTTP 403: cluster secret not proven' });
    const other = setup({ looks: [memberMeta(HOLDER, 4001, 'c2')] });
    await other.done;
    expect(other.outcome()).toBeUndefined();
    expect(other.asked).toEqual([]);
    expect(other.binds()).toBe(0);
  });

  it('another bind error ends the claim with that error', async () => {
    const s = setup({
      looks: [{ ok: false, url: 'http://127.0.0.1:4000', kind: 'unreachable', reason: 'refused', refused: true }],
      bindError: Object.assign(new Error('listen EACCES'), { code: 'EACCES' }),
    });
    await s.clock.advanceSettled(PORT_CLAIM_DEFAULTS.retryMinMs);
    await s.done;
    expect(s.outcome()).toMatchObject({ code: 'EACCES' });
    expect(s.clock.pending()).toBe(0);
  });
});

describe("the holder's answers", () => {
  it('200 released; 400, 403, 404, 405 refused; 409, 5xx and the rest: look again later', () => {
    expect(askOutcome(200, '{"released":true,"port":4000}')).toEqual({ kind: 'released' });
    expect(askOutcome(403, '{"error":"cluster secret not proven"}')).toEqual({ kind: 'refused', reason: 'HTTP 403: cluster secret not proven' });
    for (const status of [400, 404, 405]) expect(askOutcome(status, '')).toMatchObject({ kind: 'refused' });
    for (const status of [409, 413, 500, 503, 0]) expect(askOutcome(status, 'not json')).toMatchObject({ kind: 'busy' });
  });
});

describe('a holder that never finishes its answer', () => {
  it('is given up on: the claim ends instead of hanging the start', async () => {
    // Answers the release request with a 200 whose body never ends, a byte at a time: an idle
    // time-out never fires on it, and only a bound on the whole request ends it.
    const sockets = new Set<import('node:net').Socket>();
    const trickles = new Set<NodeJS.Timeout>();
    const holder = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'application/json' });
      trickles.add(setInterval(() => response.write(' '), 100));
    });
    holder.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const holderPort = (holder.address() as AddressInfo).port;
    const log = recordingLogger();
    try {
      const outcome = await claimPort(
        {
          host: '127.0.0.1',
          port: PORT,
          clusterId: 'c1',
          serverId: `127.0.0.1:${PORT}`,
          secure: false,
          releaseRequest: (to, port) => ({ clusterId: 'c1', serverId: `127.0.0.1:${PORT}`, to, port, timestamp: 1, proof: 'p' }),
          logger: log.logger,
          config: { timeoutMs: 1500 },
          probe: async () => memberMeta(`127.0.0.1:${holderPort}`, holderPort),
        },
        async () => {
          throw inUse();
        },
      );
      expect(outcome).toBeUndefined();
      await log.seen('server.port_claim_failed');
    } finally {
      for (const trickle of trickles) clearInterval(trickle);
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 20_000);
});
