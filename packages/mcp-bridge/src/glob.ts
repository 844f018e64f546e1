/**
 * The include/exclude filters of the catalog surface. A glob is `*` (any characters, `/`
 * included), `?` (one character) and literal text; it must match the whole string. An item is
 * listed when some include glob matches one of its names (or there are none) and no exclude glob
 * matches any of them.
 */

export type Matcher = (names: readonly string[]) => boolean;

export function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 's');
}

export function createFilter(include: readonly string[], exclude: readonly string[]): Matcher {
  const inc = include.map(globToRegExp);
  const exc = exclude.map(globToRegExp);
  const any = (patterns: RegExp[], names: readonly string[]): boolean => patterns.some((re) => names.some((name) => re.test(name)));
  return (names) => (inc.length === 0 || any(inc, names)) && !any(exc, names);
}
