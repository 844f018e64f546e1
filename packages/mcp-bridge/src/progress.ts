/**
 * Progress of a `callPaths` (MCP `notifications/progress`), when the agent's request carries a
 * `progressToken`: one notification as each client answers, `progress` the clients done so far and
 * `total` the clients called, its `message` naming the client and how it went. Over many clients at
 * most PROGRESS_MAX_NOTIFICATIONS are sent (one per percent), the last one always.
 */
import type { CallPathsResult } from '@mdp/protocol';
import type { ProgressNotification } from '@modelcontextprotocol/sdk/types.js';
import { LABEL_PART_MAX_CHARS, capLine } from './text.js';

export const PROGRESS_MAX_NOTIFICATIONS = 100;

export type ProgressParams = ProgressNotification['params'];
type Outcome = CallPathsResult['results'][number];

/** Whether the `done`-th answer of `total` is one to tell. */
export function progressDue(done: number, total: number): boolean {
  if (total <= PROGRESS_MAX_NOTIFICATIONS || done >= total) return true;
  return Math.floor((done * PROGRESS_MAX_NOTIFICATIONS) / total) > Math.floor(((done - 1) * PROGRESS_MAX_NOTIFICATIONS) / total);
}

/** An `onResult` for the host that sends `send` the progress notifications due. */
export function progressReporter(token: string | number, send: (params: ProgressParams) => void): (outcome: Outcome, total: number) => void {
  let done = 0;
  return (outcome, total) => {
    done += 1;
    if (!progressDue(done, total)) return;
    const how = outcome.ok ? 'answered' : `failed (${capLine(outcome.error.code, LABEL_PART_MAX_CHARS)})`;
    send({ progressToken: token, progress: done, total, message: `${capLine(outcome.clientId, LABEL_PART_MAX_CHARS)} ${how}` });
  };
}
