/**
 * Files of the per-user state that hold secrets (the cluster secret, the cookie keys): mode 0600,
 * in a directory only their owner can write (made 0700 here). They are checked, never trusted: a
 * file must be a regular file of this user that nobody else can read, in a directory nobody else
 * can write (else another user could swap it for one of theirs).
 *
 * They are written whole, so that a reader (another server starting at the same moment) sees the
 * old content or the new, never part of it: a new file is written under a temporary name and
 * linked into place (when several make it at once, the first link wins and the others read it);
 * a replacement is renamed over the old file.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, linkSync, lstatSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeDirectorySync } from '@mdp/core';

/**
 * Makes the Error a caller throws when `what` went wrong with its file (naming the file, saying what
 * to do). `unstorable`: nothing could be written (no directory could be made, or no file written
 * in it); otherwise the file or its directory is not fit to use.
 */
export type FileProblem = (what: string, kind?: 'unstorable') => Error;

/** Make `file`'s directory (0700) if needed, and check that nobody else can write it. */
export function privateDirectory(file: string, problem: FileProblem): void {
  const dir = dirname(file);
  try {
    makeDirectorySync(dir, 0o700);
  } catch (error) {
    throw problem(`cannot create ${dir}: ${reason(error)}`, 'unstorable');
  }
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) throw problem(`${dir} is not a directory`);
  const uid = process.getuid?.();
  if (uid === undefined) return;
  if (stat.uid !== uid) throw problem(`${dir} belongs to another user (uid ${stat.uid})`);
  if ((stat.mode & 0o022) !== 0) throw problem(`${dir} is writable by others (mode ${octal(stat.mode)})`);
}

/** The text of `file`, or undefined when there is none; throws when it is not fit to use. */
export function readPrivateFile(file: string, problem: FileProblem): string | undefined {
  let fd: number;
  try {
    // O_NOFOLLOW: a link planted where the file should be is refused, not followed.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw problem(`cannot read it: ${reason(error)}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw problem('it is not a regular file');
    const uid = process.getuid?.();
    if (uid !== undefined) {
      if (stat.uid !== uid) throw problem(`it belongs to another user (uid ${stat.uid})`);
      if ((stat.mode & 0o077) !== 0) throw problem(`others can read or change it (mode ${octal(stat.mode)}); chmod 600 it`);
    }
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** Write `text` as a new `file` (0600). False when the file already exists (another writer won). */
export function createPrivateFile(file: string, text: string, problem: FileProblem): boolean {
  return viaTemporary(file, text, problem, (temp) => {
    try {
      linkSync(temp, file);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return false;
    }
  });
}

/** Replace `file` (or make it) with `text` (0600), in one rename. */
export function replacePrivateFile(file: string, text: string, problem: FileProblem): void {
  viaTemporary(file, text, problem, (temp) => renameSync(temp, file));
}

/** Write `text` to a temporary file beside `file`, hand it to `place`, and remove what is left of it. */
function viaTemporary<T>(file: string, text: string, problem: FileProblem, place: (temp: string) => T): T {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
    return place(temp);
  } catch (error) {
    throw problem(`cannot write it: ${reason(error)}`, 'unstorable');
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // never written, or renamed into place
    }
  }
}

/**
 * What changes whenever `file` is replaced or written (device, inode, size, times); undefined when
 * there is no such file or it cannot be looked at.
 */
export function fileVersion(file: string): string | undefined {
  try {
    const s = statSync(file);
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return undefined;
  }
}

export function reason(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return e.code ?? e.message ?? String(error);
}

function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(3, '0');
}
