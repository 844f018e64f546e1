// The floor under a fleet's remote read: CPU per round trip of bare nats.js request/reply between
// two processes, with the bytes of a skill read's call and answer (issue 32, fleet-read).
//
//   node bench/tools/nats-floor.mjs [--rounds 3] [--duration 3] [--warmup 2] [--concurrency 1,5,32]
//                                   [--call-bytes N] [--variants direct,outbox]
//
// A nats-server (`/usr/sbin/nats-server`, or NATS_SERVER) on 127.0.0.1, a responder process and a
// requester process, each a plain nats.js connection (`@nats-io/transport-node`, the bus's copy):
// - responder: one `nc.subscribe` callback on `<prefix>.n.<node>.>` that publishes a constant answer
//   to the message's reply subject (no parsing, no outbox);
// - requester: `concurrency` closed loops, each `nc.publish(subject, envelope, { reply })` to
//   `<prefix>.n.<node>.call.<client>` with a reply subject `<inbox>.r.<token>` of its own, and one
//   `nc.subscribe` callback on `<inbox>.r.*` that resolves the loop waiting for that token.
// That is what the bus's wire does (packages/bus-nats/src/wire.ts), without the bus around it.
// Two ways to publish, alternated round by round: `direct` (`nc.publish` at once: bare nats.js) and
// `outbox` (both sides queue what they publish and hand it to nats.js from `setImmediate`, as the
// wire's outbox does: one more event-loop phase per message when nothing else shares the turn).
// Concurrency 5 is about what each caller → holder pair of fleet-read sees at its concurrency 32
// (32 reads over 6 pairs); `--call-bytes N` pads the call envelope to N bytes (more headers).
// The call envelope is what bus.ts sends for fleet-read's skill read (`encodeJson({ id, clientId,
// timeoutMs, ...call })` with the query, forwarded headers and route of the skill route), the answer
// the call outcome `{ ok: true, data: <the mock clients' 130-byte skill text> }`.
//
// CPU is each process's own: the requester's and responder's `process.cpuUsage()` (user + system),
// read over IPC right before and after each measured run, and the nats-server's from /proc/<pid>/stat
// (10 ms resolution). Printed per round trip, medians over rounds, one JSON line per concurrency and
// a table. Every process it starts is stopped at the end, on failure, and on Ctrl-C; the children
// also exit when the orchestrator's IPC channel goes away.
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

// ------------------------------------------------------------------------------------------------
// What goes over the wire

const PREFIX = 'mdp-bench';
const HOLDER = 'bench-node-b';
const CALLER = 'bench-node-a';
const CLIENT = 'node-b-7';
const SUBJECT = `${PREFIX}.n.${HOLDER}.call.${CLIENT}`;
const INBOX = `_INBOX_${PREFIX}.${CALLER}.r`;

/** The skill text every mock client answers (bench/src/fixtures.ts, through the built bench). */
async function skillText() {
  const { SKILL_TEXT } = await import(new URL('../dist/fixtures.js', import.meta.url).href);
  return SKILL_TEXT;
}

/** A call envelope as bus.ts encodes it for a skill read that fleet-read's load generator sends. */
function envelope(callBytes = 0) {
  const call = {
    id: crypto.randomUUID(),
    clientId: CLIENT,
    timeoutMs: 30000,
    method: 'GET',
    path: '/s3/skill.md',
    query: {},
    headers: { host: '127.0.0.1:40123', connection: 'keep-alive' },
    route: 'skill',
  };
  const text = JSON.stringify(call);
  // --call-bytes: a longer envelope (more forwarded headers), padded in a header of its own.
  return text.length >= callBytes
    ? text
    : JSON.stringify({ ...call, headers: { ...call.headers, 'x-pad': 'x'.repeat(Math.max(0, callBytes - text.length - 11)) } });
}

function nats() {
  const require = createRequire(new URL('../../packages/bus-nats/package.json', import.meta.url));
  return import(require.resolve('@nats-io/transport-node'));
}

// ------------------------------------------------------------------------------------------------
// Child processes

async function child(kind) {
  const { connect, nuid } = await nats();
  const encoder = new TextEncoder();
  // Exit with the orchestrator, however it ends.
  process.on('disconnect', () => process.exit(0));
  let nc;
  let stopLoad = () => {};
  // --outbox: publish as the wire does, from an outbox flushed by setImmediate (one write per turn).
  let outbox = false;
  let queued = [];
  const flush = () => {
    const messages = queued;
    queued = [];
    for (const [subject, data, options] of messages) nc.publish(subject, data, options);
  };
  const publish = (subject, data, options) => {
    if (!outbox) return nc.publish(subject, data, options);
    if (queued.push([subject, data, options]) === 1) setImmediate(flush);
  };
  process.on('message', async (message) => {
    try {
      if (message.type === 'connect') {
        nc = await connect({ servers: message.url, inboxPrefix: `_INBOX_${PREFIX}.${kind === 'requester' ? CALLER : HOLDER}` });
        if (kind === 'responder') {
          const answer = encoder.encode(JSON.stringify({ ok: true, data: message.skillText }));
          nc.subscribe(`${PREFIX}.n.${HOLDER}.>`, {
            callback: (_error, msg) => {
              if (msg.reply) publish(msg.reply, answer);
            },
          });
        }
        await nc.flush();
        process.send({ type: 'ready', bytes: kind === 'responder' ? JSON.stringify({ ok: true, data: message.skillText }).length : 0 });
      } else if (message.type === 'mode') {
        outbox = message.outbox;
        process.send({ type: 'mode' });
      } else if (message.type === 'usage') {
        const { user, system } = process.cpuUsage();
        process.send({ type: 'usage', cpuUs: user + system });
      } else if (message.type === 'load') {
        // Closed loops until 'stop'; answers the number of round trips completed and the bytes sent.
        const waiting = new Map();
        const sub = nc.subscribe(`${INBOX}.*`, {
          callback: (_error, msg) => {
            const token = msg.subject.slice(INBOX.length + 1);
            const resolve = waiting.get(token);
            if (resolve) {
              waiting.delete(token);
              resolve(msg.data.length);
            }
          },
        });
        await nc.flush();
        let running = true;
        let done = 0;
        let requestBytes = 0;
        let answerBytes = 0;
        stopLoad = () => {
          running = false;
        };
        const loop = async () => {
          while (running) {
            const token = nuid.next();
            const body = encoder.encode(envelope(message.callBytes));
            requestBytes = body.length;
            const answered = new Promise((resolve) => waiting.set(token, resolve));
            publish(SUBJECT, body, { reply: `${INBOX}.${token}` });
            answerBytes = await answered;
            done += 1;
          }
        };
        process.send({ type: 'started' });
        await Promise.all(Array.from({ length: message.concurrency }, loop));
        sub.unsubscribe();
        process.send({ type: 'done', roundTrips: done, requestBytes, answerBytes });
      } else if (message.type === 'stop') {
        stopLoad();
      } else if (message.type === 'close') {
        await nc?.close();
        process.exit(0);
      }
    } catch (error) {
      console.error(`${kind}:`, error);
      process.exit(1);
    }
  });
  process.send({ type: 'up' });
}

// ------------------------------------------------------------------------------------------------
// Orchestrator

async function orchestrate() {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '3' },
      duration: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '2' },
      concurrency: { type: 'string', default: '1,5,32' },
      'call-bytes': { type: 'string', default: '0' },
      variants: { type: 'string', default: 'direct,outbox' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log('node bench/tools/nats-floor.mjs [--rounds 3] [--duration 3] [--warmup 2] [--concurrency 1,5,32] [--call-bytes N] [--variants direct,outbox]');
    return;
  }
  const rounds = Number(values.rounds);
  const durationMs = Number(values.duration) * 1000;
  const warmupMs = Number(values.warmup) * 1000;
  const loads = values.concurrency.split(',').map(Number);
  const callBytes = Number(values['call-bytes']);
  const variants = values.variants.split(',');
  if (variants.some((v) => v !== 'direct' && v !== 'outbox')) throw new Error('--variants: direct, outbox or both');
  if (!(rounds >= 1) || !(callBytes >= 0) || !(durationMs > 0) || !(warmupMs >= 0) || loads.some((c) => !(c >= 1))) throw new Error('bad options; see --help');

  const natsPath = process.env.NATS_SERVER ?? '/usr/sbin/nats-server';
  const started = [];
  const stopAll = () => {
    for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };
  process.on('SIGINT', () => {
    stopAll();
    process.exit(130);
  });
  // A hard limit: warm-up and runs per load and round, plus a minute for starts and stops.
  const limit = setTimeout(
    () => {
      console.error('nats-floor: time limit reached');
      stopAll();
      process.exit(1);
    },
    loads.length * variants.length * (warmupMs + rounds * (durationMs + 5000)) + 60_000,
  );
  limit.unref();

  const dir = mkdtempSync(join(tmpdir(), 'mdp-nats-floor-'));
  try {
    const server = spawn(natsPath, ['-a', '127.0.0.1', '-p', '-1'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    started.push(server);
    const port = await new Promise((resolve, reject) => {
      let text = '';
      server.once('error', reject);
      server.once('exit', () => reject(new Error(`nats-server exited: ${text}`)));
      server.stderr.on('data', (chunk) => {
        text += chunk;
        const match = /Listening for client connections on 127\.0\.0\.1:(\d+)/.exec(text);
        if (match && text.includes('Server is ready')) resolve(Number(match[1]));
      });
    });
    const url = `nats://127.0.0.1:${port}`;
    const text = await skillText();
    const responder = await startChild('responder', started);
    const requester = await startChild('requester', started);
    const ready = await Promise.all([responder.ask({ type: 'connect', url, skillText: text }, 'ready'), requester.ask({ type: 'connect', url }, 'ready')]);
    const answerBytes = ready[0].bytes;

    const machine = { at: new Date().toISOString(), loadavg: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '), node: process.version };
    console.log(JSON.stringify({ machine, nats: url, subject: SUBJECT, answerBytes }));
    const rows = [];
    const setMode = (variant) =>
      Promise.all([
        requester.ask({ type: 'mode', outbox: variant === 'outbox' }, 'mode'),
        responder.ask({ type: 'mode', outbox: variant === 'outbox' }, 'mode'),
      ]);
    for (const concurrency of loads) {
      const perRound = new Map(variants.map((v) => [v, []]));
      for (const variant of variants) {
        await setMode(variant);
        await run(requester, concurrency, warmupMs, callBytes);
      }
      for (let round = 0; round < rounds; round++) {
        // Alternate the order round by round (A B, B A, …), as the bench does.
        for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
          await setMode(variant);
          const before = await usage(requester, responder, server.pid);
          const outcome = await run(requester, concurrency, durationMs, callBytes);
          const after = await usage(requester, responder, server.pid);
          const n = outcome.roundTrips;
          perRound.get(variant).push({
            roundTrips: n,
            perSecond: n / (durationMs / 1000),
            requesterUs: (after.requester - before.requester) / n,
            responderUs: (after.responder - before.responder) / n,
            natsUs: (after.nats - before.nats) / n,
            requestBytes: outcome.requestBytes,
          });
        }
      }
      for (const variant of variants) {
        const results = perRound.get(variant);
        const median = (key) => {
          const sorted = results.map((r) => r[key]).sort((a, b) => a - b);
          const mid = sorted.length >> 1;
          return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
        };
        const row = {
          variant,
          concurrency,
          rounds,
          roundTripsPerSecond: median('perSecond'),
          requesterUs: median('requesterUs'),
          responderUs: median('responderUs'),
          bothUs: median('requesterUs') + median('responderUs'),
          bothUsPerRound: results.map((r) => round1(r.requesterUs + r.responderUs)),
          natsServerUs: median('natsUs'),
          requestBytes: results[0].requestBytes,
          answerBytes,
        };
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    }
    console.log(
      `\nbare nats.js request/reply, ${rounds} rounds × ${durationMs / 1000} s, load average ${machine.loadavg} at the start (medians; CPU µs per round trip)`,
    );
    console.log('| publish | load | round trips/s | requester | responder | requester + responder (rounds) | nats-server | call / answer bytes |');
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const r of rows) {
      console.log(
        `| ${r.variant} | c${r.concurrency} | ${Math.round(r.roundTripsPerSecond)} | ${round1(r.requesterUs)} | ${round1(r.responderUs)} | ${round1(r.bothUs)} (${r.bothUsPerRound.join(', ')}) | ${round1(r.natsServerUs)} | ${r.requestBytes} / ${r.answerBytes} |`,
      );
    }
    console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
    await Promise.all([responder.close(), requester.close()]);
  } finally {
    stopAll();
    await Promise.all(started.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : undefined)));
    rmSync(dir, { recursive: true, force: true });
  }
}

function round1(x) {
  return Math.round(x * 10) / 10;
}

/** A child process of this file in `kind`, with a small request/answer helper over IPC. */
async function startChild(kind, started) {
  const proc = fork(new URL(import.meta.url).pathname, [`--role=${kind}`], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  started.push(proc);
  const next = (type) =>
    new Promise((resolve, reject) => {
      const onMessage = (message) => {
        if (message.type !== type) return;
        proc.off('message', onMessage);
        proc.off('exit', onExit);
        resolve(message);
      };
      const onExit = (code) => reject(new Error(`${kind} exited (${code}) while waiting for ${type}`));
      proc.on('message', onMessage);
      proc.once('exit', onExit);
    });
  await next('up');
  return {
    proc,
    next,
    ask(message, type) {
      const answer = next(type);
      proc.send(message);
      return answer;
    },
    async close() {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.send({ type: 'close' });
      await exited;
    },
  };
}

/** Closed-loop round trips at `concurrency` for `ms`. */
async function run(requester, concurrency, ms, callBytes) {
  const done = requester.next('done');
  await requester.ask({ type: 'load', concurrency, callBytes }, 'started');
  await new Promise((r) => setTimeout(r, ms));
  requester.proc.send({ type: 'stop' });
  return done;
}

async function usage(requester, responder, natsPid) {
  const [a, b] = await Promise.all([requester.ask({ type: 'usage' }, 'usage'), responder.ask({ type: 'usage' }, 'usage')]);
  const fields = readFileSync(`/proc/${natsPid}/stat`, 'utf8');
  const after = fields.slice(fields.lastIndexOf(')') + 2).split(' ');
  const natsUs = ((Number(after[11]) + Number(after[12])) / 100) * 1e6;
  return { requester: a.cpuUs, responder: b.cpuUs, nats: natsUs };
}

// Last, after every constant above is defined.
const role = process.argv[2];
if (role === '--role=responder' || role === '--role=requester') await child(role.slice(7));
else {
  try {
    await orchestrate();
  } catch (error) {
    console.error(`nats-floor: ${error.message}`);
    process.exitCode = 1;
  }
}
