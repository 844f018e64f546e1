/**
 * A TOML file as the lines its statements take up, read from `@decimalturn/toml-patch`'s syntax
 * tree (the parser setup validates with), so that an edit can add or take out whole lines and
 * leave every other byte where it was.
 *
 * TOML makes lines a safe unit: a table header and a key/value pair each end their line (only a
 * comment may follow on it), so removing a statement's lines removes nothing of its neighbours.
 *
 *   # top                      comment   table []
 *   model = "o3"  # mine       key       path [model]              (the comment goes with it)
 *   [mcp_servers.docs]         table     path [mcp_servers, docs]
 *   command = "npx"            key       path [mcp_servers, docs, command]
 *   env.DEBUG = "1"            key       path [mcp_servers, docs, env, DEBUG]
 */
import { parseDocument } from '@decimalturn/toml-patch';

export interface TomlStatement {
  /** `table` is a `[header]` line, `array-table` a `[[header]]` line. */
  readonly kind: 'table' | 'array-table' | 'key' | 'comment';
  /** The table the statement sits in ([] for the top level); a header's own key. */
  readonly table: readonly string[];
  /** A key's full path (its table's key, then its own dotted key); a header's key; a comment's table. */
  readonly path: readonly string[];
  /** 0-based first and last line. */
  readonly first: number;
  readonly last: number;
  /** Keys only: the value's character offsets, and whether it is an inline table `{ … }`. */
  readonly value?: { readonly start: number; readonly end: number; readonly inlineTable: boolean };
}

export interface TomlLayout {
  readonly statements: readonly TomlStatement[];
  readonly lines: LineIndex;
}

/** Where each line starts and ends (its end excludes the line break, `\n` or `\r\n`). */
export interface LineIndex {
  readonly starts: readonly number[];
  readonly ends: readonly number[];
  readonly text: string;
}

export function indexLines(text: string): LineIndex {
  const starts = [0];
  const ends: number[] = [];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    ends.push(i > 0 && text[i - 1] === '\r' ? i - 1 : i);
    starts.push(i + 1);
  }
  ends.push(text.length);
  return { starts, ends, text };
}

export const isBlankLine = (lines: LineIndex, line: number): boolean => lines.text.slice(lines.starts[line], lines.ends[line]).trim() === '';
export const lineCount = (lines: LineIndex): number => lines.starts.length;

/** Parses `text` (which must parse: the caller has already parsed it) into its statements. */
export function readLayout(text: string): TomlLayout {
  const lines = indexLines(text);
  const offset = (p: Position): number => lines.starts[p.line - 1]! + p.column;
  const statements: TomlStatement[] = [];
  const row = (node: CstNode, table: readonly string[]): void => {
    if (node.type === 'KeyValue') {
      const key = keyPath(node.key);
      const value = node.value;
      statements.push({
        kind: 'key',
        table,
        path: [...table, ...key],
        first: node.loc.start.line - 1,
        last: node.loc.end.line - 1,
        value: { start: offset(value.loc.start), end: offset(value.loc.end), inlineTable: value.type === 'InlineTable' },
      });
    } else if (node.type === 'Comment') {
      const first = node.loc.start.line - 1;
      // A comment after a statement on the same line is part of that statement's line.
      if (text.slice(lines.starts[first], offset(node.loc.start)).trim() === '') statements.push({ kind: 'comment', table, path: table, first, last: first });
    } else {
      throw new Error(`unexpected ${node.type} in a table`);
    }
  };
  for (const block of readCst(text)) {
    if (block.type === 'Table' || block.type === 'TableArray') {
      const key = keyPath(block.key.item);
      statements.push({
        kind: block.type === 'Table' ? 'table' : 'array-table',
        table: key,
        path: key,
        first: block.key.loc.start.line - 1,
        last: block.key.loc.end.line - 1,
      });
      for (const item of block.items) row(item, key);
    } else {
      row(block, []);
    }
  }
  return { statements, lines };
}

/**
 * The last line of a table's own content: its last key, then the comment lines right under that
 * key (commented-out keys, notes), unless those comments run straight into the next header, whose
 * comments they are. The header's line when it has no key.
 */
export function contentEnd(layout: TomlLayout, header: TomlStatement): number {
  const { statements } = layout;
  const at = statements.indexOf(header);
  let end = header.last;
  let index = at + 1;
  for (; index < statements.length && statements[index]!.kind !== 'table' && statements[index]!.kind !== 'array-table'; index++) {
    if (statements[index]!.kind === 'key') end = statements[index]!.last;
  }
  const next = statements[index];
  let run = end;
  for (const s of statements.slice(at + 1, index)) {
    if (s.kind === 'comment' && s.first > end && s.first === run + 1) run = s.first;
  }
  return next && next.first === run + 1 ? end : run;
}

// The part of toml-patch's syntax tree read here. `TomlDocument.cst` is public in its typings but
// documented as internal, so its shape is checked as it is read: a change fails loudly (and the
// caller leaves the file untouched) instead of editing the wrong lines.
interface Position {
  line: number;
  column: number;
}
interface Located {
  type: string;
  loc: { start: Position; end: Position };
}
interface CstKey extends Located {
  value: string[];
}
type CstNode =
  | (Located & { type: 'KeyValue'; key: CstKey; value: Located })
  | (Located & { type: 'Comment' })
  | (Located & { type: 'Table' | 'TableArray'; key: Located & { item: CstKey }; items: CstNode[] });

function readCst(text: string): CstNode[] {
  const cst: unknown = parseDocument(text).cst;
  if (!Array.isArray(cst) || !cst.every(isNode)) throw new Error('the TOML syntax tree has an unexpected shape');
  return cst;
}

function isLocated(value: unknown): value is Located {
  const v = value as Partial<Located> | null;
  return typeof v === 'object' && v !== null && typeof v.type === 'string' && isPosition(v.loc?.start) && isPosition(v.loc?.end);
}

function isPosition(value: unknown): value is Position {
  const v = value as Partial<Position> | undefined;
  return typeof v?.line === 'number' && typeof v.column === 'number';
}

function isKey(value: unknown): value is CstKey {
  return isLocated(value) && Array.isArray((value as Partial<CstKey>).value) && (value as CstKey).value.every((s) => typeof s === 'string');
}

function isNode(value: unknown): value is CstNode {
  if (!isLocated(value)) return false;
  const v = value as unknown as Record<string, unknown>;
  switch (v.type) {
    case 'KeyValue':
      return isKey(v['key']) && isLocated(v['value']);
    case 'Comment':
      return true;
    case 'Table':
    case 'TableArray':
      return isLocated(v['key']) && isKey((v['key'] as { item?: unknown }).item) && Array.isArray(v['items']) && (v['items'] as unknown[]).every(isNode);
    default:
      return false;
  }
}

function keyPath(key: CstKey): string[] {
  return [...key.value];
}
