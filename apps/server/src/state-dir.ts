/**
 * Where a user's servers keep their state (cluster term and vote, cluster secret, cookie keys),
 * in a module that imports only node's: reading the command line needs it, and that must not load
 * the cluster (`mdp-server --help` answers without it).
 */
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * The CLI's default `stateDir`: `$XDG_STATE_HOME/mdp-server`, else `~/.local/state/mdp-server`.
 * Per user, not shared: a term and vote are one user's servers' business, and a directory in /tmp
 * made by one user is an EACCES for the next. The cluster package creates it with mode 0700.
 */
export function defaultStateDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const xdg = env.XDG_STATE_HOME;
  // The XDG base directory spec: a relative path is invalid and ignored.
  const base = xdg && isAbsolute(xdg) ? xdg : join(env.HOME || homedir(), '.local', 'state');
  return join(base, 'mdp-server');
}
