/** Scratch directories for tests (state directories of simulated users, secret files), removed after. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

/** A new empty directory under the system temp dir, removed by `removeScratch()`. */
export function scratchDir(prefix = 'mdp-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Remove every directory `scratchDir` made. */
export function removeScratch(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
