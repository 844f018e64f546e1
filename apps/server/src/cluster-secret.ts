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
import { join } from 'node:path';
import { createPrivateFile, privateDirectory, readPrivateFile } from './private-file.js';

/** Name of the secret's file in the state directory. */
export const CLUSTER_SECRET_FILE = 'cluster-secret';

/** What to tell a user whose secret file cannot be used. */
const ADVICE = 'give --cluster-state-dir a private directory, or set --cluster-secret (none for an open cluster)';

export function clusterSecretFile(stateDir: string): string {
  return join(stateDir, CLUSTER_SECRET_FILE);
}

/** The secret in `file`, made first if there is none. Throws an Error that says what to do. */
export function loadOrCreateClusterSecret(file: string): string {
  const problem = (what: string): Error => new Error(`cluster secret ${file}: ${what}; ${ADVICE}`);
  privateDirectory(file, problem);
  const existing = readSecret(file, problem);
  if (existing !== undefined) return existing;
  const secret = randomBytes(32).toString('base64url');
  // A server starting at the same moment reads either no file or the whole secret; the first link wins.
  if (createPrivateFile(file, `${secret}\n`, problem)) return secret;
  const winner = readSecret(file, problem);
  if (winner === undefined) throw problem('it vanished while it was made');
  return winner;
}

/** The secret in `file`, or undefined when there is no file; throws when it is not fit to use. */
function readSecret(file: string, problem: (what: string) => Error): string | undefined {
  const text = readPrivateFile(file, problem);
  if (text === undefined) return undefined;
  const secret = text.trim();
  if (secret === '') throw problem('it is empty');
  return secret;
}
