/** What a mock client process counts, for the orchestrator to read between runs. */
export interface ClientStats {
  /** callClient messages answered. */
  served: number;
  /** Anything unexpected: socket errors, unexpected closes, refused sends, bad statuses. */
  errors: number;
  lastError: string | undefined;
}

export function newStats(): ClientStats {
  return { served: 0, errors: 0, lastError: undefined };
}

export function countError(stats: ClientStats, what: string): void {
  stats.errors++;
  stats.lastError = what;
}

/** The callClientResult of every mock client, built without JSON.stringify of the whole message. */
export function resultFrame(requestId: string, dataJson: string): string {
  return `{"type":"callClientResult","requestId":${JSON.stringify(requestId)},"ok":true,"data":${dataJson}}`;
}
