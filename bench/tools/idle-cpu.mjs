// Server CPU spent with nothing connected, in ms per second, for mdp-server in its default cluster
// mode (auto: discovery probes 100 ports every 2 s) and standalone. Linux (/proc). Each mode runs
// alone: start, a warm-up (election and first rounds), then the measured window.
//
//   node bench/tools/idle-cpu.mjs [seconds=20] [warmup seconds=8]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

const [seconds = '20', warmup = '8'] = process.argv.slice(2);
const cli = new URL('../../apps/server/dist/cli.js', import.meta.url).pathname;
const ticksPerSecond = 100; // USER_HZ on Linux
const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond; // utime + stime
};

for (const [mode, args] of [
  ['auto (default)', []],
  ['standalone', ['--cluster-mode', 'standalone']],
]) {
  const child = spawn(process.execPath, [cli, '--port', '0', '--log-level', 'warn', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let out = '';
    await new Promise((resolve, reject) => {
      child.stdout.on('data', (chunk) => (out += chunk).includes('listening') && resolve());
      child.once('exit', () => reject(new Error('mdp-server exited before it listened')));
    });
    await sleep(Number(warmup) * 1000);
    const before = cpuMs(child.pid);
    await sleep(Number(seconds) * 1000);
    const after = cpuMs(child.pid);
    console.log(JSON.stringify({ mode, seconds: Number(seconds), cpuMsPerSecond: (after - before) / Number(seconds) }));
  } finally {
    child.kill('SIGINT');
    if (child.exitCode === null) await once(child, 'exit');
  }
}
