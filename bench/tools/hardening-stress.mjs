// Stress variant of the hardening suite (apps/server/test/hardening): the findings of issue 18 at
// the stress run's own sizes, against the built binary with its default limits (standalone). Each
// scenario runs on a fresh server; figures are the server's own (RSS and heap through the bench's
// preloaded probe, peak RSS from /proc/<pid>/status VmHWM), printed as one JSON line per scenario.
// Linux only (VmHWM). Needs `pnpm --filter @mdp/bench... build` first.
//
//   node bench/tools/hardening-stress.mjs [scenario …]
//   scenarios: slow-reader idle-ws loop-sessions pending timeouts unread burst catalog-mass
//              silent-tcp (default: all)
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { Child, stopAll } from '../dist/proc.js';

const cli = new URL('../../apps/server/dist/cli.js', import.meta.url).pathname;
const nodeArgs = ['--expose-gc', '--import', pathToFileURL(new URL('../dist/probe.js', import.meta.url).pathname).href];
const MB = 1024 * 1024;
const mb = (bytes) => +(bytes / MB).toFixed(1);

async function startServer(args = []) {
  const child = new Child('mdp-server', cli, ['--host', '127.0.0.1', '--port', '0', '--cluster-mode', 'standalone', '--log-level', 'warn', ...args], {
    nodeArgs,
    cwd: tmpdir(),
  });
  const match = await child.waitForLine(/listening on http:\/\/127\.0\.0\.1:(\d+)/, 15000);
  const port = Number(match[1]);
  const peakRss = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) * 1024;
  return { child, port, http: `http://127.0.0.1:${port}`, ws: `ws://127.0.0.1:${port}/`, peakRss };
}

/** A websocket client registering `id` with skill /s/skill.md, answering with `answer` (or not at all when undefined). */
async function wsClient(url, id, answer) {
  const ws = new WebSocket(url);
  ws.on('error', () => {});
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('close', () => reject(new Error(`${id} closed before opening`)));
  });
  const state = { ws, calls: 0, closed: new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) }))) };
  ws.on('message', (data) => {
    const message = JSON.parse(String(data));
    if (message.type !== 'callClient') return;
    state.calls++;
    if (answer !== undefined) ws.send(JSON.stringify({ type: 'callClientResult', requestId: message.requestId, ok: true, data: answer }));
  });
  ws.send(JSON.stringify({ type: 'registerClient', client: { id, name: id, paths: [{ type: 'skill', path: '/s/skill.md' }] } }));
  await new Promise((resolve) => {
    ws.on('message', function onPong(data) {
      if (JSON.parse(String(data)).type !== 'pong') return;
      ws.off('message', onPong);
      resolve();
    });
    ws.send(JSON.stringify({ type: 'ping', timestamp: 1 }));
  });
  return state;
}

/** GET `path`; resolves with the status, 0 for a request that gave up or failed. */
function get(base, path, { agent, abortAfterMs, method = 'GET', headers } = {}) {
  return new Promise((resolve) => {
    const req = request(new URL(path, base), { agent, method, headers, signal: abortAfterMs ? AbortSignal.timeout(abortAfterMs) : undefined }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** A separate process: GET /mdp/meta every 20 ms for 5 s from 1.5 s on; prints the latencies' max and median. */
const PROBE_META = `
import { get } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
const base = process.argv[1];
const once = () => new Promise((resolve) => { const start = performance.now(); get(base + '/mdp/meta', (res) => { res.resume(); res.on('end', () => resolve(performance.now() - start)); }); });
await sleep(1500);
const ms = [];
for (let end = performance.now() + 5000; performance.now() < end; ) { ms.push(await once()); await sleep(20); }
ms.sort((a, b) => a - b);
console.log(JSON.stringify({ samples: ms.length, maxMs: +ms.at(-1).toFixed(1), medianMs: +ms[ms.length >> 1].toFixed(1) }));
`;

/** Open sockets of a process (Linux /proc). */
const openSockets = (pid) =>
  readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:');
    } catch {
      return false;
    }
  }).length;

const count = (statuses) => {
  const counts = {};
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
  return counts;
};

const scenarios = {
  /** Finding 1: a paused websocket client, ~1,000 reads/s for 30 s, each reader gives up after 200 ms. */
  async 'slow-reader'() {
    const server = await startServer();
    const slow = await wsClient(server.ws, 'slow', 'x');
    const healthy = await wsClient(server.ws, 'healthy', 'fine');
    slow.ws._socket.pause();
    const agent = new Agent({ keepAlive: true, maxSockets: 512 });
    const pending = [];
    let rssMax = 0;
    const healthyStatuses = [];
    const start = Date.now();
    for (let tick = 0; Date.now() - start < 30_000; tick++) {
      // 1,000 reads per second of elapsed time, catching up when the loop ran late.
      while (pending.length < Date.now() - start) pending.push(get(server.http, '/skills/slow/s', { agent, abortAfterMs: 200 }));
      if (tick % 100 === 0) {
        healthyStatuses.push(await get(server.http, '/skills/healthy/s'));
        rssMax = Math.max(rssMax, (await server.child.call('usage')).rss);
      }
      await sleep(10);
    }
    const statuses = await Promise.all(pending);
    const afterFlood = await server.child.call('usage');
    await sleep(20_000);
    const held = await server.child.call('gc');
    slow.ws._socket.resume();
    const closed = await Promise.race([slow.closed, sleep(10_000).then(() => ({ code: 'still open after 10 s' }))]);
    const result = {
      reads: statuses.length,
      statuses: count(statuses.map((s) => (s === 0 ? 'gave up' : s))),
      healthyReads: count(healthyStatuses),
      peakRssMB: mb(server.peakRss()),
      sampledRssMaxMB: mb(rssMax),
      rssAfterFloodMB: mb(afterFlood.rss),
      heapUsed20sLaterMB: mb(held.heapUsed),
      clientClosed: closed,
      callsDeliveredToClient: slow.calls,
    };
    agent.destroy();
    healthy.ws.terminate();
    await server.child.stop();
    return result;
  },

  /** Finding 5: 15,000 websockets that never send a byte. */
  async 'idle-ws'() {
    const server = await startServer();
    const healthy = await wsClient(server.ws, 'healthy', 'fine');
    const outcomes = await Promise.all(
      Array.from(
        { length: 15_000 },
        () =>
          new Promise((resolve) => {
            const ws = new WebSocket(server.ws);
            ws.on('error', () => {});
            ws.once('unexpected-response', (_req, res) => resolve({ refused: res.statusCode }));
            ws.once('open', () => resolve({ ws, closed: new Promise((r) => ws.once('close', (code) => r(code))) }));
          }),
      ),
    );
    const healthyDuring = await get(server.http, '/skills/healthy/s');
    const rssWithIdle = (await server.child.call('usage')).rss;
    const started = Date.now();
    const closeCodes = await Promise.all(outcomes.filter((o) => o.ws).map((o) => o.closed));
    const allClosedAfterMs = Date.now() - started;
    const result = {
      accepted: closeCodes.length,
      refused: count(outcomes.filter((o) => o.refused).map((o) => o.refused)),
      closeCodes: count(closeCodes),
      allClosedAfterMs,
      healthyReadDuring: healthyDuring,
      healthyReadAfter: await get(server.http, '/skills/healthy/s'),
      rssWithIdleMB: mb(rssWithIdle),
      peakRssMB: mb(server.peakRss()),
    };
    healthy.ws.terminate();
    await server.child.stop();
    return result;
  },

  /** Finding 5: 200,000 HTTP loop connects from one address. */
  async 'loop-sessions'() {
    const server = await startServer();
    const healthy = await wsClient(server.ws, 'healthy', 'fine');
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const statuses = [];
    const start = Date.now();
    for (let i = 0; i < 200_000; i += 1000) {
      statuses.push(...(await Promise.all(Array.from({ length: 1000 }, () => get(server.http, '/mdp/http-loop/connect', { agent, method: 'POST' })))));
    }
    const seconds = (Date.now() - start) / 1000;
    const heap = (await server.child.call('gc')).heapUsed;
    const result = {
      connects: statuses.length,
      seconds,
      statuses: count(statuses),
      heapUsedMB: mb(heap),
      peakRssMB: mb(server.peakRss()),
      healthyRead: await get(server.http, '/skills/healthy/s'),
    };
    agent.destroy();
    healthy.ws.terminate();
    await server.child.stop();
    return result;
  },

  /** Finding 5: 20,000 reads to one client that never answers, 500 every 100 ms, each reader gives up after 2 s. */
  async pending() {
    const server = await startServer();
    const stuck = await wsClient(server.ws, 'stuck', undefined);
    const healthy = await wsClient(server.ws, 'healthy', 'fine');
    const agent = new Agent({ keepAlive: true, maxSockets: 4000 });
    const reads = [];
    let healthyDuring;
    for (let wave = 0; wave < 40; wave++) {
      for (let i = 0; i < 500; i++) reads.push(get(server.http, '/skills/stuck/s', { agent, abortAfterMs: 2000 }));
      if (wave === 20) healthyDuring = await get(server.http, '/skills/healthy/s');
      await sleep(100);
    }
    const statuses = await Promise.all(reads);
    const callsWhenReadersLeft = stuck.calls;
    // Every reader has gone: no call of theirs may reach the client any more.
    await sleep(2000);
    const result = {
      reads: statuses.length,
      statuses: count(statuses.map((s) => (s === 0 ? 'gave up' : s))),
      callsSentToClient: stuck.calls,
      callsSentAfterReadersLeft: stuck.calls - callsWhenReadersLeft,
      healthyReadDuring: healthyDuring,
      peakRssMB: mb(server.peakRss()),
    };
    agent.destroy();
    stuck.ws.terminate();
    healthy.ws.terminate();
    await server.child.stop();
    return result;
  },

  /**
   * Finding 5: 5,000 reads timing out together; /mdp/meta latency while they do, measured from a
   * process of its own (the readers' process is busy with 5,000 answers arriving at once).
   */
  async timeouts() {
    const server = await startServer(['--invocation-timeout-ms', '3000', '--max-pending-calls', '10000']);
    const stuck = await wsClient(server.ws, 'stuck', undefined);
    const agent = new Agent({ keepAlive: true, maxSockets: 5000 });
    const reads = Array.from({ length: 5000 }, () => get(server.http, '/skills/stuck/s', { agent }));
    // The calls are all out once the client has them; the event loop is measured from then on.
    while (stuck.calls < 5000) await sleep(50);
    await server.child.call('startLoopDelay');
    const prober = spawn(process.execPath, ['--input-type=module', '-e', PROBE_META, server.http], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    prober.stdout.on('data', (chunk) => (out += chunk));
    const statuses = await Promise.all(reads);
    await new Promise((resolve) => prober.once('exit', resolve));
    const loop = await server.child.call('loopDelay');
    agent.destroy();
    stuck.ws.terminate();
    await server.child.stop();
    return {
      reads: statuses.length,
      statuses: count(statuses),
      meta: JSON.parse(out),
      serverLoopDelayMaxMs: +loop.maxMs.toFixed(1),
      serverLoopDelayP99Ms: +loop.p99Ms.toFixed(1),
    };
  },

  /** Finding 4: 200 connections × 5 pipelined reads of 900 KB answers, never read. */
  async unread() {
    const server = await startServer();
    const big = await wsClient(server.ws, 'big', 'a'.repeat(900 * 1024));
    const before = (await server.child.call('gc')).rss;
    const sockets = [];
    for (let i = 0; i < 200; i++) {
      const socket = connect(server.port, '127.0.0.1');
      socket.on('error', () => {});
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(`GET /skills/big/s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(5));
      sockets.push({ socket });
    }
    await sleep(5000);
    const rssAt5s = (await server.child.call('usage')).rss;
    const socketsAt5s = openSockets(server.child.pid);
    // The answers are relayed one at a time per connection (at this machine's pace, ~20 s for all);
    // a connection whose answer the kernel cannot take is closed 30 s (the idle time-out) after.
    await sleep(75_000);
    const socketsAt80s = openSockets(server.child.pid);
    const held = await server.child.call('gc');
    const result = {
      connections: sockets.length,
      callsToClient: big.calls,
      rssBeforeMB: mb(before),
      rssAt5sMB: mb(rssAt5s),
      peakRssMB: mb(server.peakRss()),
      serverSocketsAt5s: socketsAt5s,
      serverSocketsAt80s: socketsAt80s,
      rssAt80sMB: mb(held.rss),
      heapAt80sMB: mb(held.heapUsed),
    };
    for (const { socket } of sockets) socket.destroy();
    big.ws.terminate();
    await server.child.stop();
    return result;
  },

  /** The last probe's bug A: 700 skill reads at once with 14 KB headers to a healthy client (about 20 MB of calls). */
  async burst() {
    const server = await startServer();
    const victim = await wsClient(server.ws, 'victim', 'ok');
    const agent = new Agent({ keepAlive: true, maxSockets: 1000 });
    const headers = { 'x-pad': 'p'.repeat(14_000) };
    const statuses = await Promise.all(Array.from({ length: 700 }, () => get(server.http, '/skills/victim/s', { agent, headers })));
    const result = {
      reads: statuses.length,
      statuses: count(statuses),
      callsAnswered: victim.calls,
      victimOpen: victim.ws.readyState === WebSocket.OPEN,
      readAfter: await get(server.http, '/skills/victim/s'),
      peakRssMB: mb(server.peakRss()),
    };
    agent.destroy();
    victim.ws.terminate();
    await server.child.stop();
    return result;
  },

  /** Catalog memory: 1,200 sessions registering 10,000 paths each (the cap in all: 250,000 paths). */
  async 'catalog-mass'() {
    const server = await startServer();
    const paths = Array.from({ length: 10_000 }, (_, i) => ({ type: 'endpoint', method: 'GET', path: `/area/${i}/item` }));
    const codes = [];
    const open = [];
    for (let i = 0; i < 1200; i++) {
      const ws = new WebSocket(server.ws);
      ws.on('error', () => {});
      await new Promise((resolve) => ws.once('open', resolve));
      const closed = new Promise((resolve) => ws.once('close', (code) => resolve(code)));
      ws.send(JSON.stringify({ type: 'registerClient', client: { id: `mass-${i}`, name: 'mass', paths } }));
      // Registered (a ping answered after it) or refused (closed).
      const pong = new Promise((resolve) => ws.once('message', resolve));
      ws.send(JSON.stringify({ type: 'ping', timestamp: 1 }));
      const outcome = await Promise.race([pong.then(() => 'registered'), closed]);
      codes.push(outcome);
      if (outcome === 'registered') open.push(ws);
    }
    const timed = async (path) => {
      const start = performance.now();
      const status = await get(server.http, path);
      return { status, ms: +(performance.now() - start).toFixed(1) };
    };
    const result = {
      sessions: codes.length,
      outcomes: count(codes),
      clients: await timed('/mdp/clients'),
      search: await timed('/mdp/paths?search=item'),
      meta: await timed('/mdp/meta'),
      rssMB: mb((await server.child.call('gc')).rss),
      peakRssMB: mb(server.peakRss()),
    };
    for (const ws of open) ws.terminate();
    await server.child.stop();
    return result;
  },

  /** Plain TCP: 16,000 connections that never send a byte (the cap: 15,000 per port). */
  async 'silent-tcp'() {
    const server = await startServer();
    const healthy = await wsClient(server.ws, 'healthy', 'fine');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const before = await get(server.http, '/skills/healthy/s', { agent });
    const sockets = [];
    let dropped = 0;
    for (let i = 0; i < 16_000; i++) {
      const socket = connect(server.port, '127.0.0.1');
      socket.on('error', () => {});
      socket.once('close', () => dropped++);
      sockets.push(socket);
      if (i % 500 === 499) await sleep(10);
    }
    await sleep(1000);
    const result = {
      opened: sockets.length,
      closedByServer: dropped,
      serverSockets: openSockets(server.child.pid),
      keptConnectionRead: await get(server.http, '/skills/healthy/s', { agent }),
      healthyBefore: before,
      peakRssMB: mb(server.peakRss()),
    };
    for (const socket of sockets) socket.destroy();
    await sleep(1000);
    result.newConnectionReadAfter = await get(server.http, '/skills/healthy/s');
    agent.destroy();
    healthy.ws.terminate();
    await server.child.stop();
    return result;
  },
};

const chosen = process.argv.slice(2);
try {
  for (const name of chosen.length > 0 ? chosen : Object.keys(scenarios)) {
    if (!scenarios[name]) throw new Error(`unknown scenario ${name}; one of ${Object.keys(scenarios).join(', ')}`);
    console.log(JSON.stringify({ scenario: name, ...(await scenarios[name]()) }));
  }
} finally {
  await stopAll();
}
