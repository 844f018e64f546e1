import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@mdp/core';
import { loadDurableVote, saveDurableVote } from '../src/durable.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('durable vote', () => {
  it('creates its directories for the owner only (0700), writes the file 0600 and reads it back', () => {
    const home = mkdtempSync(join(tmpdir(), 'mdp-durable-'));
    dirs.push(home);
    const file = join(home, 'state', 'mdp-server', 'mdp', 'n1.json');
    expect(saveDurableVote(file, { term: 7, votedFor: 'n2' }, silentLogger)).toBe(true);
    for (const dir of [join(home, 'state'), join(home, 'state', 'mdp-server'), join(home, 'state', 'mdp-server', 'mdp')]) {
      expect(statSync(dir).mode & 0o777, dir).toBe(0o700);
    }
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadDurableVote(file, silentLogger)).toEqual({ term: 7, votedFor: 'n2' });
  });

  it('reports a directory it cannot create instead of throwing', () => {
    const home = mkdtempSync(join(tmpdir(), 'mdp-durable-'));
    dirs.push(home);
    const blocked = join(home, 'file');
    saveDurableVote(blocked, { term: 1, votedFor: undefined }, silentLogger);
    // A path through a regular file cannot be a directory.
    expect(saveDurableVote(join(blocked, 'mdp', 'n1.json'), { term: 2, votedFor: undefined }, silentLogger)).toBe(false);
  });
});
