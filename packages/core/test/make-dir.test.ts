import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeDirectorySync } from '../src/index.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'mdp-make-dir-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('makeDirectorySync', () => {
  it('makes the directory and its missing parents, each with the mode', () => {
    const dir = join(root, 'a', 'b', 'c');
    makeDirectorySync(dir, 0o700);
    for (const made of [join(root, 'a'), join(root, 'a', 'b'), dir]) {
      expect(statSync(made).isDirectory()).toBe(true);
      expect(statSync(made).mode & 0o777).toBe(0o700);
    }
  });

  it('does nothing for a directory that exists, and takes relative paths', () => {
    makeDirectorySync(root);
    const cwd = process.cwd();
    process.chdir(root);
    try {
      makeDirectorySync(join('x', 'y'));
    } finally {
      process.chdir(cwd);
    }
    expect(existsSync(join(root, 'x', 'y'))).toBe(true);
  });

  it('throws ENOTDIR when a file stands in the way', () => {
    writeFileSync(join(root, 'file'), '');
    expect(() => makeDirectorySync(join(root, 'file', 'below'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
    expect(() => makeDirectorySync(join(root, 'file'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
  });

  // Node's own recursive mkdir never returns here: /proc answers ENOENT for a directory under it.
  it.skipIf(!existsSync('/proc/self'))('throws where the system cannot make the directory, instead of trying forever', () => {
    expect(() => makeDirectorySync('/proc/nope/deeper', 0o700)).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});
