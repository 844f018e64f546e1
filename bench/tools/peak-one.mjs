// Peak RSS of one subject under one load, and where it is (heap, external, the rest), sampled.
//
//   node bench/tools/peak-one.mjs <server> <ws|loop> <clients> <skills> <concurrency> <seconds>
import { readFileSync, writeFileSync } from 'node:fs';
import { Subject } from '../dist/subjects.js';
import { LoadGenerator } from '../dist/load-generator.js';
import { stopAll } from '../dist/proc.js';

const [server, transport, clients, skills, concurrency, seconds] = process.argv.slice(2);
const nodeArgs = (process.env.NODE_ARGS ?? '').split(' ').filter(Boolean);
const population = { prefix: 'c', clients: Number(clients), skills: Number(skills) };
const subject = await Subject.start({ label: server, server, transport, population }, { nodeArgs });
const pid = subject.server.child.pid;
// With --trace-gc-nvp among the node flags: bytes promoted by scavenges during the measured load.
let gcText = '';
let logging = false;
subject.server.child.proc.stdout.on('data', (chunk) => {
  if (logging) gcText += chunk;
});
const promoted = () => {
  let bytes = 0,
    scavenges = 0,
    marks = 0,
    markMs = 0;
  for (const line of gcText.split('\n')) {
    const kind = /gc=(\w+)/.exec(line)?.[1];
    if (kind === 's') {
      scavenges++;
      bytes += Number(/promoted=(\d+)/.exec(line)?.[1] ?? 0);
    } else if (kind === 'mc' || kind === 'ms') {
      marks++;
      markMs += Number(/pause=([\d.]+)/.exec(line)?.[1] ?? 0) + Number(/ incremental\.finalize=([\d.]+)/.exec(line)?.[1] ?? 0);
    }
  }
  return { bytes, scavenges, marks, markMs };
};
const status = () => {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(text)[1]) / 1024;
  return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
};
const mb = (b) => (b / 1048576).toFixed(1);
const loadgen = new LoadGenerator();
try {
  const s0 = status();
  const g0 = process.env.NO_GC ? await subject.server.usage() : await subject.server.collectedUsage();
  console.log(`registered: peak ${s0.hwm.toFixed(1)} MB; after GC rss ${mb(g0.rss)} heap ${mb(g0.heapUsed)} ext ${mb(g0.external)} ab ${mb(g0.arrayBuffers)}`);
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  let max = { rss: 0 };
  let stop = false;
  const sampler = (async () => {
    while (!stop) {
      const u = await subject.server.usage();
      if (u.rss > max.rss) max = u;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  logging = true;
  const result = await loadgen.run({ port: subject.server.port, population, concurrency: Number(concurrency), durationMs: Number(seconds) * 1000 });
  logging = false;
  stop = true;
  await sampler;
  const p = promoted();
  if (p.scavenges > 0)
    console.log(
      `promoted ${(p.bytes / 1048576).toFixed(1)} MB in ${p.scavenges} scavenges (${p.marks} mark-compacts, ${p.markMs.toFixed(0)} ms of main-thread pauses): ${(p.bytes / result.requests).toFixed(0)} B per read`,
    );
  const s1 = status();
  const u1 = await subject.server.usage();
  const g1 = await subject.server.collectedUsage();
  console.log(`after GC: rss ${mb(g1.rss)} heap ${mb(g1.heapUsed)} ext ${mb(g1.external)}`);
  console.log(
    `load: ${result.requests} reads p50 ${result.latency.p50} p99 ${result.latency.p99}, ${result.errors} errors; peak ${s1.hwm.toFixed(1)} MB (VmHWM); sampled max rss ${mb(max.rss)} heap ${mb(max.heapUsed)} ext ${mb(max.external)} ab ${mb(max.arrayBuffers)}; end rss ${mb(u1.rss)} heap ${mb(u1.heapUsed)}`,
  );
} finally {
  await subject.stop();
  await stopAll();
}
