// Where one subject's server spends its CPU during one measured run only (V8's CPU profiler through
// the probe, started after a warm-up: no start-up, registration or module loading in it), per request.
//
//   node bench/tools/cpu-one.mjs <server> <ws|loop> <clients> <skills> <concurrency> <seconds> [top]
//
// e.g. node bench/tools/cpu-one.mjs mdp loop 1 1 32 10
// Prints the run's server CPU µs per request (getrusage) and the profile's self time per request by
// area and by function, and inclusive time of the project's frames.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subject } from '../dist/subjects.js';
import { LoadGenerator } from '../dist/load-generator.js';
import { stopAll } from '../dist/proc.js';
import { summarizeProfileFile } from '../dist/profile.js';

const [server, transport, clients, skills, concurrency, seconds, top = '25'] = process.argv.slice(2);
const population = { prefix: 'c', clients: Number(clients), skills: Number(skills) };
const dir = mkdtempSync(join(tmpdir(), 'mdp-cpu-'));
const file = join(dir, 'run.cpuprofile');
const subject = await Subject.start({ label: server, server, transport, population }, {});
const loadgen = new LoadGenerator();
let summary;
try {
  const load = (durationMs) => loadgen.run({ port: subject.server.port, population, concurrency: Number(concurrency), durationMs });
  await load(5000);
  await subject.server.child.call('startCpuProfile', { intervalUs: 250 });
  const u0 = await subject.server.usage();
  const result = await load(Number(seconds) * 1000);
  const u1 = await subject.server.usage();
  await subject.server.child.call('stopCpuProfile', { file }, 60000);
  console.log(
    JSON.stringify({
      server,
      transport,
      clients,
      concurrency,
      requests: result.requests,
      errors: result.errors,
      cpuUsPerReq: (u1.cpuUs - u0.cpuUs) / result.requests,
    }),
  );
  summary = summarizeProfileFile(file, Number(top), result.requests, `${server} ${transport} ${clients} client(s) c${concurrency}`);
} finally {
  await subject.stop();
  await stopAll();
}
console.log(summary);
rmSync(dir, { recursive: true, force: true });
