/**
 * `pnpm start`: build the server (its output shown only when the build fails), then run it and
 * stand in for it until it exits, with its exit status.
 *
 * pnpm runs the script with `sh -c` and, on SIGTERM or SIGINT, signals that shell; the script
 * `exec`s this file, so the shell becomes this process and a signal for pnpm's child reaches it.
 * The server runs as a child in a session of its own, and this process forwards each kind of
 * signal once: Ctrl-C reaches every process of the terminal's foreground group *and* pnpm forwards
 * it, so one Ctrl-C arrives here twice and must stop the server once (the server takes a second
 * SIGINT as "exit now", status 1). pnpm turns a second Ctrl-C into SIGTERM, which is forwarded and
 * is that "exit now". SIGHUP (the terminal went away) stops the server like SIGTERM.
 */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const turbo = fileURLToPath(new URL('../node_modules/.bin/turbo', import.meta.url));
const cli = fileURLToPath(new URL('../apps/server/dist/cli.js', import.meta.url));

const build = spawnSync(turbo, ['run', 'build', '--filter=@mdp/server...'], {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe'],
  maxBuffer: 64 * 1024 * 1024,
});
if (build.status !== 0) {
  process.stdout.write(build.stdout ?? '');
  process.stderr.write(build.stderr ?? '');
  process.stderr.write(`pnpm start: the build failed (${build.error?.message ?? `exit ${build.status ?? build.signal}`})\n`);
  process.exit(build.status || 1);
}

// `pnpm start -- --port 8080`, npm's way of passing options, reaches here with the `--` (pnpm passes
// it on): the server would take it as the end of its options and refuse every one after it.
const args = process.argv.slice(2);
if (args[0] === '--') args.shift();
const server = spawn(process.execPath, [cli, ...args], { stdio: 'inherit', detached: true });
const forwarded = new Set();
const forward = (signal) => {
  if (forwarded.has(signal)) return;
  forwarded.add(signal);
  server.kill(signal);
};
process.on('SIGINT', () => forward('SIGINT'));
process.on('SIGTERM', () => forward('SIGTERM'));
process.on('SIGHUP', () => forward('SIGTERM'));
// Should this process end first (an uncaught error), the server does not outlive it.
process.on('exit', () => {
  if (server.exitCode === null && server.signalCode === null) server.kill('SIGTERM');
});

server.on('error', (error) => {
  process.stderr.write(`pnpm start: cannot run the server: ${error.message}\n`);
  process.exit(1);
});
server.on('exit', (code, signal) => {
  if (signal === null) process.exit(code ?? 1);
  // Die of the same signal, so pnpm reports what happened to the server.
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
});
