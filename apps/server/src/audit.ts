/**
 * The audit log's lines (SPEC §15): one JSON object per call. The caller appears as its auth
 * scheme and a hash of its token, never the token: the first 16 hex digits of the token's
 * SHA-256, enough to tell callers apart and to match a token one holds.
 */
import { createHash } from 'node:crypto';
import type { AuthContext } from '@mdp/protocol';
import type { CallRecord } from '@mdp/core';

/** Hashes are cached per token (a handful per server); the cache is dropped when it grows past this. */
const HASH_CACHE_LIMIT = 1024;

export interface AuditCaller {
  readonly scheme: string | null;
  readonly tokenHash: string | null;
}

/** The outcome label of a call: `ok` or its error code. */
export function outcomeOf(record: CallRecord): string {
  return record.outcome.ok ? 'ok' : record.outcome.error.code;
}

export function createTokenHasher(): (token: string) => string {
  const cache = new Map<string, string>();
  return (token) => {
    let hash = cache.get(token);
    if (hash === undefined) {
      hash = createHash('sha256').update(token).digest('hex').slice(0, 16);
      if (cache.size >= HASH_CACHE_LIMIT) cache.clear();
      cache.set(token, hash);
    }
    return hash;
  };
}

export function auditCaller(auth: AuthContext | undefined, hash: (token: string) => string): AuditCaller | null {
  if (!auth) return null;
  return { scheme: auth.scheme ?? null, tokenHash: auth.token ? hash(auth.token) : null };
}

/** One audit line (without the newline). */
export function auditLine(record: CallRecord, now: Date, hash: (token: string) => string): string {
  return JSON.stringify({
    time: now.toISOString(),
    caller: auditCaller(record.caller, hash),
    route: record.route,
    clientId: record.clientId,
    method: record.method,
    path: record.path,
    outcome: outcomeOf(record),
    durationMs: Math.round(record.durationMs * 1000) / 1000,
  });
}
