/** Term and vote on disk, and the floor read from the state files beside one. */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@mdp/core';
import { recordingLogger, removeScratch, scratchDir } from '@mdp/test-kit';
import { loadDurableVote, saveDurableVote, storedTermFloor } from '../src/durable.js';

afterEach(() => removeScratch());

const scratch = (): string => scratchDir('mdp-durable-');

describe('durable votes', () => {
  it('round-trips term and vote, creating the directory', () => {
    const { logger, records } = recordingLogger();
    const file = join(scratch(), 'cluster', 'a.json');
    expect(saveDurableVote(file, { term: 4, votedFor: 'b' }, logger)).toBe(true);
    expect(loadDurableVote(file, logger)).toEqual({ term: 4, votedFor: 'b' });
    expect(records).toEqual([]);
  });

  it('the floor is the highest term stored beside a file, its own included, and 0 without any', () => {
    const { logger, records: lines } = recordingLogger();
    const dir = scratch();
    expect(storedTermFloor(join(dir, 'missing', 'a.json'), logger)).toBe(0);
    saveDurableVote(join(dir, 'a.json'), { term: 3, votedFor: undefined }, logger);
    saveDurableVote(join(dir, 'b.json'), { term: 9, votedFor: 'b' }, logger);
    // Neither a temporary file being written nor a file that is not state counts; a bad one is logged.
    writeFileSync(join(dir, 'c.json.123.tmp'), '{"term": 50}');
    writeFileSync(join(dir, 'd.json'), 'not json');
    expect(storedTermFloor(join(dir, 'a.json'), logger)).toBe(9);
    expect(lines.map((l) => l.event)).toEqual(['cluster.state_invalid']);
  });
  it('creates its directories for the owner only (0700), writes the file 0600 and reads it back', () => {
    const home = scratch();
    const file = join(home, 'state', 'mdp-server', 'mdp', 'n1.json');
    expect(saveDurableVote(file, { term: 7, votedFor: 'n2' }, silentLogger)).toBe(true);
    for (const dir of [join(home, 'state'), join(home, 'state', 'mdp-server'), join(home, 'state', 'mdp-server', 'mdp')]) {
      expect(statSync(dir).mode & 0o777, dir).toBe(0o700);
    }
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadDurableVote(file, silentLogger)).toEqual({ term: 7, votedFor: 'n2' });
  });

  it('reports a directory it cannot create instead of throwing', () => {
    const blocked = join(scratch(), 'file');
    saveDurableVote(blocked, { term: 1, votedFor: undefined }, silentLogger);
    // A path through a regular file cannot be a directory.
    expect(saveDurableVote(join(blocked, 'mdp', 'n1.json'), { term: 2, votedFor: undefined }, silentLogger)).toBe(false);
  });
});
