// What the bus adds to a bare nats.js round trip, in one process: two `@mdp/bus-nats` buses (a
// caller node and a holder node whose one client answers a skill read with fixed text) against two
// plain nats.js connections (a responder publishing a constant answer to the reply subject, a
// requester with one reply subscription), on one nats-server, alternated round by round. Both sides
// live in this process, so every round trip wakes it the same number of times in both modes: the
// difference of CPU per round trip is the JS the bus runs around nats.js (both sides), not the
// cost of waking a process.
//
//   pnpm build && node bench/tools/bus-floor.mjs [seconds per run (3)] [rounds (3)] [concurrency (1)]
//
// Needs /usr/sbin/nats-server (or NATS_SERVER=<path>).
import { createNatsBus } from '../../packages/bus-nats/dist/index.js';
import { CALL as call, SKILL, barePair, measure, median, startNats } from './floor-kit.mjs';

const seconds = Number(process.argv[2] ?? 3);
const rounds = Number(process.argv[3] ?? 3);
const concurrency = Number(process.argv[4] ?? 1);
// A pause after each round trip, ms (0: none): paced runs wake the process as rarely as a fleet's c1 does.
const paceMs = Number(process.argv[5] ?? 0);
const nats = await startNats('bus-floor');
const { url } = nats;

// --- the bus: node b holds client `c-1`; node a calls it
const skillDescriptor = (id) => ({
  id,
  name: id,
  version: '1.0.0',
  paths: [{ type: 'skill', path: '/s0/skill.md', description: 'a skill', contentType: 'text/markdown' }],
});
const handlers = (answer) => ({
  call: async () => answer,
  descriptor: (id) => (id === 'c-1' ? skillDescriptor(id) : undefined),
  replaced: () => undefined,
});
const ready = (bus) => new Promise((resolve) => bus.onStatus((s) => s.type === 'ready' && resolve()));
/** Two nodes of one build on a prefix of their own; the round trip a call of node a to b's client. */
const pair = async (create, prefix) => {
  const a = create({ servers: url, nodeId: 'node-a', prefix }, handlers({ ok: true, data: SKILL }));
  const b = create({ servers: url, nodeId: 'node-b', prefix }, handlers({ ok: true, data: SKILL }));
  await Promise.all([ready(a), ready(b), a.start(), b.start()]);
  b.announce({ descriptor: skillDescriptor('c-1'), principal: undefined, registeredAt: Date.now(), transport: 'websocket', secure: false, authSource: 'none' });
  while (a.resolve('c-1') === undefined) await new Promise((r) => setTimeout(r, 20));
  const once = async () => {
    const outcome = await a.call('c-1', call, { timeoutMs: 30_000 });
    if (!outcome.ok) throw new Error(JSON.stringify(outcome));
  };
  return { once, close: () => Promise.all([a.close(), b.close()]) };
};
const current = await pair(createNatsBus, 'floor');
const busOnce = current.once;
// BUS_FLOOR_BASE=<another build's packages/bus-nats/dist>: its buses too, as mode `base` (an A/B in one process).
const base = process.env.BUS_FLOOR_BASE ? await pair((await import(join(process.env.BUS_FLOOR_BASE, 'index.js'))).createNatsBus, 'floor-base') : undefined;

// --- bare nats.js: the same subjects' shape, a constant answer
const bare = await barePair(url, 'floor-bare');
const bareOnce = bare.once;
const run = (once, ms) => measure(once, ms, concurrency, paceMs);

const modes = { bare: bareOnce, bus: busOnce, ...(base ? { base: base.once } : {}) };
const only = process.env.BUS_FLOOR_ONLY;
await run(bareOnce, 1000);
await run(busOnce, 1000);
if (base) await run(base.once, 1000);
const results = { bare: [], bus: [], base: [] };
for (let r = 0; r < rounds; r++) {
  const order = base ? ['bare', 'base', 'bus'] : ['bare', 'bus'];
  for (const name of (r % 2 === 0 ? order : [...order].reverse()).filter((m) => !only || m === only)) {
    const figures = await run(modes[name], seconds * 1000);
    results[name].push(figures);
    console.log(`round ${r + 1} ${name}: ${figures.perSec.toFixed(0)} round trips/s, ${figures.usPer.toFixed(1)} µs CPU each`);
  }
}
if (only) process.exit(0);
const bareUs = median(results.bare.map((f) => f.usPer));
const busUs = median(results.bus.map((f) => f.usPer));
console.log(
  `c${concurrency}${paceMs ? `, ${paceMs} ms pause` : ''}: bare ${bareUs.toFixed(1)} µs, bus ${busUs.toFixed(1)} µs per round trip (this process: both sides); the bus adds ${(busUs - bareUs).toFixed(1)} µs`,
);

await Promise.all([current.close(), base?.close(), bare.close()]);
await nats.stop();
