// Leak check of upstream mirroring: a hub and a server that mirrors its clients into it
// (`--cluster-mode proxy-required --upstream-url <hub>`). 50 clients on the mirroring server are
// read through the hub (as `<serverId>.<clientId>`), and registration churn on the mirroring
// server makes mirrors come and go. After each round, both heaps after full GCs; a heap that keeps
// growing round after round is a leak, and so is a count of open sockets that does.
//
//   node bench/tools/mirror-soak.mjs [rounds=6] [read seconds=10]
import { readdirSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { ClientProcess, churn } from '../dist/subjects.js';
import { LoadGenerator } from '../dist/load-generator.js';
import { Child, stopAll } from '../dist/proc.js';

const [rounds = '6', seconds = '10'] = process.argv.slice(2);
const cli = new URL('../../apps/server/dist/cli.js', import.meta.url).pathname;
const nodeArgs = ['--expose-gc', '--import', pathToFileURL(new URL('../dist/probe.js', import.meta.url).pathname).href];
const start = async (label, args) => {
  const child = new Child(label, cli, ['--host', '127.0.0.1', '--port', '0', ...args], { nodeArgs, cwd: tmpdir() });
  const match = await child.waitForLine(/listening on http:\/\/127\.0\.0\.1:(\d+)/, 15000);
  return { child, port: Number(match[1]) };
};
// Open sockets of a server process (Linux): mirrors that are never closed would pile up here.
const sockets = (server) =>
  readdirSync(`/proc/${server.child.proc.pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${server.child.proc.pid}/fd/${fd}`).startsWith('socket:');
    } catch {
      return false;
    }
  }).length;
const heapMB = async (server) => +((await server.child.call('gc')).heapUsed / 1e6).toFixed(2);

const hub = await start('hub', ['--cluster-mode', 'standalone']);
const edge = await start('edge', [
  '--server-id',
  'edge',
  '--cluster-mode',
  'proxy-required',
  '--upstream-url',
  `http://127.0.0.1:${hub.port}`,
  '--discover-attempts',
  '0',
]);
const clients = new ClientProcess('edge');
const loadgen = new LoadGenerator();
const population = { prefix: 'c', clients: 50, skills: 5 };
const throughHub = { ...population, prefix: 'edge.c' };
const read = (durationMs) => loadgen.run({ port: hub.port, population: throughHub, concurrency: 32, durationMs });
try {
  await clients.connect(`ws://127.0.0.1:${edge.port}`, 'ws', population, 60000);
  // Mirrors register in the background: wait until reads through the hub stop failing.
  for (let i = 0; i < 50 && (await read(200)).errors > 0; i++) await new Promise((r) => setTimeout(r, 100));
  for (let round = 0; round < Number(rounds); round++) {
    const reads = await read(Number(seconds) * 1000);
    const registrations = await churn({ spec: { label: 'edge' }, clients, server: { wsUrl: `ws://127.0.0.1:${edge.port}` } }, 8, 3000, 5);
    // Let the churned clients' mirrors close on the hub before measuring.
    await new Promise((r) => setTimeout(r, 1000));
    console.log(
      JSON.stringify({
        round,
        reads: reads.requests,
        readErrors: reads.errors,
        registrations: registrations.registrations,
        registrationErrors: registrations.errors,
        hubHeapMB: await heapMB(hub),
        edgeHeapMB: await heapMB(edge),
        hubSockets: sockets(hub),
        edgeSockets: sockets(edge),
      }),
    );
  }
} finally {
  await clients.stop();
  await hub.child.stop();
  await edge.child.stop();
  await stopAll();
}
