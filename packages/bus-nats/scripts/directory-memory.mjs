// Memory of the fleet directory per remote client, measured: N announcements of other nodes go
// through the same path as the KV watch's (JSON text → decodeAnnouncement → Directory), and the
// heap is compared before and after, with a full GC each time.
// Run: pnpm --filter @mdp/bus-nats build && node --expose-gc packages/bus-nats/scripts/directory-memory.mjs [N]
import { randomUUID, createHash } from 'node:crypto';
import { Directory, directoryConfig, FleetNames } from '../dist/index.js';
import { decodeAnnouncement, encodeAnnouncement } from '../dist/records.js';

if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const N = Number(process.argv[2] ?? 20_000);
const names = new FleetNames('mdp', 'node-self');
const directory = new Directory(directoryConfig('node-self', 'inc-self', { clientKey: (id) => names.clientKey(id) }));
directory.step({ type: 'connected' }, 0);
const nodes = ['node-b', 'node-c'];
let revision = 1;
for (const node of nodes) directory.step({ type: 'nodePut', beat: { node, incarnation: `${node}-inc`, ttlMs: 5000 }, revision: revision++ }, 0);
directory.step({ type: 'synced' }, 0);
// Texts as the watch delivers them, made before the first measurement.
const principals = Array.from({ length: 100 }, (_, i) => createHash('sha256').update(`p${i}`).digest('base64url'));
const texts = [];
for (let i = 0; i < N; i++) {
  const node = nodes[i % nodes.length];
  const clientId = `app-${randomUUID()}`;
  const announcement = {
    clientId,
    node,
    incarnation: `${node}-inc`,
    principal: principals[i % principals.length],
    digest: createHash('sha256').update(clientId).digest('base64url').slice(0, 22),
    registeredAt: Date.now(),
    transport: i % 2 ? 'websocket' : 'http-loop',
    secure: false,
    authSource: 'transport',
  };
  texts.push([names.clientKey(clientId), encodeAnnouncement(announcement)]);
}
gc();
gc();
const before = process.memoryUsage().heapUsed;
for (const [key, text] of texts) {
  const announcement = decodeAnnouncement(key, text);
  directory.step({ type: 'clientPut', announcement, revision: revision++ }, 1);
}
// The texts stay alive until the heap is measured: freeing them would be counted against the entries.
gc();
gc();
const after = process.memoryUsage().heapUsed;
let visible = 0;
for (const _ of directory.remoteClients()) visible++;
if (texts.length !== N) throw new Error('texts');
console.log(JSON.stringify({ remoteClients: visible, heapBytes: after - before, bytesPerClient: Math.round((after - before) / N) }));
