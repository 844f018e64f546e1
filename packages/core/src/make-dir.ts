/**
 * `mkdir -p` that always ends. Node's recursive `mkdir` (sync and async) loops forever when the
 * system answers ENOENT for a directory whose parent exists, as `/proc` and `/sys` do
 * (`--cluster-state-dir /proc/nope` hung the server at 100 % CPU). These walk up to the first
 * existing ancestor, then make each missing directory once, and throw the system's error as it is.
 * Synchronous only: a directory that exists costs one `stat`, and making one is rare.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const codeOf = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

function notADirectory(path: string): Error {
  return Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), { code: 'ENOTDIR', path, syscall: 'mkdir' });
}

/** The directories of `dir` (itself, then its parents) up to the first that exists, nearest first. */
function missingSync(dir: string): string[] {
  const missing: string[] = [];
  for (let current = resolve(dir); ; ) {
    try {
      if (!statSync(current).isDirectory()) throw notADirectory(current);
      return missing;
    } catch (error) {
      if (codeOf(error) !== 'ENOENT') throw error;
      missing.push(current);
      const parent = dirname(current);
      if (parent === current) return missing;
      current = parent;
    }
  }
}

/** Make `dir` and its missing parents (each new one with `mode`); nothing when it exists. Throws the system's error. */
export function makeDirectorySync(dir: string, mode?: number): void {
  const missing = missingSync(dir);
  for (let i = missing.length - 1; i >= 0; i--) {
    const path = missing[i] as string;
    try {
      mkdirSync(path, mode === undefined ? undefined : { mode });
    } catch (error) {
      // Made by someone else meanwhile: as good as made here.
      if (codeOf(error) !== 'EEXIST' || !statSync(path).isDirectory()) throw error;
    }
  }
}
