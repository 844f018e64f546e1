/**
 * Plans an edit of a TOML config file (Codex's config.toml) as whole lines added or taken out, in
 * the file's own style, so that every other byte stays where it was and add then remove gives
 * back the file it started from:
 *
 *   the file's servers are…        our entry is written…              after…
 *   [mcp_servers.docs] tables      [mcp_servers.mdp] + its keys       the last mcp_servers table
 *   (no server yet, empty file)    the same                           (the end of the file)
 *   mcp_servers.docs.command = …   mcp_servers.mdp.command = … (one   the last of those keys, in
 *   or docs.command = … keys       key per line, the same prefix)     the same table
 *   mcp_servers.docs = { … }       mcp_servers.mdp = { … }            the same
 *
 * Each line is placed right after the statement it follows, never after the comments that head
 * the next table, so those stay with their table (and are not taken out with our entry). An
 * update changes the values of our keys in place. A layout this cannot edit by lines (servers
 * inside an inline `mcp_servers = { … }`) goes through toml-patch's `patch`.
 *
 * Whatever the route, the new text is parsed again with the same parser and must hold exactly
 * the document intended, or the user's file is left untouched.
 */
import { parse, patch, stringify, TomlFormat } from '@decimalturn/toml-patch';
import { applyOwned, deepEqual, isPlainObject, ownedChanges, type EditFailure, type EditRequest, type EditResult, type OwnedChanges } from './config-edit.js';
import { contentEnd, isBlankLine, lineCount, readLayout, type LineIndex, type TomlLayout, type TomlStatement } from './toml-statements.js';

export function editTomlConfig(request: EditRequest): EditResult {
  const { key, name } = request;
  const source = request.text ?? '';
  let document: Record<string, unknown>;
  try {
    document = parse(source) as Record<string, unknown>;
  } catch (error) {
    return parseFailure(error);
  }
  const container = document[key];
  if (container !== undefined && !isPlainObject(container)) return { ok: false, message: `"${key}" is not a table` };
  const current = container?.[name];
  if (current !== undefined && !isPlainObject(current)) return { ok: false, message: `"${key}.${name}" is not a table` };

  const unchanged = (status: 'absent' | 'unchanged'): EditResult => ({ ok: true, status, text: source, changed: [], entry: current, previous: current });
  let entry: Record<string, unknown> | undefined;
  let changes: OwnedChanges | undefined;
  if (request.desired === undefined) {
    if (!current) return unchanged('absent');
  } else if (!current) {
    entry = { ...request.desired };
  } else {
    changes = ownedChanges(current, request.desired, request.owned);
    if (changes.set.length === 0 && changes.unset.length === 0) return unchanged('unchanged');
    entry = applyOwned(current, changes);
  }

  const servers: Record<string, unknown> = { ...(container ?? {}) };
  if (entry) servers[name] = entry;
  else delete servers[name];
  const wanted: Record<string, unknown> = { ...document, [key]: servers };

  const eol = source.includes('\r\n') ? '\r\n' : '\n';
  let text: string;
  try {
    const layout = readLayout(source);
    const format = valueFormat(source);
    const edited =
      entry === undefined
        ? removeEntry(layout, [key, name])
        : changes === undefined
          ? addEntry(layout, key, name, entry, format, eol)
          : updateEntry(layout, [key, name], changes, format, eol);
    text = edited ?? patchWhole(source, wanted, key, eol);
  } catch (error) {
    return { ok: false, message: `cannot edit it safely: ${(error as Error).message}` };
  }

  const check = verify(text, wanted, key);
  if (check) return check;
  const status = entry === undefined ? 'removed' : current ? 'updated' : 'added';
  const changed = changes ? [...changes.unset, ...changes.set.map(([property]) => property)] : [];
  return { ok: true, status, text, changed, entry, previous: current };
}

/** Adds our entry in the style of the servers already in the file (see the table at the top). */
function addEntry(layout: TomlLayout, key: string, name: string, entry: Record<string, unknown>, format: TomlFormat, eol: string): string | undefined {
  const { statements, lines } = layout;
  const isHeader = (s: TomlStatement): boolean => s.kind === 'table' || s.kind === 'array-table';
  const tables = statements.filter((s) => isHeader(s) && s.path[0] === key);
  // Servers written as keys, at the top level or in [mcp_servers]: `docs.command = …`, `docs = { … }`.
  const serverKeys = statements.filter(
    (s) => s.kind === 'key' && s.path[0] === key && s.table.length <= 1 && (s.path.length > 2 || (s.path.length === 2 && s.value?.inlineTable === true)),
  );
  const pairs = Object.entries(entry).map(([property, value]) => `${tomlKey(property)} = ${tomlValue(value, format, eol)}`);

  if (tables.some((s) => s.path.length >= 2) || serverKeys.length === 0) {
    // `mcp_servers = { … }` on one line: only the library can add to it.
    if (statements.some((s) => s.kind === 'key' && s.path.length === 1 && s.path[0] === key)) return undefined;
    const anchor = tables.at(-1);
    const after = anchor ? contentEnd(layout, anchor) : lastContentLine(lines);
    return insertLines(lines, after, [`[${tomlKey(key)}.${tomlKey(name)}]`, ...pairs], after >= 0, eol);
  }
  const anchor = serverKeys.at(-1)!;
  const prefix =
    anchor.path
      .slice(anchor.table.length, 1)
      .map((segment) => `${tomlKey(segment)}.`)
      .join('') + tomlKey(name);
  const added = anchor.path.length === 2 ? [`${prefix} = ${tomlValue(entry, inlineFormat(format), eol)}`] : pairs.map((pair) => `${prefix}.${pair}`);
  return insertLines(lines, anchor.last, added, false, eol);
}

/** Changes our owned keys in place: values replaced, keys the launch no longer uses taken out, new ones added after our last. */
function updateEntry(layout: TomlLayout, own: readonly string[], changes: OwnedChanges, format: TomlFormat, eol: string): string | undefined {
  const { statements, lines } = layout;
  const keyAt = (property: string): TomlStatement | undefined => statements.find((s) => s.kind === 'key' && samePath(s.path, [...own, property]));
  // Our entry as one inline table (`mdp = { … }`): the library edits inside it.
  if (statements.some((s) => s.kind === 'key' && samePath(s.path, own))) return undefined;

  const edits: Edit[] = [];
  const added: Array<readonly [string, unknown]> = [];
  for (const property of changes.unset) {
    const at = keyAt(property);
    if (!at) return undefined;
    edits.push(deleteLines(lines, at.first, at.last));
  }
  for (const [property, value] of changes.set) {
    const at = keyAt(property);
    if (at?.value) edits.push({ start: at.value.start, end: at.value.end, content: tomlValue(value, format, eol) });
    else if (at) return undefined;
    else added.push([property, value]);
  }
  if (added.length > 0) {
    const table = statements.find((s) => s.kind === 'table' && samePath(s.path, own));
    const dotted = statements.filter((s) => s.kind === 'key' && s.path.length > own.length && startsWith(s.path, own) && s.table.length < own.length);
    let after: number;
    let prefix: string;
    if (table) {
      const inTable = statements.filter((s) => s.kind === 'key' && samePath(s.table, own));
      after = inTable.at(-1)?.last ?? table.last;
      prefix = '';
    } else if (dotted.length > 0) {
      const anchor = dotted.at(-1)!;
      after = anchor.last;
      prefix = anchor.path
        .slice(anchor.table.length, own.length)
        .map((segment) => `${tomlKey(segment)}.`)
        .join('');
    } else {
      return undefined;
    }
    const pairs = added.map(([property, value]) => `${prefix}${tomlKey(property)} = ${tomlValue(value, format, eol)}`);
    edits.push(insertion(lines, after, pairs, false, eol));
  }
  return applyEdits(lines.text, edits);
}

/**
 * Takes out every line of our entry: its tables (header to content end, and the blank line above
 * the header, which adding put there) and its keys elsewhere (`mcp_servers.mdp.x = …`).
 */
function removeEntry(layout: TomlLayout, own: readonly string[]): string | undefined {
  const { statements, lines } = layout;
  const ranges: Array<[number, number]> = [];
  for (const s of statements) {
    if ((s.kind === 'table' || s.kind === 'array-table') && startsWith(s.path, own)) {
      const first = s.first > 0 && isBlankLine(lines, s.first - 1) ? s.first - 1 : s.first;
      ranges.push([first, contentEnd(layout, s)]);
    } else if (s.kind === 'key' && startsWith(s.path, own) && !startsWith(s.table, own)) {
      ranges.push([s.first, s.last]);
    }
  }
  // Our entry inside an inline `mcp_servers = { … }`: the library takes it out.
  if (ranges.length === 0) return undefined;
  ranges.sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const range of ranges) {
    const last = merged.at(-1);
    if (last && range[0] <= last[1] + 1) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  return applyEdits(
    lines.text,
    merged.map(([first, last]) => deleteLines(lines, first, last)),
  );
}

/** The library's own edit of the whole document; the layouts above cover every other case. */
function patchWhole(source: string, wanted: Record<string, unknown>, key: string, eol: string): string {
  const document = { ...wanted };
  if (isPlainObject(document[key]) && Object.keys(document[key]).length === 0) delete document[key];
  let text = patch(source, document, TomlFormat.autoDetectFormat(source === '' ? eol : source));
  if (source.trim() === '' && !text.endsWith(eol)) text += eol;
  return text;
}

interface Edit {
  readonly start: number;
  readonly end: number;
  readonly content: string;
}

function applyEdits(text: string, edits: readonly Edit[]): string {
  let next = text;
  for (const edit of [...edits].sort((a, b) => b.start - a.start || b.end - a.end)) next = next.slice(0, edit.start) + edit.content + next.slice(edit.end);
  return next;
}

/** Deletes lines `first`..`last`; when they end the file without a line break, the line before loses its break too. */
function deleteLines(lines: LineIndex, first: number, last: number): Edit {
  if (last < lineCount(lines) - 1) return { start: lines.starts[first]!, end: lines.starts[last + 1]!, content: '' };
  return { start: first === 0 ? 0 : lines.ends[first - 1]!, end: lines.text.length, content: '' };
}

/**
 * Puts `block` on lines of its own after line `after` (-1: at the start), with a blank line
 * before it if asked. After a last line that has no line break, the block goes on new lines and
 * the file still ends without one, so that deleting the block gives back the same end.
 */
function insertion(lines: LineIndex, after: number, block: readonly string[], blankBefore: boolean, eol: string): Edit {
  const body = block.join(eol);
  if (after < 0) return { start: 0, end: 0, content: body + eol };
  const gap = blankBefore ? eol : '';
  if (after < lineCount(lines) - 1) {
    const at = lines.starts[after + 1]!;
    return { start: at, end: at, content: gap + body + eol };
  }
  return { start: lines.text.length, end: lines.text.length, content: eol + gap + body };
}

function insertLines(lines: LineIndex, after: number, block: readonly string[], blankBefore: boolean, eol: string): string {
  return applyEdits(lines.text, [insertion(lines, after, block, blankBefore, eol)]);
}

/** The last line with anything but blanks on it, or -1. */
function lastContentLine(lines: LineIndex): number {
  for (let line = lineCount(lines) - 1; line >= 0; line--) if (!isBlankLine(lines, line)) return line;
  return -1;
}

/** The file's own choices for new values (bracket spacing, trailing commas), without a BOM. */
function valueFormat(source: string): TomlFormat {
  const format = TomlFormat.autoDetectFormat(source);
  format.leadingBom = false;
  format.trailingNewline = 0;
  return format;
}

/** The same, with tables written inline: `{ command = …, args = […] }`. */
function inlineFormat(format: TomlFormat): TomlFormat {
  return Object.assign(TomlFormat.default(), format, { inlineTableStart: 0 });
}

/** A value as TOML writes it (toml-patch's writer, so strings are escaped as TOML wants). */
function tomlValue(value: unknown, format: TomlFormat, eol: string): string {
  const line = stringify({ v: value }, format).replace(/(\r?\n)+$/, '');
  if (!line.startsWith('v = ')) throw new Error(`unexpected TOML for a value: ${line}`);
  return line.slice('v = '.length).replace(/\r?\n/g, eol);
}

/** A key segment: bare when TOML allows it, else quoted. */
function tomlKey(segment: string): string {
  return /^[A-Za-z0-9_-]+$/.test(segment) ? segment : tomlValue(segment, TomlFormat.default(), '\n');
}

const samePath = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && startsWith(a, b);
const startsWith = (path: readonly string[], prefix: readonly string[]): boolean =>
  prefix.length <= path.length && prefix.every((segment, i) => path[i] === segment);

/** An empty servers table and none mean the same to Codex; the layouts may leave either. */
function normalize(document: Record<string, unknown>, key: string): Record<string, unknown> {
  const servers = document[key];
  if (!isPlainObject(servers) || Object.keys(servers).length > 0) return document;
  const rest = { ...document };
  delete rest[key];
  return rest;
}

/** The edited text must parse and hold exactly the document intended: our change and nothing else. */
function verify(text: string, wanted: Record<string, unknown>, key: string): EditFailure | undefined {
  let reread: Record<string, unknown>;
  try {
    reread = parse(text) as Record<string, unknown>;
  } catch (error) {
    return { ok: false, message: `cannot edit it safely (the edited text does not parse: ${(error as Error).message})` };
  }
  if (!deepEqual(normalize(reread, key), normalize(wanted, key))) {
    return { ok: false, message: 'cannot edit it safely (the edited text does not hold the expected document)' };
  }
  return undefined;
}

/** toml-patch reports "Error parsing TOML (line, column):\n<source line>\n^\n<reason>". */
function parseFailure(error: unknown): EditFailure {
  const err = error as { message?: unknown; line?: unknown; column?: unknown };
  const message = typeof err.message === 'string' ? err.message : String(error);
  const reason =
    message
      .split('\n')
      .filter((l) => l.trim() !== '')
      .at(-1) ?? message;
  const line = typeof err.line === 'number' ? err.line : undefined;
  const column = typeof err.column === 'number' ? err.column + 1 : undefined;
  return { ok: false, message: reason, ...(line !== undefined ? { line } : {}), ...(column !== undefined ? { column } : {}) };
}
