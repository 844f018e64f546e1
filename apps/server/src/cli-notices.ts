/** What `mdp-server` tells a person on stdout and stderr, apart from the JSON logs. No I/O here. */
import { urlHost } from '@mdp/core';
import { isLoopback } from './urls.js';

export const EXIT = Object.freeze({
  /** Stopped cleanly (SIGINT, SIGTERM), or --help, --version, --print-config. */
  ok: 0,
  /** Could not start (port taken, address unavailable, …), or stopped on an error. */
  failed: 1,
  /** A bad flag, environment variable or config file (EX_USAGE of sysexits.h, as mdp-probe). */
  usage: 64,
});

/** The lines printed for bad settings: one per bad value, then where to look. */
export function usageLines(messages: readonly string[]): string {
  return `${messages.map((message) => `mdp-server: ${message}\n`).join('')}Try 'mdp-server --help'.\n`;
}

/**
 * Why the server could not listen, in one line. `heldByMdp`: whether an MDP server answers on the
 * port that is in use (then it is not some other program).
 */
export function bindFailure(error: NodeJS.ErrnoException, host: string, port: number, heldByMdp: boolean): string {
  const where = `${urlHost(host)}:${port}`;
  switch (error.code) {
    case 'EADDRINUSE': {
      const holder = heldByMdp ? 'another MDP server' : 'another program';
      return `port ${port} on ${urlHost(host)} is already in use by ${holder}; pick another with --port <n>, or --port 0 for any free port`;
    }
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return `cannot bind ${where}: no such address on this machine (check --host)`;
    case 'EACCES':
      return `cannot bind ${where}: permission denied (ports below 1024 need privileges; try a port above 1024)`;
    default:
      return `cannot start: ${error.message}`;
  }
}

/** The warning for a server anyone on the network can use, or `undefined` when it is not one. */
export function exposureWarning(host: string, port: number, hasTokens: boolean): string | undefined {
  if (hasTokens || isLoopback(host)) return undefined;
  const where = ['0.0.0.0', '::', ''].includes(host) ? `every network interface (${host || '0.0.0.0'})` : urlHost(host);
  return (
    `warning: listening on ${where} with no auth token: anyone who can reach port ${port} can ` +
    'register clients and read their skills. Require a token with --auth-token <secret> (or ' +
    'MDP_AUTH_TOKENS), or keep the server on 127.0.0.1.'
  );
}
