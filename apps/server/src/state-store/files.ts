/**
 * The state store on disk: its directory (made for the owner only, 0700) and its files, each
 * replaced whole: the text goes to a new temporary file in the same directory (0600), which is
 * then renamed over the file. A reader opens either the old file or the new one, never a part.
 * The temporary names start with a dot and end in `.tmp`; one left by a crash is harmless.
 */
import { accessSync, constants, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** A file's name in the directory and its whole text. */
export type StoreFile = readonly [name: string, text: string];

/** The directory cannot hold the store; the message says why and names the path. */
export class StateStoreDirError extends Error {
  override readonly name = 'StateStoreDirError';
}

/** The first of `dir` and its parents that exists and is no directory, if any. */
function fileInTheWay(dir: string): string | undefined {
  for (let path = dir; ; path = dirname(path)) {
    try {
      return statSync(path).isDirectory() ? undefined : path;
    } catch {
      if (dirname(path) === path) return undefined;
    }
  }
}

/** Why `error` (of node's fs, about `dir`) keeps a directory from being used, in words. */
export function dirProblem(error: unknown, dir: string): string {
  const { code, path } = error as NodeJS.ErrnoException;
  const where = path ? ` (${path})` : '';
  switch (code) {
    case 'EEXIST':
    case 'ENOTDIR': {
      const file = fileInTheWay(dir);
      return file ? `${file} is a file, not a directory` : `a file is in the way${where}`;
    }
    case 'EACCES':
    case 'EPERM':
      return `permission denied${where}`;
    case 'EROFS':
      return `read-only file system${where}`;
    default:
      return (error as Error).message;
  }
}

/**
 * Make `dir` (parents too, each new one 0700) or check the one there: a directory this process
 * may write in. Throws StateStoreDirError.
 */
export function prepareStoreDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR', path: dir });
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new StateStoreDirError(`cannot use ${dir} as the state store directory: ${dirProblem(error, dir)}`, { cause: error });
  }
}

let sequence = 0;
const tempName = (dir: string, name: string): string => join(dir, `.${name}.${process.pid}.${++sequence}.tmp`);

/** Write `files` in order, each whole; throws on the first that fails (its temporary file removed). */
export function writeStoreFilesSync(dir: string, files: readonly StoreFile[]): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const [name, text] of files) {
    const temp = tempName(dir, name);
    try {
      writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
      renameSync(temp, join(dir, name));
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }
}

/**
 * `writeStoreFilesSync` without blocking: the directory is made again when it is gone (someone
 * cleaned up), so the files come back at the next write.
 */
export async function writeStoreFiles(dir: string, files: readonly StoreFile[]): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const [name, text] of files) {
    const temp = tempName(dir, name);
    try {
      await writeFile(temp, text, { mode: 0o600, flag: 'wx' });
      await rename(temp, join(dir, name));
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
  }
}
