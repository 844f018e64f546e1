// One subject under one load, with `perf record` on its server process for the measured run
// (on-CPU samples; JS frames named by --perf-basic-prof). Needs `perf` and permission to attach.
//
//   node bench/tools/perf-one.mjs <server> <ws|loop|none> <clients> <skills> <concurrency> <seconds> <out.data>
//   python3 bench/tools/perf-areas.py <out.data> <requests> <cpuUsPerReq>
//
// e.g. node bench/tools/perf-one.mjs mdp ws 1 1 32 10 /tmp/mdp.data
// READ_CLIENTS=N sends every read to the first N clients (the catalog's "reads to N" subjects).
// Prints the run's requests and server CPU µs/request (getrusage) as JSON. With `-` for <out.data>
// nothing is recorded: the server's CPU per request alone, for alternating two builds.
import { spawn } from 'node:child_process';
import { Subject } from '../dist/subjects.js';
import { LoadGenerator } from '../dist/load-generator.js';
import { stopAll } from '../dist/proc.js';
const [server, transport, clients, skills, concurrency, seconds, out] = process.argv.slice(2);
const population = {
  prefix: 'c',
  clients: Number(clients),
  skills: Number(skills),
  ...(process.env.READ_CLIENTS ? { readClients: Number(process.env.READ_CLIENTS) } : {}),
};
const subject = await Subject.start({ label: server, server, transport, population }, { nodeArgs: out === '-' ? [] : ['--perf-basic-prof'] });
const loadgen = new LoadGenerator();
try {
  await loadgen.run({ port: subject.server.port, population, concurrency: Number(concurrency), durationMs: 2000 });
  const durationMs = Number(seconds) * 1000;
  const perf =
    out === '-'
      ? undefined
      : spawn('perf', ['record', '-F', '1999', '-g', '-p', String(subject.server.child.pid), '-o', out, '--', 'sleep', String(Number(seconds) + 0.2)], {
          stdio: 'ignore',
        });
  await new Promise((r) => setTimeout(r, 200));
  const u0 = await subject.server.usage();
  const result = await loadgen.run({ port: subject.server.port, population, concurrency: Number(concurrency), durationMs });
  const u1 = await subject.server.usage();
  if (perf) await new Promise((r) => perf.on('exit', r));
  console.log(
    JSON.stringify({
      server,
      transport,
      clients,
      concurrency,
      requests: result.requests,
      errors: result.errors,
      rps: result.rps,
      cpuUsPerReq: (u1.cpuUs - u0.cpuUs) / result.requests,
    }),
  );
} finally {
  await subject.stop();
  await stopAll();
}
