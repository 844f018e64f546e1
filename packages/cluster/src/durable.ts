/**
 * Term and vote on disk, so that a restarted process cannot vote twice in one term (the one
 * guarantee the start-up grace alone cannot give). Written synchronously before any message that
 * depends on it leaves the process; a few bytes, only when an election changes them.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '@mdp/core';
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

/** Returns false (and logs) when the state could not be written. */
export function saveDurableVote(file: string, vote: DurableVote, logger: Logger): boolean {
  try {
    // Owner only: the directories this creates (a user's state directory) and the file.
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const temp = `${file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify({ term: vote.term, votedFor: vote.votedFor ?? null })}\n`, { mode: 0o600 });
    renameSync(temp, file);
    return true;
  } catch (error) {
    logger.error('cluster.state_write_failed', { file, error });
    return false;
  }
}
