/**
 * Plans an edit of a TOML config file (Codex's config.toml) with `@decimalturn/toml-patch`: the
 * document is parsed, the wanted object is patched onto the original text, and the library keeps
 * every comment, blank line and formatting choice outside what changed.
 *
 * The patched text is parsed back and checked before it is offered: a library surprise leaves the
 * user's file untouched instead of half-edited.
 */
import { parse, patch, TomlFormat } from '@decimalturn/toml-patch';
import {
  applyOwned,
  deepEqual,
  isBlank,
  isPlainObject,
  ownedChanges,
  type EditFailure,
  type EditRequest,
  type EditResult,
} from './config-edit.js';

export function editTomlConfig(request: EditRequest): EditResult {
  const { key, name } = request;
  const source = isBlank(request.text) ? '' : request.text!;
  let document: Record<string, unknown>;
  try {
    document = source === '' ? {} : (parse(source) as Record<string, unknown>);
  } catch (error) {
    return parseFailure(error);
  }
  const container = document[key];
  if (container !== undefined && !isPlainObject(container)) return { ok: false, message: `"${key}" is not a table` };
  const current = container?.[name];
  if (current !== undefined && !isPlainObject(current)) return { ok: false, message: `"${key}.${name}" is not a table` };

  const unchanged = (status: 'absent' | 'unchanged'): EditResult => ({ ok: true, status, text: request.text ?? '', changed: [], entry: current, previous: current });
  let entry: Record<string, unknown> | undefined;
  let changed: string[] = [];
  if (request.desired === undefined) {
    if (!current) return unchanged('absent');
    entry = undefined;
  } else if (!current) {
    entry = { ...request.desired };
  } else {
    const changes = ownedChanges(current, request.desired, request.owned);
    changed = [...changes.unset, ...changes.set.map(([property]) => property)];
    if (changed.length === 0) return unchanged('unchanged');
    entry = applyOwned(current, changes);
  }

  const servers: Record<string, unknown> = { ...(container ?? {}) };
  if (entry) servers[name] = entry;
  else delete servers[name];
  const wanted: Record<string, unknown> = { ...document };
  // A table we leave empty goes too, so setup then --remove gives back the file it started from.
  if (Object.keys(servers).length > 0) wanted[key] = servers;
  else delete wanted[key];

  const eol = source.includes('\r\n') ? '\r\n' : '\n';
  let text: string;
  try {
    text = patch(source, wanted, TomlFormat.autoDetectFormat(source === '' ? eol : source));
  } catch (error) {
    return { ok: false, message: `cannot edit it safely: ${(error as Error).message}` };
  }
  if (source === '' && !text.endsWith(eol)) text += eol;

  const check = verify(text, key, name, entry);
  if (check) return check;
  const status = request.desired === undefined ? 'removed' : current ? 'updated' : 'added';
  return { ok: true, status, text, changed, entry, previous: current };
}

/** The patched text must parse and hold exactly the entry we meant to write (or none). */
function verify(text: string, key: string, name: string, entry: Record<string, unknown> | undefined): EditFailure | undefined {
  let reread: Record<string, unknown>;
  try {
    reread = parse(text) as Record<string, unknown>;
  } catch (error) {
    return { ok: false, message: `cannot edit it safely (the edited text does not parse: ${(error as Error).message})` };
  }
  const servers = reread[key];
  const found = isPlainObject(servers) ? servers[name] : undefined;
  if (entry === undefined ? found !== undefined : !deepEqual(found, entry)) {
    return { ok: false, message: 'cannot edit it safely (the edited text does not hold the expected entry)' };
  }
  return undefined;
}

/** toml-patch reports "Error parsing TOML (line, column):\n<source line>\n^\n<reason>". */
function parseFailure(error: unknown): EditFailure {
  const err = error as { message?: unknown; line?: unknown; column?: unknown };
  const message = typeof err.message === 'string' ? err.message : String(error);
  const reason = message.split('\n').filter((l) => l.trim() !== '').at(-1) ?? message;
  const line = typeof err.line === 'number' ? err.line : undefined;
  const column = typeof err.column === 'number' ? err.column + 1 : undefined;
  return { ok: false, message: reason, ...(line !== undefined ? { line } : {}), ...(column !== undefined ? { column } : {}) };
}
