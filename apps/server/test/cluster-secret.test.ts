/** The per-user cluster secret file: made once, private, and refused when anyone else could read or swap it. */
import { chmodSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeScratch, scratchDir } from '@mdp/test-kit';
import { clusterSecretsOf, tokenSecret } from '../src/cluster.js';
import { clusterSecretFile, loadOrCreateClusterSecret } from '../src/cluster-secret.js';

afterEach(() => removeScratch());

const scratch = (): string => scratchDir('mdp-secret-');

const posix = process.platform !== 'win32';

describe('the cluster secret file', () => {
  it('is made on first use, private (file 0600, new directory 0700), and read back the same', () => {
    const dir = join(scratch(), 'state', 'mdp-server');
    const file = clusterSecretFile(dir);
    const secret = loadOrCreateClusterSecret(file);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(readFileSync(file, 'utf8')).toBe(`${secret}\n`);
    if (posix) {
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
    }
    expect(loadOrCreateClusterSecret(file)).toBe(secret);
    // No temporary file is left beside it.
    expect(readdirSync(dir)).toEqual(['cluster-secret']);
  });

  it('two state directories hold two secrets', () => {
    expect(loadOrCreateClusterSecret(clusterSecretFile(scratch()))).not.toBe(loadOrCreateClusterSecret(clusterSecretFile(scratch())));
  });

  it.runIf(posix)('refuses a file others can read, a link planted in its place, an empty file and a directory others can write', () => {
    const readable = scratch();
    writeFileSync(join(readable, 'cluster-secret'), 'k\n', { mode: 0o644 });
    expect(() => loadOrCreateClusterSecret(join(readable, 'cluster-secret'))).toThrow(/others can read or change it \(mode 644\); chmod 600 it/);

    const linked = scratch();
    writeFileSync(join(linked, 'elsewhere'), 'theirs\n', { mode: 0o600 });
    symlinkSync(join(linked, 'elsewhere'), join(linked, 'cluster-secret'));
    expect(() => loadOrCreateClusterSecret(join(linked, 'cluster-secret'))).toThrow(/cannot read it: ELOOP/);

    const empty = scratch();
    writeFileSync(join(empty, 'cluster-secret'), '\n', { mode: 0o600 });
    expect(() => loadOrCreateClusterSecret(join(empty, 'cluster-secret'))).toThrow(/it is empty/);

    const shared = join(scratch(), 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    expect(() => loadOrCreateClusterSecret(join(shared, 'cluster-secret'))).toThrow(/writable by others \(mode 777\).*--cluster-secret/);
  });
});

describe('clusterSecretsOf', () => {
  it('takes the secret, else the auth tokens, else the file; a standalone server needs none', () => {
    const file = clusterSecretFile(scratch());
    expect(clusterSecretsOf({ secret: 'k', secretFile: file }, ['t'])).toEqual(['k']);
    expect(clusterSecretsOf({ secretFile: file }, ['t', ''])).toEqual([tokenSecret('t')]);
    const made = clusterSecretsOf({ secretFile: file }, undefined);
    expect(made).toEqual([readFileSync(file, 'utf8').trim()]);
    expect(clusterSecretsOf({}, undefined)).toEqual([]);
    expect(clusterSecretsOf(undefined, ['t'])).toEqual([]);
    const untouched = join(scratch(), 'never', 'cluster-secret');
    expect(clusterSecretsOf({ mode: 'standalone', secretFile: untouched }, undefined)).toEqual([]);
    expect(() => statSync(untouched)).toThrow();
  });
});
