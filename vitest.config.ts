import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// Servers that tests start (in process or as CLI child processes, which inherit this environment)
// keep their cluster state in a scratch directory, never in the state directory of the user.
const stateHome = mkdtempSync(join(tmpdir(), 'mdp-test-state-'));
process.once('exit', () => rmSync(stateHome, { recursive: true, force: true }));

// One run over every package and app, so CI gets a single total.
export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'bench', 'release'],
    // Most of the end-to-end time is waiting on child processes, sockets and timers, not CPU: with
    // vitest's default (one worker per core but one) a 2-core machine ran every file in turn.
    maxWorkers: 4,
    env: { XDG_STATE_HOME: stateHome },
  },
});
