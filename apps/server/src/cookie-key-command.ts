/**
 * `mdp-server rotate-cookie-key [options]`: rotate the keys of the `mdp_auth` cookie in the state
 * directory the same options would give a server (`--cluster-state-dir`, `MDP_CLUSTER_STATE_DIR`,
 * the config file). Running servers that read the file take the new key by themselves.
 */
import { systemClock } from '@mdp/core';
import { parseCliArgs } from './settings/cli-args.js';
import { EXIT, usageLines } from './cli-notices.js';
import { rotateCookieKeyFile } from './cookie-keys.js';
import type { Env } from './settings/sources.js';

export const ROTATE_HELP = `Usage: mdp-server rotate-cookie-key [options]

Seals new mdp_auth cookies with a new key: the key in <state dir>/cookie-keys that sealed them
until now is retired, and still opens the cookies it sealed for one cookie lifetime (an hour),
after which they have all expired. Every server that reads the file (the servers of this state
directory, the members of your cluster) seals with the new key from its next cookie on, and
accepts cookies of the new key at once: no restart. Give the options your servers run with
(at least --cluster-state-dir, or MDP_CLUSTER_STATE_DIR or --config, if they set it).

To refuse every cookie issued so far at once (a leaked key), delete <state dir>/cookie-keys
instead: servers make a new key when they next look at the file.`;

/** Where the command writes: a line at a time. */
export interface CommandOutput {
  out(text: string): void;
  err(text: string): void;
}

/** Run the command; resolves to the exit status. */
export function rotateCookieKeyMain(argv: readonly string[], env: Env, io: CommandOutput, now: number = systemClock.wallNow()): number {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(`${ROTATE_HELP}\n`);
    return EXIT.ok;
  }
  const command = parseCliArgs(argv, env);
  if (command.kind === 'error') {
    io.err(usageLines(command.messages));
    return EXIT.usage;
  }
  if (command.kind !== 'run' || command.options.cookieKeyFile === undefined) {
    io.err(usageLines(['rotate-cookie-key takes the settings of a server, not --version or --print-config']));
    return EXIT.usage;
  }
  const file = command.options.cookieKeyFile;
  try {
    const { document, oldKeysUntil } = rotateCookieKeyFile(file, now);
    const retired = document.keys.length - 1;
    io.out(
      retired === 0
        ? `mdp-server: made the mdp_auth cookie key in ${file} (there was none)\n`
        : `mdp-server: rotated the mdp_auth cookie key in ${file}: new cookies are sealed with the new key; ` +
            `cookies sealed before stay valid until ${new Date(oldKeysUntil).toISOString()} at the latest ` +
            `(${retired} retired key${retired === 1 ? '' : 's'} kept)\n`,
    );
    return EXIT.ok;
  } catch (error) {
    io.err(`mdp-server: ${(error as Error).message}\n`);
    return EXIT.failed;
  }
}
