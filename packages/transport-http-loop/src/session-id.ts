/** Which session an HTTP loop request names (SPEC §6): header `x-mdp-session-id`, else query `sessionId`. */

export const SESSION_ID_HEADER = 'x-mdp-session-id';
export const SESSION_ID_QUERY = 'sessionId';

export type SessionIdResult =
  | { readonly kind: 'ok'; readonly id: string }
  | { readonly kind: 'missing' }
  | { readonly kind: 'malformed'; readonly error: string };

/** Distinct non-empty values, or `undefined` when there are none. */
function distinct(values: readonly string[]): string[] | undefined {
  const set = new Set(values.map((value) => value.trim()).filter((value) => value !== ''));
  return set.size === 0 ? undefined : [...set];
}

/**
 * Read the session id from the header value (a repeated header arrives joined by `, `) and the
 * query values. The header wins over the query; one source giving two different ids is malformed,
 * whichever source is used, since the client's intent is ambiguous.
 */
export function readSessionId(header: string | null | undefined, queryValues: readonly string[] | undefined): SessionIdResult {
  // The usual request: one header value and no query value; nothing to split or compare.
  if (queryValues === undefined && header && !header.includes(',')) {
    const id = header.trim();
    if (id !== '') return { kind: 'ok', id };
  }
  const fromHeader = distinct(header?.split(',') ?? []);
  const fromQuery = distinct(queryValues ?? []);
  if (fromHeader && fromHeader.length > 1) {
    return { kind: 'malformed', error: `${SESSION_ID_HEADER}: given more than once with different values` };
  }
  if (fromQuery && fromQuery.length > 1) {
    return { kind: 'malformed', error: `${SESSION_ID_QUERY}: given more than once with different values` };
  }
  const id = fromHeader?.[0] ?? fromQuery?.[0];
  return id === undefined ? { kind: 'missing' } : { kind: 'ok', id };
}
