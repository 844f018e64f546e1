/**
 * What docs/production.md and apps/server/README.md claim and a test can check: the embedding
 * example, the reverse proxy's limits against the server's, and the binary's logs, signals, exit
 * codes and environment. (The deploy, the systemd unit and the container: deploy.test.ts.)
 */
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server as NetServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SERVER_DEFAULTS } from '@mdp/server';
import { MAX_WAIT_MS } from '@mdp/transport-http-loop';
import { REPO, output, removeScratch, run, scratch, serverEnv, startServer, stopServers } from './helpers.js';

const CLI = join(REPO, 'apps/server/dist/cli.js');
const read = (path: string): string => readFileSync(join(REPO, path), 'utf8');

afterEach(stopServers);
afterAll(removeScratch);

describe('embedding with createMdpServer', () => {
  const example = read('apps/server/examples/embed.ts');

  it.each(['docs/production.md', 'apps/server/README.md'])('%s shows apps/server/examples/embed.ts as it is', (doc) => {
    expect(read(doc)).toContain(`\`\`\`ts\n${example}\`\`\``);
  });

  it('compiles under strict TypeScript against the built package and serves until SIGTERM', async () => {
    const project = scratch('embed');
    mkdirSync(join(project, 'node_modules/@mdp'), { recursive: true });
    mkdirSync(join(project, 'node_modules/@types'), { recursive: true });
    symlinkSync(join(REPO, 'apps/server'), join(project, 'node_modules/@mdp/server'), 'dir');
    symlinkSync(join(REPO, 'node_modules/@types/node'), join(project, 'node_modules/@types/node'), 'dir');
    writeFileSync(join(project, 'package.json'), '{ "type": "module" }\n');
    copyFileSync(join(REPO, 'apps/server/examples/embed.ts'), join(project, 'embed.ts'));
    // The example is checked; the libraries' own declarations (hono's are large) are not, as in most projects.
    const tsconfig = {
      compilerOptions: {
        strict: true,
        noUncheckedIndexedAccess: true,
        skipLibCheck: true,
        module: 'nodenext',
        target: 'es2022',
        types: ['node'],
        outDir: 'out',
      },
      files: ['embed.ts'],
    };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig));
    const compiled = await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', project]);
    expect(compiled.code, output(compiled)).toBe(0);

    const server = await startServer(process.execPath, [join(project, 'out/embed.js')], { cwd: project, env: { ...process.env, PORT: '0' } });
    expect(server.stdout()).toMatch(/^MDP server listening on http:\/\/127\.0\.0\.1:\d+ \(websocket ws:\/\/127\.0\.0\.1:\d+\)$/m);
    expect((await fetch(`${server.url}/mdp/meta`, { headers: { accept: 'application/json' } })).status).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });
});

describe('the reverse proxy (docs/deploy/nginx.conf)', () => {
  const conf = read('docs/deploy/nginx.conf');
  const directive = (name: string): string => new RegExp(`^\\s*${name}\\s+([^;]+);`, 'm').exec(conf)?.[1] ?? '';

  it('passes websocket upgrades on to the server port', () => {
    expect(directive('proxy_pass')).toBe(`http://127.0.0.1:${SERVER_DEFAULTS.port}`);
    expect(directive('proxy_http_version')).toBe('1.1');
    expect(directive('proxy_set_header Upgrade')).toBe('$http_upgrade');
    expect(directive('proxy_set_header Connection')).toBe('$connection_upgrade');
    expect(conf).toMatch(/map \$http_upgrade \$connection_upgrade/);
  });

  it('waits longer than the longest long poll and a quiet websocket, and takes the largest message', () => {
    expect(MAX_WAIT_MS).toBe(60_000); // the guide: "a long poll waits up to 60 s", nginx's default
    for (const name of ['proxy_read_timeout', 'proxy_send_timeout']) {
      const seconds = Number(/^(\d+)s$/.exec(directive(name))?.[1]);
      expect(seconds * 1000, name).toBeGreaterThan(MAX_WAIT_MS);
      expect(seconds * 1000, name).toBeGreaterThan(SERVER_DEFAULTS.heartbeatIntervalMs);
    }
    expect(directive('proxy_buffering')).toBe('off');
    const megabytes = Number(/^(\d+)m$/.exec(directive('client_max_body_size'))?.[1]);
    expect(megabytes * 1024 * 1024).toBeGreaterThanOrEqual(SERVER_DEFAULTS.maxMessageBytes);
  });
});

describe('the binary: logs, signals, exit codes, environment', () => {
  const holders: NetServer[] = [];
  afterEach(async () => {
    await Promise.all(holders.splice(0).map((holder) => new Promise((resolve) => holder.close(resolve))));
  });
  const start = (args: string[] = [], env: NodeJS.ProcessEnv = {}) =>
    startServer(process.execPath, [CLI, '--host', '127.0.0.1', '--port', '0', '--cluster-mode', 'standalone', ...args], {
      env: { ...serverEnv(scratch('guide-state')), ...env },
    });

  it('prints its listening line on stdout and JSON lines with time, level and event on stderr; SIGTERM exits 0', async () => {
    const server = await start();
    expect(server.stdout()).toMatch(/^mdp-server listening on http:\/\/127\.0\.0\.1:\d+ \(websocket ws:\/\/127\.0\.0\.1:\d+, server id 127\.0\.0\.1:\d+\)$/m);
    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    const lines = server
      .stderr()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const line of lines) {
      expect(line).toMatchObject({
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        level: expect.any(String),
        event: expect.any(String),
      });
    }
    expect(lines.map((line) => line.event)).toEqual(expect.arrayContaining(['server.listening', 'server.stopping', 'server.closed']));
  });

  // (A second signal during the stop exits 1 at once; a test cannot make the stop last long enough
  // to send one into it reliably, so that line of the guide is not checked here.)
  it('exits 0 on SIGINT as on SIGTERM', async () => {
    const server = await start();
    server.child.kill('SIGINT');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.stderr()).toMatch(/"event":"server\.stopping","signal":"SIGINT"/);
  });

  it('exits 1 when the port is in use and 64 when a flag is wrong', async () => {
    // Another program holds the port (it answers nothing: the server's probe of it ends at once).
    const holder = createServer((socket) => socket.destroy());
    holders.push(holder);
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const busy = await run(process.execPath, [CLI, '--host', '127.0.0.1', '--port', String(port), '--cluster-mode', 'standalone'], {
      env: serverEnv(scratch('guide-state')),
    });
    expect(busy.code, output(busy)).toBe(1);
    const wrong = await run(process.execPath, [CLI, '--port', 'not-a-port']);
    expect(wrong.code, output(wrong)).toBe(64);
    expect(wrong.stderr).toMatch(/--port/);
  });

  it('exits 0 for --help and --version', async () => {
    for (const flag of ['--help', '--version']) expect((await run(process.execPath, [CLI, flag])).code, flag).toBe(0);
  });

  it('takes settings from the environment and from a --config file', async () => {
    const config = join(scratch('guide-config'), 'mdp.json');
    writeFileSync(config, '// a comment\n{ "host": "127.0.0.1", "port": 0, "clusterMode": "standalone" }\n');
    const fromFile = await startServer(process.execPath, [CLI, '--config', config], { env: serverEnv(scratch('guide-state')) });
    expect(fromFile.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const fromEnv = await startServer(process.execPath, [CLI], {
      env: { ...serverEnv(scratch('guide-state')), MDP_HOST: '127.0.0.1', MDP_PORT: '0', MDP_CLUSTER_MODE: 'standalone' },
    });
    expect(fromEnv.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('takes tokens from MDP_AUTH_TOKENS', async () => {
    const server = await start([], { MDP_AUTH_TOKENS: 'first,second' });
    const connect = (token?: string) =>
      fetch(`${server.url}/mdp/http-loop/connect`, { method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {}, body: '{}' });
    expect((await connect()).status).toBe(401);
    expect((await connect('second')).status).toBe(200);
  });
});
