/**
 * The state store on disk: its directory (made for the owner only, 0700) and its files, each
 * replaced whole: the text goes to a new temporary file in the same directory (0600), which is
 * then renamed over the file. A reader opens either the old file or the new one, never a part.
 * The temporary names start with a dot and end in `.tmp`; one left by a crash is harmless.
 *
 * A file's text comes in pieces, made as they are written: the routes of a full node are tens of
 * megabytes, which made in one go held the event loop for most of a second at every write. The
 * writes while running take them in slices of about {@link SLICE_CHARS}, each written before the
 * next is made, so the node serves its calls between two slices.
 */
import { accessSync, constants, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { makeDirectorySync, systemClock } from '@mdp/core';

/** A file's name in the directory and its text, in pieces (made as they are taken). */
export type StoreFile = readonly [name: string, pieces: Iterable<string>];

/** Characters made and written at once by the writes while running (about 256 KiB). */
export const SLICE_CHARS = 256 * 1024;

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
    makeDirectorySync(dir, 0o700);
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR', path: dir });
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new StateStoreDirError(`cannot use ${dir} as the state store directory: ${dirProblem(error, dir)}`, { cause: error });
  }
}

let sequence = 0;
const tempName = (dir: string, name: string): string => join(dir, `.${name}.${process.pid}.${++sequence}.tmp`);

/**
 * Write `files` in order, each whole; throws on the first that fails (its temporary file removed).
 * For the first write, when the node has no clients yet.
 */
export function writeStoreFilesSync(dir: string, files: readonly StoreFile[]): void {
  makeDirectorySync(dir, 0o700);
  for (const [name, pieces] of files) {
    const temp = tempName(dir, name);
    try {
      writeFileSync(temp, [...pieces].join(''), { mode: 0o600, flag: 'wx' });
      renameSync(temp, join(dir, name));
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }
}

/** Write all of `bytes` at the handle's position: a write may take only part of them. */
async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let at = 0; at < bytes.length; ) {
    const { bytesWritten } = await handle.write(bytes, at);
    if (bytesWritten === 0) throw new Error('the file took no more bytes');
    at += bytesWritten;
  }
}

/**
 * `writeStoreFilesSync` without blocking: each file's pieces are made and written a slice at a
 * time, and the directory is made again when it is gone (someone cleaned up), so the files come
 * back at the next write. Resolves with the time, ms by `now`, spent making the slices: the time
 * the write held the event loop, which the schedule keeps small.
 */
export async function writeStoreFiles(dir: string, files: readonly StoreFile[], now: () => number = systemClock.now): Promise<number> {
  let busyMs = 0;
  makeDirectorySync(dir, 0o700);
  for (const [name, pieces] of files) {
    const temp = tempName(dir, name);
    let handle: FileHandle | undefined;
    try {
      handle = await open(temp, 'wx', 0o600);
      const next = pieces[Symbol.iterator]();
      for (let done = false; !done; ) {
        const started = now();
        let slice = '';
        while (slice.length < SLICE_CHARS) {
          const piece = next.next();
          if (piece.done) {
            done = true;
            break;
          }
          slice += piece.value;
        }
        busyMs += now() - started;
        await writeAll(handle, Buffer.from(slice, 'utf8'));
      }
      await handle.close();
      handle = undefined;
      await rename(temp, join(dir, name));
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
  }
  return busyMs;
}
