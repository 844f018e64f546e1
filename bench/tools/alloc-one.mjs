// Bytes allocated per request by one subject under one load, by allocation site (sampled every
// 512 bytes, short-lived objects included), from a profile taken inside the server process.
//
//   node bench/tools/alloc-one.mjs <server> <ws|loop> <clients> <skills> <concurrency> [top]
//
// e.g. node bench/tools/alloc-one.mjs mdp ws 1 20 32
// SURVIVORS=1 counts only objects that outlived a young-generation GC (promoted: what makes
// scavenges and old-space collections cost more), by the site that allocated them.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subject } from '../dist/subjects.js';
import { LoadGenerator } from '../dist/load-generator.js';
import { stopAll } from '../dist/proc.js';

const [server, transport, clients, skills, concurrency, top = '30'] = process.argv.slice(2);
const population = { prefix: 'c', clients: Number(clients), skills: Number(skills) };
const dir = mkdtempSync(join(tmpdir(), 'mdp-alloc-'));
const out = join(dir, 'profile.json');
const sampleMs = Number(process.env.SAMPLE_MS ?? 3000);
const subject = await Subject.start({ label: server, server, transport, population }, {});
const loadgen = new LoadGenerator();
let requests = 0;
try {
  const load = (durationMs) => loadgen.run({ port: subject.server.port, population, concurrency: Number(concurrency), durationMs });
  await load(2000);
  // Sampled: one measured run after a 2 s warm-up (start-up and registration are not in it).
  await subject.server.child.call('startAllocations', { intervalBytes: 512, survivorsOnly: process.env.SURVIVORS === '1' });
  const result = await load(sampleMs);
  await subject.server.child.call('stopAllocations', { file: out }, 60000);
  requests = result.requests;
} finally {
  await subject.stop();
  await stopAll();
}
const profile = JSON.parse(readFileSync(out, 'utf8'));
rmSync(dir, { recursive: true, force: true });
const sites = new Map();
let total = 0;
const frameName = (f) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(packages|apps|node_modules\/\.pnpm)\//, '')}:${f.lineNumber + 1}`;
const walk = (node, stack) => {
  const here = [frameName(node.callFrame), ...stack];
  if (node.selfSize) {
    const key = here.slice(0, Number(process.env.DEPTH ?? 3)).join(' < ');
    sites.set(key, (sites.get(key) ?? 0) + node.selfSize);
    total += node.selfSize;
  }
  for (const child of node.children) walk(child, here);
};
walk(profile.head, []);
console.log(
  `${server} ${transport} ${clients}×${skills} c${concurrency}: ${requests} requests, ${(total / requests).toFixed(0)} B ${process.env.SURVIVORS === '1' ? 'surviving a young GC' : 'allocated'} per request`,
);
for (const [key, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) console.log(`${(bytes / requests).toFixed(0).padStart(7)} B  ${key}`);
