// Leak check: one mdp-server with 50 clients (websocket or HTTP loop) under rounds of reads, and on
// the websocket also rounds of registration churn (connect, register, close); after each round the
// server's heap after full GCs. A heap that keeps growing round after round is a leak.
//
//   node bench/tools/soak.mjs [ws|loop] [rounds=7] [read seconds=12]
import { Subject, churn } from '../dist/subjects.js';
import { LoadGenerator } from '../dist/load-generator.js';
import { stopAll } from '../dist/proc.js';

const [transport = 'ws', rounds = '7', seconds = '12'] = process.argv.slice(2);
const population = { prefix: 'c', clients: 50, skills: 5 };
const subject = await Subject.start({ label: 'mdp', server: 'mdp', transport, population }, {});
const loadgen = new LoadGenerator();
try {
  for (let round = 0; round < Number(rounds); round++) {
    const durationMs = Number(seconds) * 1000;
    const reads = await loadgen.run({ port: subject.server.port, population, concurrency: 32, durationMs });
    const registrations = transport === 'ws' ? await churn(subject, 8, 4000, 5) : undefined;
    const usage = await subject.server.collectedUsage();
    console.log(
      JSON.stringify({
        round,
        reads: reads.requests,
        readErrors: reads.errors,
        registrations: registrations?.registrations,
        registrationErrors: registrations?.errors,
        heapUsedMB: +(usage.heapUsed / 1e6).toFixed(2),
        rssMB: +(usage.rss / 1e6).toFixed(1),
      }),
    );
  }
} finally {
  await subject.stop();
  await stopAll();
}
