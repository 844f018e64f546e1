#!/usr/bin/env node
/** The `mdp-server` binary. */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { HELP, parseCliArgs, parseTokensFile } from './cli-args.js';
import { createMdpServer } from './server.js';
import { announceLeadership } from './cluster.js';
import { cliClusterDefaults } from './cluster-args.js';

const command = parseCliArgs(process.argv.slice(2), process.env);
switch (command.kind) {
  case 'help':
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
    break;
  case 'version': {
    const pkg = createRequire(import.meta.url)('../package.json') as { version: string };
    process.stdout.write(`mdp-server ${pkg.version}\n`);
    process.exit(0);
    break;
  }
  case 'error':
    process.stderr.write(`mdp-server: ${command.message} (see mdp-server --help)\n`);
    process.exit(1);
    break;
  case 'run': {
    // stdout and stderr carry information, not the service: when whoever read them goes away (a
    // closed pipe: EPIPE), writes are dropped and the server keeps serving instead of crashing on
    // an unhandled 'error' event.
    for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
    const options = { ...command.options };
    if (command.authTokensFile !== undefined) {
      let tokens: string[];
      try {
        tokens = parseTokensFile(readFileSync(command.authTokensFile, 'utf8'));
      } catch (error) {
        process.stderr.write(`mdp-server: cannot read --auth-tokens-file: ${(error as Error).message}\n`);
        process.exit(1);
      }
      if (tokens.length === 0) {
        process.stderr.write(`mdp-server: --auth-tokens-file ${command.authTokensFile} holds no tokens\n`);
        process.exit(1);
      }
      options.authTokens = [...(options.authTokens ?? []), ...tokens];
    }
    // No cluster flag: the binary runs in auto mode (the library default is standalone).
    options.cluster ??= cliClusterDefaults(process.env);
    const server = createMdpServer(options);
    // Before listening: a service manager may signal the process as soon as it reads the listening
    // line, and a signal without a handler would kill it without closing anything.
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) {
        process.stderr.write(`mdp-server: ${signal} again, exiting now\n`);
        process.exit(1);
      }
      stopping = true;
      server.logger.info('server.stopping', { signal });
      server.close().then(
        () => process.exit(0),
        (error: unknown) => {
          server.logger.error('server.close_failed', { error });
          process.exit(1);
        },
      );
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    try {
      const info = await server.listen();
      process.stdout.write(`mdp-server listening on ${info.urls.http} (websocket ${info.urls.ws}, server id ${info.serverId})\n`);
      // One line once the cluster knows who leads; later changes of leader go to the log.
      if (server.cluster) announceLeadership(server.cluster, (line) => process.stdout.write(`mdp-server: ${line}\n`));
    } catch (error) {
      const err = error as NodeJS.ErrnoException;
      const where = `${command.options.host ?? '127.0.0.1'}:${command.options.port ?? 47372}`;
      const message =
        err.code === 'EADDRINUSE'
          ? `port already in use: ${where}`
          : err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND'
            ? `cannot bind ${where}: address not available`
            : err.code === 'EACCES'
              ? `cannot bind ${where}: permission denied`
              : `cannot start: ${err.message}`;
      process.stderr.write(`mdp-server: ${message}\n`);
      await server.close();
      process.exit(1);
    }
    break;
  }
}
