// What bus-floor.mjs and bus-layers.mjs share: a nats-server of their own on 127.0.0.1, the bare
// nats.js pair they measure the bus against, and the measured loop (CPU of this process per round
// trip, both sides).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const { connect } = await import(createRequire(new URL('../../packages/bus-nats/package.json', import.meta.url)).resolve('@nats-io/transport-node'));

/** The skill text the holder's client answers with. */
export const SKILL = `# Skill\n\n${'x'.repeat(120)}`;
/** A skill read as the skill route hands it to the bus. */
export const CALL = { method: 'GET', path: '/s0/skill.md', headers: { host: '127.0.0.1:1', connection: 'keep-alive' }, route: 'skill' };

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** A JetStream nats-server (NATS_SERVER, else /usr/sbin/nats-server) in a temp folder named after `tag`, once it takes connections. */
export async function startNats(tag) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `${tag}-`));
  const nats = spawn(process.env.NATS_SERVER ?? '/usr/sbin/nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'store')], {
    stdio: 'ignore',
  });
  const url = `nats://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const nc = await connect({ servers: url, reconnect: false });
      await nc.close();
      break;
    } catch (error) {
      if (i > 100) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    async stop() {
      nats.kill('SIGTERM');
      await new Promise((r) => nats.on('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Plain nats.js on `url`: a responder publishing a constant answer, a requester with one reply subscription; subjects under `tag`. */
export async function barePair(url, tag) {
  const responder = await connect({ servers: url });
  const requester = await connect({ servers: url });
  const envelope = new TextEncoder().encode(JSON.stringify({ id: crypto.randomUUID(), clientId: 'c-1', timeoutMs: 30000, ...CALL }));
  const answer = new TextEncoder().encode(JSON.stringify({ ok: true, data: SKILL }));
  const subject = `${tag}.n.node-b.call.c-1`;
  const inbox = `_INBOX_${tag.replaceAll('-', '_')}.r`;
  responder.subscribe(subject, { callback: (_e, msg) => responder.publish(msg.reply, answer) });
  const waiting = new Map();
  let next = 0;
  requester.subscribe(`${inbox}.*`, { callback: (_e, msg) => waiting.get(msg.subject)?.() });
  await responder.flush();
  await requester.flush();
  const once = () =>
    new Promise((resolve) => {
      const reply = `${inbox}.${next++}`;
      waiting.set(reply, () => {
        waiting.delete(reply);
        resolve();
      });
      requester.publish(subject, envelope, { reply });
    });
  return { once, close: () => Promise.all([responder.close(), requester.close()]) };
}

/** `once` by `concurrency` loops for `ms` (a `paceMs` pause after each): round trips, CPU µs each, round trips per second. */
export async function measure(once, ms, concurrency, paceMs) {
  const end = performance.now() + ms;
  let count = 0;
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await once();
        count += 1;
        if (paceMs > 0) await new Promise((r) => setTimeout(r, paceMs));
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { count, usPer: (cpu.user + cpu.system) / count, perSec: count / (ms / 1000) };
}

export const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
