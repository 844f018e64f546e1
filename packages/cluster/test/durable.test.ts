/** Term and vote on disk, and the floor read from the state files beside one. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadDurableVote, saveDurableVote, storedTermFloor } from '../src/durable.js';
import { memoryLogger, removeScratch, scratchDir, type LogLine } from './harness.js';

afterEach(() => removeScratch());

const scratch = (): string => scratchDir('mdp-durable-');

describe('durable votes', () => {
  it('round-trips term and vote, creating the directory', () => {
    const lines: LogLine[] = [];
    const file = join(scratch(), 'cluster', 'a.json');
    expect(saveDurableVote(file, { term: 4, votedFor: 'b' }, memoryLogger(lines))).toBe(true);
    expect(loadDurableVote(file, memoryLogger(lines))).toEqual({ term: 4, votedFor: 'b' });
    expect(lines).toEqual([]);
  });

  it('the floor is the highest term stored beside a file, its own included, and 0 without any', () => {
    const lines: LogLine[] = [];
    const logger = memoryLogger(lines);
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
});
