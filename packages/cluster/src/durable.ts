/**
 * Term and vote on disk, so that a restarted process cannot vote twice in one term (the one
 * guarantee the start-up grace alone cannot give). Written synchronously before any message that
 * depends on it leaves the process; a few bytes, only when an election changes them.
 */
import { readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeDirectorySync, type Logger } from '@mdp/core';
import type { DurableVote } from './election.js';

export function loadDurableVote(file: string, logger: Logger): DurableVote | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn('cluster.state_unreadable', { file, error });
    return undefined;
  }
  try {
    const value = JSON.parse(text) as { term?: unknown; votedFor?: unknown };
    const term = value.term;
    if (typeof term !== 'number' || !Number.isSafeInteger(term) || term < 0) throw new Error('term is not a whole number');
    const votedFor = typeof value.votedFor === 'string' ? value.votedFor : undefined;
    return { term, votedFor };
  } catch (error) {
    logger.warn('cluster.state_invalid', { file, error });
    return undefined;
  }
}

/**
 * The highest term stored by any server whose state file lies beside `file` (the servers of one
 * cluster on this host, this one included); 0 when none can be read. A member that is gone for good
 * may have led in its last term: the ones left must not elect in it again.
 */
export function storedTermFloor(file: string, logger: Logger): number {
  const dir = dirname(file);
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn('cluster.state_unreadable', { file: dir, error });
    return 0;
  }
  let floor = 0;
  for (const name of names) floor = Math.max(floor, loadDurableVote(join(dir, name), logger)?.term ?? 0);
  return floor;
}

/** Returns false (and logs) when the state could not be written. */
export function saveDurableVote(file: string, vote: DurableVote, logger: Logger): boolean {
  try {
    // Owner only: the directories this creates (a user's state directory) and the file.
    makeDirectorySync(dirname(file), 0o700);
    const temp = `${file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify({ term: vote.term, votedFor: vote.votedFor ?? null })}\n`, { mode: 0o600 });
    renameSync(temp, file);
    return true;
  } catch (error) {
    logger.error('cluster.state_write_failed', { file, error });
    return false;
  }
}
