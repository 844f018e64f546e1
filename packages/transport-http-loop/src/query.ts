/** Query parameters read from a raw query string without building a URL. */

/** `+` is a space in a query; a malformed escape is kept as written (as URLSearchParams does). */
function decode(part: string): string {
  const spaced = part.includes('+') ? part.replaceAll('+', ' ') : part;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return new URLSearchParams(`v=${part}`).get('v') ?? spaced;
  }
}

/**
 * Every value of `name` in `search` (the text after `?`, without it), or `undefined` when absent.
 * A query that does not contain `name` literally and has no escapes is not split at all.
 */
export function queryValues(search: string, name: string): string[] | undefined {
  if (search === '') return undefined;
  const escaped = search.includes('%') || search.includes('+');
  if (!escaped && !search.includes(name)) return undefined;
  let values: string[] | undefined;
  for (const pair of search.split('&')) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if ((escaped ? decode(key) : key) !== name) continue;
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    (values ??= []).push(escaped ? decode(value) : value);
  }
  return values;
}
