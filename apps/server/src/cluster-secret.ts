/**
 * The per-user cluster secret: 32 random bytes (base64url) in a file only its owner can read (mode
 * 0600, in a directory of mode 0700 when this creates it), made on first use. Every server of one
 * user reads the same file and proves the secret in its hellos; another user's servers cannot read
 * it, so on the same port range they form a cluster of their own instead of joining (and being sent
 * every mirrored client). The file is checked, never trusted: it must be a regular file of this user
 * that nobody else can read, in a directory nobody else can write (else another user could swap it
 * for a secret of theirs).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Name of the secret's file in the state directory. */
export const CLUSTER_SECRET_FILE = 'cluster-secret';

/** What to tell a user whose secret file cannot be used. */
const ADVICE = 'give --cluster-state-dir a private directory, or set --cluster-secret (none for an open cluster)';

export function clusterSecretFile(stateDir: string): string {
  return join(stateDir, CLUSTER_SECRET_FILE);
}

/** The secret in `file`, made first if there is none. Throws an Error that says what to do. */
export function loadOrCreateClusterSecret(file: string): string {
  const dir = dirname(file);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw problem(file, `cannot create ${dir}: ${reason(error)}`);
  }
  checkDirectory(file, dir);
  const existing = readSecret(file);
  if (existing !== undefined) return existing;
  const secret = randomBytes(32).toString('base64url');
  // Written in full under a temporary name, then linked into place: a server starting at the same
  // moment reads either no file or the whole secret, and the first link wins.
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    try {
      linkSync(temp, file);
      return secret;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  } catch (error) {
    throw problem(file, `cannot write it: ${reason(error)}`);
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // never written, or already gone
    }
  }
  const winner = readSecret(file);
  if (winner === undefined) throw problem(file, 'it vanished while it was made');
  return winner;
}

/** The directory must be ours and writable by nobody else. */
function checkDirectory(file: string, dir: string): void {
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) throw problem(file, `${dir} is not a directory`);
  const uid = process.getuid?.();
  if (uid === undefined) return;
  if (stat.uid !== uid) throw problem(file, `${dir} belongs to another user (uid ${stat.uid})`);
  if ((stat.mode & 0o022) !== 0) throw problem(file, `${dir} is writable by others (mode ${octal(stat.mode)})`);
}

/** The secret in `file`, or undefined when there is no file; throws when it is not fit to use. */
function readSecret(file: string): string | undefined {
  let fd: number;
  try {
    // O_NOFOLLOW: a link planted where the secret should be is refused, not followed.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw problem(file, `cannot read it: ${reason(error)}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw problem(file, 'it is not a regular file');
    const uid = process.getuid?.();
    if (uid !== undefined) {
      if (stat.uid !== uid) throw problem(file, `it belongs to another user (uid ${stat.uid})`);
      if ((stat.mode & 0o077) !== 0) throw problem(file, `others can read or change it (mode ${octal(stat.mode)}); chmod 600 it`);
    }
    const secret = readFileSync(fd, 'utf8').trim();
    if (secret === '') throw problem(file, 'it is empty');
    return secret;
  } finally {
    closeSync(fd);
  }
}

function problem(file: string, what: string): Error {
  return new Error(`cluster secret ${file}: ${what}; ${ADVICE}`);
}

function reason(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return e.code ?? e.message ?? String(error);
}

function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(3, '0');
}
