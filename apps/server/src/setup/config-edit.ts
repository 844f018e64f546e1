/**
 * What planning one config file takes and gives, shared by the JSON and TOML editors: current
 * text in, new text and a description of the change out. Pure: no file system, no clock.
 */

export interface EditRequest {
  /** The file's current text; undefined when the file does not exist. */
  readonly text: string | undefined;
  /** The object/table that maps server names to entries (`mcpServers`, `mcp_servers`, …). */
  readonly key: string;
  readonly name: string;
  /** Our entry's keys as they should be; undefined to take the entry out. */
  readonly desired: Record<string, unknown> | undefined;
  /** Keys of the entry that setup manages; any other key in it belongs to the user. */
  readonly owned: readonly string[];
}

export type EditStatus = 'added' | 'updated' | 'unchanged' | 'removed' | 'absent';

export interface EditPlan {
  readonly ok: true;
  readonly status: EditStatus;
  /** The file's new text (the same string as the input when nothing changes). */
  readonly text: string;
  /** For 'updated': the owned keys that changed. */
  readonly changed: readonly string[];
  /** The entry as it stands after the edit (user keys included); undefined once removed. */
  readonly entry: Record<string, unknown> | undefined;
  /** The entry as it stood before; undefined when there was none. */
  readonly previous: Record<string, unknown> | undefined;
}

export interface EditFailure {
  readonly ok: false;
  readonly message: string;
  /** 1-based position of the problem, when the parser knows it. */
  readonly line?: number;
  readonly column?: number;
}

export type EditResult = EditPlan | EditFailure;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  // Object.is: a TOML `nan` equals itself.
  if (a === b || Object.is(a, b)) return true;
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

export interface OwnedChanges {
  /** Owned keys to set (missing or different). */
  readonly set: ReadonlyArray<readonly [string, unknown]>;
  /** Owned keys present in the entry that the launch no longer uses (e.g. `args` after a switch to http). */
  readonly unset: readonly string[];
}

/** What must change in an existing entry of ours so that it launches what `desired` says. */
export function ownedChanges(current: Record<string, unknown>, desired: Record<string, unknown>, owned: readonly string[]): OwnedChanges {
  const set: Array<readonly [string, unknown]> = [];
  const unset: string[] = [];
  for (const key of owned) {
    if (Object.hasOwn(desired, key)) {
      if (!Object.hasOwn(current, key) || !deepEqual(current[key], desired[key])) set.push([key, desired[key]]);
    } else if (Object.hasOwn(current, key)) {
      unset.push(key);
    }
  }
  return { set, unset };
}

/** The entry after applying `changes`: user keys kept in place, owned keys updated. */
export function applyOwned(current: Record<string, unknown>, changes: OwnedChanges): Record<string, unknown> {
  const next: Record<string, unknown> = { ...current };
  for (const key of changes.unset) delete next[key];
  for (const [key, value] of changes.set) next[key] = value;
  return next;
}

/** 1-based line and column of a character offset. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

export function isBlank(text: string | undefined): boolean {
  return text === undefined || text.trim() === '';
}
