// What each layer a server runs around the bus adds to a remote skill read, in one process: the
// bus-floor's pair of `@mdp/bus-nats` nodes (tools/bus-floor.mjs), then the same pair with more of
// the server stacked on each side, one mode per layer, each on a bus pair (prefix) of its own, on
// one nats-server, alternated round by round:
//
//   bare     two plain nats.js connections (a responder publishing a constant answer)
//   bus      two buses; the holder's handler answers with a constant outcome (bus-floor's `bus`)
//   holder   + the holder's handler is what apps/server/src/features/bus.ts runs: a core Router's
//            `invokeHere` to a registered client on a fake session transport that answers each
//            `callClient` in a microtask (a websocket client with no socket: its frame's cost is
//            in a local read too, so it is not part of remote − local)
//   core     + the caller is a core Router with the bus attached as its fleet directory (the
//            feature's `directoryOf`): `router.invoke` of the skill's path (RemoteClients.dispatch)
//   gateway  + the caller is the skill gateway's `handleSkillRead` on that Router (the remote
//            branch of a skill route: locate, cached catalog, dispatch, the answer's response)
//
// Every mode lives in this process and wakes it alike, so each difference between neighbouring
// modes is the CPU of that layer's JS per round trip (both sides), not of waking a process.
//
//   pnpm build && node bench/tools/bus-layers.mjs [seconds per run (3)] [rounds (3)] [concurrency (1)] [pause ms (0)]
//
// BUS_FLOOR_BASE=<another build's repository root>: that build's bus, core and gateway as modes
// `base-holder` and `base-gateway` beside this build's (an A/B in one process).
// BUS_LAYERS_MODES=bare,gateway,…: only these modes. BUS_LAYERS_JS=1: first the layers' JS alone
// (no NATS: see jsPass). Needs /usr/sbin/nats-server (or NATS_SERVER).
import { join, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CALL as call, SKILL, barePair, measure, median, startNats } from './floor-kit.mjs';

const root = resolvePath(new URL('../..', import.meta.url).pathname);

const seconds = Number(process.argv[2] ?? 3);
const rounds = Number(process.argv[3] ?? 3);
const concurrency = Number(process.argv[4] ?? 1);
// A pause after each round trip, ms (0: none): paced runs wake the process as rarely as a fleet's c1 does.
const paceMs = Number(process.argv[5] ?? 0);

/** One build's modules: bus, core, skill gateway. */
const build = async (dir) => ({
  bus: await import(pathToFileURL(join(dir, 'packages/bus-nats/dist/index.js')).href),
  core: await import(pathToFileURL(join(dir, 'packages/core/dist/index.js')).href),
  gateway: await import(pathToFileURL(join(dir, 'packages/skills-gateway/dist/index.js')).href),
});
const here = await build(root);
const base = process.env.BUS_FLOOR_BASE ? await build(resolvePath(process.env.BUS_FLOOR_BASE)) : undefined;

const nats = await startNats('bus-layers');
const { url } = nats;

const descriptor = (id) => ({
  id,
  name: id,
  version: '1.0.0',
  paths: [{ type: 'skill', path: '/s0/skill.md', description: 'a skill', contentType: 'text/markdown' }],
});
const { headers } = call;
const ready = (bus) => new Promise((resolve) => bus.onStatus((s) => s.type === 'ready' && resolve()));

/** A session transport whose client answers every call with the skill text, a microtask later. */
class AnsweringTransport {
  kind = 'websocket';
  wantsPing = false;
  session = undefined;
  send(message) {
    if (message.type !== 'callClient') return;
    queueMicrotask(() => this.session.handle({ type: 'callClientResult', requestId: message.requestId, ok: true, data: SKILL }));
  }
  close() {}
}

/** The feature's `directoryOf` (apps/server/src/features/bus.ts): the bus as core's fleet directory. */
const remoteOf = (client) =>
  client && {
    id: client.clientId,
    node: client.node,
    principal: client.principal,
    registeredAt: client.registeredAt,
    digest: client.digest,
    transport: client.transport,
    secure: client.secure,
    authSource: client.authSource,
    origin: client.origin,
  };
const directoryOf = (bus) => ({
  resolve: (clientId) => remoteOf(bus.resolve(clientId)),
  *list() {
    for (const client of bus.remoteClients()) yield remoteOf(client);
  },
  descriptor: (clientId) => bus.descriptor(clientId),
  cachedDescriptor: (clientId) => bus.cachedDescriptor(clientId),
  call: (clientId, c, options) => bus.call(clientId, c, options),
  onChange: (listener) => bus.onChange(listener),
});

const observed = { calls: 0 };
/** A router as the server makes one (context.ts): with a call-end observer. */
const routerOf = (lib) => new lib.core.Router({ onCallEnd: () => (observed.calls += 1) });

/**
 * Node a calls node b's client `c-1`. `holder`: b's handler goes through a core Router (else a
 * constant outcome); `caller`: 'bus' (bus.call), 'core' (router.invoke) or 'gateway' (handleSkillRead).
 */
const pair = async (lib, prefix, { holder, caller }) => {
  const routerA = routerOf(lib);
  const routerB = routerOf(lib);
  const handlersB = holder
    ? {
        call: (clientId, c, { timeoutMs, signal }) =>
          routerB.invokeHere(clientId, c.method, c.path, { query: c.query, body: c.body, headers: c.headers, auth: c.auth, timeoutMs, signal, route: 'bus' }),
        descriptor: (clientId) => routerB.getClient(clientId)?.descriptor,
        replaced: () => undefined,
      }
    : { call: async () => ({ ok: true, data: SKILL }), descriptor: (id) => (id === 'c-1' ? descriptor(id) : undefined), replaced: () => undefined };
  const handlersA = {
    call: async () => ({ ok: false, source: 'server', error: { code: 'not_found', message: 'none' } }),
    descriptor: () => undefined,
    replaced: () => undefined,
  };
  const a = lib.bus.createNatsBus({ servers: url, nodeId: 'node-a', prefix }, handlersA);
  const b = lib.bus.createNatsBus({ servers: url, nodeId: 'node-b', prefix }, handlersB);
  await Promise.all([ready(a), ready(b), a.start(), b.start()]);
  if (holder) {
    const transport = new AnsweringTransport();
    transport.session = routerB.openSession(transport);
    transport.session.handle({ type: 'registerClient', client: descriptor('c-1') });
    const client = routerB.getClient('c-1');
    if (!client) throw new Error('c-1 did not register on the holder router');
    b.announce({
      descriptor: client.descriptor,
      principal: client.principal,
      registeredAt: client.registeredAt,
      transport: client.transportKind,
      secure: false,
      authSource: client.authSource,
    });
  } else {
    b.announce({ descriptor: descriptor('c-1'), principal: undefined, registeredAt: Date.now(), transport: 'websocket', secure: false, authSource: 'none' });
  }
  while (a.resolve('c-1') === undefined) await new Promise((r) => setTimeout(r, 20));
  const detach = routerA.fleet.attach(directoryOf(a));
  const request = { method: 'GET', pathname: '/skills/c-1/s0/skill.md', query: {}, headers, auth: undefined };
  const check = (outcome) => {
    if (!outcome.ok) throw new Error(JSON.stringify(outcome));
  };
  const once =
    caller === 'gateway'
      ? async () => {
          const response = await lib.gateway.handleSkillRead(routerA, request);
          if (response.status !== 200) throw new Error(`${prefix}: ${response.status} ${JSON.stringify(response.headers)}`);
        }
      : caller === 'core'
        ? async () => check(await routerA.invoke('c-1', 'GET', '/s0/skill.md', { headers, route: 'skill' }))
        : async () => check(await a.call('c-1', call, { timeoutMs: 30_000 }));
  // The gateway's first read fetches the catalog; the measured ones find it cached.
  await once();
  return {
    once,
    close: async () => {
      detach();
      await Promise.all([a.close(), b.close()]);
      await Promise.all([routerA.close(), routerB.close()]);
    },
  };
};

// --- the same layers with no NATS and no socket (BUS_LAYERS_JS=1): node a's directory calls node
// b's router in this turn, as the test kit's PeerDirectory does. Hot loops of one call at a time:
// the layers' JS alone, warm, with no wake-up between a call and its answer (a lower bound).
const jsPass = async (lib) => {
  const routerA = routerOf(lib);
  const routerB = routerOf(lib);
  const transport = new AnsweringTransport();
  transport.session = routerB.openSession(transport);
  transport.session.handle({ type: 'registerClient', client: descriptor('c-1') });
  const info = routerB.getClient('c-1');
  const remote = {
    id: 'c-1',
    node: 'node-b',
    principal: info.principal,
    registeredAt: info.registeredAt,
    digest: 'd',
    transport: 'websocket',
    secure: false,
    authSource: 'none',
  };
  const hold = (clientId, c, { timeoutMs, signal }) =>
    routerB.invokeHere(clientId, c.method, c.path, { query: c.query, body: c.body, headers: c.headers, auth: c.auth, timeoutMs, signal, route: 'bus' });
  const detach = routerA.fleet.attach({
    resolve: (clientId) => (clientId === 'c-1' ? { ...remote } : undefined),
    *list() {
      yield remote;
    },
    descriptor: async () => info.descriptor,
    cachedDescriptor: (clientId) => (clientId === 'c-1' ? info.descriptor : undefined),
    call: (clientId, c, options) => hold(clientId, c, options),
    onChange: () => () => undefined,
  });
  const request = { method: 'GET', pathname: '/skills/c-1/s0/skill.md', query: {}, headers, auth: undefined };
  const constant = { ok: true, data: SKILL };
  const jsModes = {
    'js-none': async () => constant,
    'js-holder': async () => hold('c-1', call, { timeoutMs: 30_000 }),
    'js-core': async () => routerA.invoke('c-1', 'GET', '/s0/skill.md', { headers, route: 'skill' }),
    'js-gateway': async () => {
      const response = await lib.gateway.handleSkillRead(routerA, request);
      if (response.status !== 200) throw new Error(`js-gateway: ${response.status}`);
    },
  };
  const perOp = async (once, ms) => {
    const cpu0 = process.cpuUsage();
    const end = performance.now() + ms;
    let count = 0;
    while (performance.now() < end) {
      for (let i = 0; i < 100; i++) await once();
      count += 100;
    }
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / count;
  };
  for (const once of Object.values(jsModes)) await perOp(once, 500);
  const figures = Object.fromEntries(Object.keys(jsModes).map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) for (const [name, once] of Object.entries(jsModes)) figures[name].push(await perOp(once, 1000));
  console.log(`JS only, no NATS, one call at a time, medians of ${rounds} rounds × 1 s:`);
  let before;
  for (const [name, xs] of Object.entries(figures)) {
    const us = [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    console.log(
      `  ${name.padEnd(11)} ${us.toFixed(2)} µs (${xs.map((x) => x.toFixed(2)).join(', ')})${before === undefined ? '' : `, +${(us - before).toFixed(2)} µs`}`,
    );
    before = us;
  }
  detach();
  await Promise.all([routerA.close(), routerB.close()]);
};
if (process.env.BUS_LAYERS_JS === '1') await jsPass(here).catch((error) => console.error('JS pass failed:', error));

// --- bare nats.js: the same subjects' shape, a constant answer
const bare = await barePair(url, 'layers-bare');
const bareOnce = bare.once;

const wanted = process.env.BUS_LAYERS_MODES?.split(',');
const want = (name) => !wanted || wanted.includes(name);
const pairs = {};
const layers = [
  ['bus', here, { holder: false, caller: 'bus' }],
  ['holder', here, { holder: true, caller: 'bus' }],
  ['core', here, { holder: true, caller: 'core' }],
  ['gateway', here, { holder: true, caller: 'gateway' }],
  ...(base
    ? [
        ['base-holder', base, { holder: true, caller: 'bus' }],
        ['base-gateway', base, { holder: true, caller: 'gateway' }],
      ]
    : []),
];
for (const [name, lib, shape] of layers) if (want(name)) pairs[name] = await pair(lib, `layers-${name}`, shape);
const modes = { ...(want('bare') ? { bare: bareOnce } : {}), ...Object.fromEntries(Object.entries(pairs).map(([name, p]) => [name, p.once])) };

const run = (once, ms) => measure(once, ms, concurrency, paceMs);

for (const once of Object.values(modes)) await run(once, 1000);
const names = Object.keys(modes);
const results = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 === 0 ? names : [...names].reverse()) {
    const figures = await run(modes[name], seconds * 1000);
    results[name].push(figures);
    console.log(`round ${r + 1} ${name}: ${figures.perSec.toFixed(0)} round trips/s, ${figures.usPer.toFixed(1)} µs CPU each`);
  }
}
console.log(`c${concurrency}${paceMs ? `, ${paceMs} ms pause` : ''}, medians of ${rounds} rounds × ${seconds} s (this process: both sides):`);
// A layer's cost: its mode minus the mode above it, paired within each round (run next to each
// other, so a change of the machine's load between rounds cancels), median over the rounds.
let previous;
for (const name of names) {
  const us = median(results[name].map((f) => f.usPer));
  const rate = median(results[name].map((f) => f.perSec));
  const range = results[name].map((f) => f.usPer.toFixed(1)).join(', ');
  let layer = '';
  if (previous !== undefined) {
    const paired = results[name].map((f, r) => f.usPer - results[previous][r].usPer);
    layer = `, over ${previous}: ${median(paired).toFixed(1)} µs (rounds ${paired.map((d) => d.toFixed(1)).join(', ')})`;
  }
  console.log(`  ${name.padEnd(13)} ${us.toFixed(1).padStart(7)} µs (${range}) ${rate.toFixed(0)}/s${layer}`);
  previous = name;
}

await Promise.all([...Object.values(pairs).map((p) => p.close()), bare.close()]);
await nats.stop();
