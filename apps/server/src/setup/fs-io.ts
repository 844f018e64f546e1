/** The thin I/O layer under setup: read a config, write it atomically, find a command on PATH. */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, chmod, open, readFile, readlink, realpath, rename, stat, unlink } from 'node:fs/promises';
import { basename, delimiter as hostDelimiter, dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { makeDirectorySync } from '@mdp/core';

/** Largest config file setup reads, bytes: agent configs are a few KiB; anything this big is not one. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * The file's text, or undefined when it does not exist. Throws (with a message that says why) for
 * what setup must not read or replace: something other than a regular file (a FIFO would block
 * forever, a device never end), a file over {@link MAX_CONFIG_BYTES}, or a file with other hard
 * links (the atomic rename would leave them holding the old text). A symlink is followed.
 */
export async function readOptional(file: string): Promise<string | undefined> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (!info.isFile()) throw new Error('it is not a regular file');
  if (info.size > MAX_CONFIG_BYTES) throw new Error(`it is ${info.size} bytes, more than the ${MAX_CONFIG_BYTES} a config file may have`);
  if (info.nlink > 1) throw new Error(`it has ${info.nlink - 1} other hard link(s), which replacing it would break; edit it by hand`);
  const text = await readFile(file, 'utf8');
  // A file that grew past the limit between the two calls is not read on.
  if (Buffer.byteLength(text) > MAX_CONFIG_BYTES) throw new Error(`it is more than the ${MAX_CONFIG_BYTES} bytes a config file may have`);
  return text;
}

/** Symlinks followed to a file that does not exist yet, at most (the kernel's own limit is 40). */
const MAX_LINKS = 40;

/**
 * The file a write of `file` must replace: its real path; for a symlink whose target does not
 * exist yet (a dotfile manager's link to a file not written yet), that target, so the link stays.
 */
async function writeTarget(file: string): Promise<string> {
  const real = await realpath(file).catch(() => undefined);
  if (real !== undefined) return real;
  let path = file;
  for (let links = 0; links < MAX_LINKS; links++) {
    const link = await readlink(path).catch(() => undefined);
    if (link === undefined) return path;
    path = resolve(dirname(path), link);
  }
  throw new Error(`it is a chain of more than ${MAX_LINKS} symlinks`);
}

/**
 * Replaces `file` with `text` so that no reader ever sees half a file: the text goes to a
 * temporary file in the same folder (same file system, so the rename is atomic), which takes the
 * old file's mode and is then renamed over it. A symlinked config (dotfile managers) is written
 * through: the link stays and its target changes (or is made, for a link to a file not there yet).
 * A file its owner made read-only is refused: the rename would replace it all the same.
 */
export async function writeAtomic(file: string, text: string): Promise<void> {
  const target = await writeTarget(file);
  const dir = dirname(target);
  const mode = await stat(target).then(
    (s) => s.mode & 0o7777,
    () => undefined,
  );
  if (mode !== undefined && (mode & 0o200) === 0) {
    throw new Error(`it is read-only (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); make it writable for setup to edit it, or edit it by hand`);
  }
  makeDirectorySync(dir);
  const temporary = join(dir, `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const handle = await open(temporary, 'wx', mode ?? 0o666);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    // open() applies the umask; the old file's mode is what the user chose, so set it exactly.
    if (mode !== undefined) await chmod(temporary, mode);
    await rename(temporary, target);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
}

export async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/**
 * The absolute path of an executable `command` found on `PATH`, or undefined. On Windows only
 * `.exe` counts: a `.cmd` shim cannot be started without a shell, which would re-parse our
 * arguments (a JSON entry among them).
 */
export async function findOnPath(command: string, env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform): Promise<string | undefined> {
  const delimiter = platform === 'win32' ? ';' : platform === process.platform ? hostDelimiter : ':';
  const names = platform === 'win32' ? [`${command}.exe`] : [command];
  for (const dir of (env['PATH'] ?? env['Path'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    for (const name of names) {
      const candidate = join(dir, name);
      const file = await stat(candidate).catch(() => undefined);
      if (!file?.isFile()) continue;
      if (
        platform === 'win32' ||
        (await access(candidate, constants.X_OK).then(
          () => true,
          () => false,
        ))
      )
        return candidate;
    }
  }
  return undefined;
}

export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Set when the command could not be started at all. */
  readonly error?: Error;
}

/** Runs a command without a shell (arguments are passed as they are) and collects its output. */
export function runCommand(
  file: string,
  args: readonly string[],
  options: { cwd: string; env: Readonly<Record<string, string | undefined>> },
): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd: options.cwd, env: { ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', (error) => resolve({ code: null, stdout, stderr, error }));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
