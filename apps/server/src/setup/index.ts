/** `mdp-server setup` wired to the real process: its environment, its streams, this installation. */
import { realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { runSetup } from './run.js';

export { runSetup, EXIT_USAGE, type SetupContext } from './run.js';
export { parseSetupArgs, SETUP_HELP, DEFAULT_MCP_URL, type SetupRequest } from './args.js';
export { HOSTS, HOST_IDS, type HostId, type HostSpec, type Launch, type Scope, type SetupPlace } from './hosts.js';
export { planConfig, describePlan, unifiedDiff } from './plan.js';

/**
 * Runs setup for the process. `cliUrl` is the running `cli.js` (its `import.meta.url`): entries
 * launch it by its real path, so a symlinked bin (pnpm, npm link) still points at this installation.
 */
export function setupMain(argv: readonly string[], cliUrl: string): Promise<number> {
  return runSetup(argv, {
    place: {
      home: process.env['HOME'] || process.env['USERPROFILE'] || homedir(),
      cwd: process.cwd(),
      platform: process.platform,
      env: process.env,
    },
    install: { node: process.execPath, cli: realpathSync(fileURLToPath(cliUrl)) },
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
}
