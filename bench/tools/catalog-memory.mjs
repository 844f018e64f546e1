// What a byte of catalog costs the server in memory, by the catalog's shape: registers clients
// whose catalogs all have one shape until the server refuses the next (its total of catalog bytes,
// or of paths, is full), then reads the server's RSS and heap after full GCs (README "Security and
// limits", "Memory of catalogs").
//
//   node bench/tools/catalog-memory.mjs <description|endpoints|skills|empty-objects> [mdp-server flags…]
//
// e.g. node bench/tools/catalog-memory.mjs empty-objects --max-total-catalog-bytes 67108864
import { WebSocket } from 'ws';
import { RunningServer } from '../dist/subjects.js';
import { stopAll } from '../dist/proc.js';

const [shape = 'description', ...flags] = process.argv.slice(2);
const TEXT = 'x'.repeat(16_000);
const SCHEMA = {
  type: 'object',
  properties: { selector: { type: 'string', description: 'CSS selector' }, count: { type: 'integer', minimum: 0 } },
  required: ['selector'],
};
// Each under 1 MiB of JSON (the default --max-catalog-bytes and --max-message-bytes).
const SHAPES = {
  description: () => Array.from({ length: 60 }, (_, j) => ({ type: 'skill', path: `/s${j}/skill.md`, description: TEXT })),
  endpoints: () =>
    Array.from({ length: 3000 }, (_, j) => ({
      type: 'endpoint',
      method: 'POST',
      path: `/e${j}/act`,
      description: `Does thing ${j} to the page`,
      inputSchema: SCHEMA,
    })),
  skills: () => Array.from({ length: 9000 }, (_, j) => ({ type: 'skill', path: `/s${j}/skill.md` })),
  // 21,000 × `{},` is 63,000 characters: under --max-schema-length (65,536) per field.
  'empty-objects': () => Array.from({ length: 15 }, (_, j) => ({ type: 'skill', path: `/s${j}/skill.md`, extra: Array.from({ length: 21_000 }, () => ({})) })),
};
if (!(shape in SHAPES)) {
  console.error(`unknown shape ${shape}; one of ${Object.keys(SHAPES).join(', ')}`);
  process.exit(64);
}

const server = await RunningServer.start('mdp', 'catalog-memory', { extraArgs: flags });
const sockets = [];
try {
  const before = await server.collectedUsage();
  let refusal;
  for (let i = 0; refusal === undefined; i++) {
    const ws = new WebSocket(server.wsUrl, { maxPayload: 2 ** 30 });
    ws.on('error', () => {});
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('close', reject)));
    refusal = await new Promise((resolve) => {
      ws.once('close', (code, reason) => resolve(`client ${i}: ${code} ${reason}`));
      // The server handles a session's messages in order: the pong means the registration applied.
      ws.on('message', (data) => JSON.parse(String(data)).type === 'pong' && resolve(undefined));
      ws.send(JSON.stringify({ type: 'registerClient', client: { id: `c${i}`, name: `client ${i}`, paths: SHAPES[shape]() } }));
      ws.send(JSON.stringify({ type: 'ping', timestamp: 1 }));
    });
    sockets.push(ws);
  }
  const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
  const held = Number(/^mdp_catalog_bytes (\d+)/m.exec(metrics)?.[1]);
  const after = await server.collectedUsage();
  const mib = (bytes) => (bytes / 2 ** 20).toFixed(1);
  console.log(refusal);
  console.log(
    `${shape}: ${sockets.length - 1} clients, ${mib(held)} MiB of catalogs; RSS ${mib(before.rss)} → ${mib(after.rss)} MiB ` +
      `(+${mib(after.rss - before.rss)}, ${((after.rss - before.rss) / held).toFixed(2)} per byte), ` +
      `heap +${mib(after.heapUsed - before.heapUsed)} MiB (${((after.heapUsed - before.heapUsed) / held).toFixed(2)} per byte)`,
  );
} finally {
  for (const ws of sockets) ws.terminate();
  await stopAll();
}
