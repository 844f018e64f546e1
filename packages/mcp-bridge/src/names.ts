/**
 * Names of catalog tools and prompts (the rules agents see):
 *
 *   - `[a-z0-9_]` only, at most 48 characters: static path segments in snake case joined with
 *     `_` (`POST /page/click` → `page_click`, `/getUser` → `get_user`); parameter segments and the
 *     `skill.md`/`prompt.md` leaf are left out;
 *   - a path with several methods gets a verb prefix (`delete_users_profile`);
 *   - a variant of a method and path that another client publishes with another schema gets a
 *     short alias of its client as prefix (`shop_page_click`);
 *   - too long → cut, then `_` and a 6-character hash of what the name stands for;
 *   - taken, or one of the generic tools' names in any spelling → the same hash suffix.
 *
 * Names are kept for the life of the process: the book below remembers which key (what a name
 * stands for) got which name, and a name never passes to another key, so an agent's `page_click`
 * means the same thing for as long as the server runs.
 */
import { createHash } from 'node:crypto';

/** Longest tool or prompt name. */
export const NAME_MAX_CHARS = 48;
/** Longest client alias in a name prefix. */
export const ALIAS_MAX_CHARS = 16;
/** Names the book remembers; past this, those of keys not listed now are forgotten, oldest first. */
export const NAME_BOOK_MAX = 10_000;

export const GENERIC_TOOL_NAMES = ['listClients', 'listPaths', 'callPath', 'callPaths'] as const;

/** The generic names in the spellings a generated name could take. */
const RESERVED: ReadonlySet<string> = new Set(GENERIC_TOOL_NAMES.flatMap((name) => [name.toLowerCase(), snake(name)]));

/** `getUser-Profile.v2` → `get_user_profile_v2`; empty when nothing usable is left. */
export function snake(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** Six lower-case hex characters standing for `key`. */
export function hash6(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 6);
}

/** Join name parts with `_`, skipping empty ones. */
export function joinName(...parts: string[]): string {
  return parts.filter((part) => part !== '').join('_');
}

const LEAF = /^(skill|prompt)\.md$/i;
const SUFFIX = /\.(skill|prompt)\.md$/i;

/** The static segments of `path` in snake case, joined: `/docs/:id/review/skill.md` → `docs_review`. */
export function pathName(path: string): string {
  const segments = path.slice(1).split('/');
  const last = segments.length - 1;
  const parts: string[] = [];
  segments.forEach((segment, index) => {
    if (segment.startsWith(':')) return;
    if (index === last && LEAF.test(segment)) return;
    parts.push(snake(index === last ? segment.replace(SUFFIX, '') : segment));
  });
  return joinName(...parts);
}

/** A short alias of a client for name prefixes: `127.0.0.1:4.todo-app` is `todo_app` once the prefix is gone. */
export function clientAlias(clientId: string): string {
  const alias = snake(clientId).slice(0, ALIAS_MAX_CHARS).replace(/_+$/, '');
  return alias === '' ? `c${hash6(clientId).slice(0, 5)}` : alias;
}

/** `name` cut to fit with room for `_` and the hash of `key`. */
function withHash(name: string, key: string): string {
  const room = NAME_MAX_CHARS - 7;
  return joinName(name.slice(0, room).replace(/_+$/, ''), hash6(key));
}

/** `name` made to fit: as is when short enough, else cut plus the hash of `key`. */
export function fitName(name: string, key: string): string {
  return name.length <= NAME_MAX_CHARS ? name : withHash(name, key);
}

/** Which key got which name, per namespace (tools and prompts each have their own). */
export interface NameBook {
  /** `namespace key` → name. Insertion order is the order names were given. */
  readonly byKey: ReadonlyMap<string, string>;
  /** `namespace name` → key. */
  readonly byName: ReadonlyMap<string, string>;
}

export const emptyNameBook: NameBook = { byKey: new Map(), byName: new Map() };

/** A key as the book holds it: names are unique per namespace. */
export function bookKey(space: string, key: string): string {
  return `${space} ${key}`;
}

/**
 * Names for `requests` (key → preferred name) in namespace `space`. Returns the names and the book,
 * which is the same object when nothing new was named.
 */
export function assignNames(
  book: NameBook,
  space: string,
  requests: ReadonlyArray<{ readonly key: string; readonly preferred: () => string }>,
): { names: Map<string, string>; book: NameBook } {
  const names = new Map<string, string>();
  let byKey: Map<string, string> | undefined;
  let byName: Map<string, string> | undefined;
  const free = (candidate: string): boolean => !RESERVED.has(candidate) && !(byName ?? book.byName).has(bookKey(space, candidate));
  for (const { key, preferred } of requests) {
    const known = (byKey ?? book.byKey).get(bookKey(space, key));
    if (known !== undefined) {
      names.set(key, known);
      continue;
    }
    let name = fitName(preferred(), key);
    if (!free(name)) name = withHash(name, key);
    for (let n = 1; !free(name); n += 1) name = withHash(name, `${key}#${n}`);
    byKey ??= new Map(book.byKey);
    byName ??= new Map(book.byName);
    byKey.set(bookKey(space, key), name);
    byName.set(bookKey(space, name), bookKey(space, key));
    names.set(key, name);
  }
  return { names, book: byKey && byName ? { byKey, byName } : book };
}

/**
 * The book kept to at most `max` names: the oldest keys not in `inUse` (book keys, every
 * namespace) are forgotten first. Same object when nothing had to go.
 */
export function trimNameBook(book: NameBook, inUse: ReadonlySet<string>, max = NAME_BOOK_MAX): NameBook {
  let excess = book.byKey.size - max;
  if (excess <= 0) return book;
  const byKey = new Map(book.byKey);
  const byName = new Map(book.byName);
  for (const [key, name] of book.byKey) {
    if (excess <= 0) break;
    if (inUse.has(key)) continue;
    byKey.delete(key);
    byName.delete(bookKey(key.slice(0, key.indexOf(' ')), name));
    excess -= 1;
  }
  return { byKey, byName };
}
