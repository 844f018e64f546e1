#!/usr/bin/env node
/**
 * The `mdp-server` binary. It imports at start only what reading the command line needs: the
 * server, the cluster and MCP are imported by the command that runs them, so `--version`, `--help`
 * and a usage error answer without loading them (in the bundle, `dist/cli.js`, they are chunks).
 */
import { EXIT, bindFailure, exposureWarning, usageLines } from './cli-notices.js';
import { loadMcpBridge, mcpSubcommandArgs, routeConsoleTo, serveStdio } from './mcp-command.js';
import { SERVER_DEFAULTS } from './settings/options.js';
import type { ListeningInfo, MdpServer } from './server.js';
import { SERVER_VERSION } from './version.js';

// `mdp-server setup …` writes agent hosts' MCP config and exits; it never starts a server.
if (process.argv[2] === 'setup') process.exit(await (await import('./setup/index.js')).setupMain(process.argv.slice(3), import.meta.url));
// `mdp-server rotate-cookie-key …` rotates the mdp_auth cookie keys in the state directory and exits.
if (process.argv[2] === 'rotate-cookie-key') {
  const { rotateCookieKeyMain } = await import('./cookie-key-command.js');
  process.exit(
    rotateCookieKeyMain(process.argv.slice(3), process.env, { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text) }),
  );
}

const argv = process.argv.slice(2);
// `mdp-server --version` alone (what hosts and scripts run to check the binary) is what the settings
// would answer, without building them: the settings table and its schemas are most of the rest.
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  process.stdout.write(`mdp-server ${SERVER_VERSION}\n`);
  process.exit(EXIT.ok);
}
const { HELP, parseCliArgs } = await import('./settings/cli-args.js');
// `mdp-server mcp …`: the same server, with MCP on stdin/stdout (so nothing else goes to stdout).
const stdioArgs = mcpSubcommandArgs(argv);
const command = parseCliArgs(stdioArgs ?? argv, process.env, undefined, stdioArgs ? 'mcp' : undefined);
switch (command.kind) {
  case 'help':
    process.stdout.write(`${HELP}\n`);
    process.exit(EXIT.ok);
    break;
  case 'version':
    process.stdout.write(`mdp-server ${SERVER_VERSION}\n`);
    process.exit(EXIT.ok);
    break;
  case 'print-config':
    process.stdout.write(command.text);
    process.exit(EXIT.ok);
    break;
  case 'error':
    process.stderr.write(usageLines(command.messages));
    process.exit(EXIT.usage);
    break;
  case 'run': {
    // The stdio session's bridge loads alongside the server (serveStdio awaits it, and its failure).
    if (stdioArgs) loadMcpBridge().catch(() => undefined);
    const [{ createMdpServer }, { announceLeadership, heldByMdp }] = await Promise.all([import('./server.js'), import('./cluster.js')]);
    // stdout and stderr carry information, not the service: when whoever read them goes away (a
    // closed pipe: EPIPE), writes are dropped and the server keeps serving instead of crashing on
    // an unhandled 'error' event.
    for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
    const out = stdioArgs ? process.stderr : process.stdout;
    if (stdioArgs) routeConsoleTo(process.stderr);
    const { options } = command;
    let server: MdpServer;
    try {
      server = createMdpServer(options);
    } catch (error) {
      // A TLS file it cannot use (the message names it), or options that cannot run (e.g. an unusable
      // cluster secret file): nothing listens yet.
      process.stderr.write(`mdp-server: ${(error as Error).message}\n`);
      process.exit(EXIT.failed);
    }
    let info: ListeningInfo;
    try {
      info = await server.listen();
    } catch (error) {
      // Nothing listens and nothing was served: there is nothing to close (and no `server.closed` to log).
      const host = options.host ?? SERVER_DEFAULTS.host;
      const port = options.port ?? SERVER_DEFAULTS.port;
      const err = error as NodeJS.ErrnoException;
      const mdp = err.code === 'EADDRINUSE' && (await heldByMdp(host, port, options.tls !== undefined));
      process.stderr.write(`mdp-server: ${bindFailure(err, host, port, mdp)}\n`);
      process.exit(EXIT.failed);
    }
    let stopping = false;
    let quiet: () => void = () => undefined;
    const stop = (signal: string): void => {
      if (stopping) {
        process.stderr.write(`mdp-server: ${signal} again, exiting now\n`);
        process.exit(EXIT.failed);
      }
      stopping = true;
      // A leader resigning on its way out is not news for whoever reads the lines.
      quiet();
      server.logger.info('server.stopping', { signal });
      // Every reader is answered by the drain deadline; the rest of shutdown (closing handshakes,
      // answers still being written) gets one second, and a peer or client that never answers a
      // close does not keep the process alive beyond it.
      const budgetMs = (options.drainTimeoutMs ?? SERVER_DEFAULTS.drainTimeoutMs) + 1000;
      setTimeout(() => {
        server.logger.warn('server.close_timeout', { budgetMs });
        process.stderr.write(`mdp-server: shutdown took longer than ${budgetMs} ms; exiting now\n`);
        process.exit(EXIT.failed);
      }, budgetMs - 100).unref();
      server.close().then(
        () => process.exit(EXIT.ok),
        (error: unknown) => {
          server.logger.error('server.close_failed', { error });
          process.exit(EXIT.failed);
        },
      );
    };
    // Before the first line is printed: whoever reads it may signal at once.
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // Renewed certificates without a restart; the outcome is logged (tls.reloaded, tls.reload_failed).
    if (options.tls) process.on('SIGHUP', () => void server.reloadTls());
    out.write(`mdp-server listening on ${info.urls.http} (websocket ${info.urls.ws}, server id ${info.serverId})\n`);
    const warning = exposureWarning(info.host, info.port, (options.authTokens?.length ?? 0) > 0);
    if (warning) out.write(`mdp-server: ${warning}\n`);
    // A line whenever who leads changes (this node, the leader it follows, or that it stepped down).
    // In bus mode no node leads: each joined the fleet on NATS and serves every client (SPEC §16).
    if (server.bus) out.write(`mdp-server: bus mode, node ${server.bus.nodeId} joined the fleet on NATS (every node serves every client)\n`);
    else if (server.cluster) quiet = announceLeadership(server.cluster, (line) => out.write(`mdp-server: ${line}\n`));
    if (stdioArgs) await serveStdio(server, stop);
    break;
  }
}
