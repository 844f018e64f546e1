/**
 * The sources of settings (table.ts), each read into a layer of raw values: the command line,
 * the environment, and files in JSON with comments (the `--config` file, the `--cluster-config`
 * manifest). Nothing here validates a value; a source only says which setting it names and where.
 */
import { parseArgs } from 'node:util';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { mergeLayers, sourceLabel, sourcesOf, type Layer, type RawEntry, type Resolution, type SettingTable } from './table.js';

export type LayerResult = { readonly ok: true; readonly layer: Layer } | { readonly ok: false; readonly errors: readonly string[] };

export type Env = Readonly<Record<string, string | undefined>>;

/** Reads a file as text; throws node's error (with its `code`) when it cannot. */
export type ReadText = (path: string) => string;

/**
 * Flags of `argv`. A flag that takes a value takes the next argument whatever it starts with, so
 * `--port -1` is a bad port, not a parser puzzle; the last of repeated flags wins, except for lists.
 */
export function commandLineLayer<V>(table: SettingTable<V>, argv: readonly string[]): LayerResult {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, key] of table.flags) {
    const row = table.rows.get(key)!;
    if (name.length === 1) continue;
    options[name] = {
      type: row.arity === 'switch' ? 'boolean' : 'string',
      ...(name === row.flag && row.short ? { short: row.short } : {}),
    };
  }
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const layer = new Map<string, RawEntry>();
  const errors: string[] = [];
  let valueOfUnknown = -1;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      // The argument after an unknown option is most likely its value: one error is enough.
      if (token.index !== valueOfUnknown) errors.push(`unexpected argument ${JSON.stringify(token.value)} (options start with --)`);
      continue;
    }
    const key = table.flags.get(token.name);
    const row = key === undefined ? undefined : table.rows.get(key);
    if (key === undefined || row === undefined) {
      const known = [...table.flags.keys()].filter((name) => name.length > 1);
      const near = closest(token.name, known);
      errors.push(`unknown option ${token.rawName}${near ? ` (did you mean --${near}?)` : ''}`);
      if (token.value === undefined) valueOfUnknown = token.index + 1;
      continue;
    }
    const source = { kind: 'flag', name: token.rawName } as const;
    if (row.arity === 'switch') {
      if (token.value !== undefined) errors.push(`${token.rawName} takes no value`);
      else layer.set(key, { raw: true, source });
    } else if (token.value === undefined) {
      errors.push(`${token.rawName} needs a value`);
    } else if (row.arity === 'list') {
      const before = layer.get(key)?.raw;
      layer.set(key, { raw: [...(Array.isArray(before) ? before : []), token.value], source });
    } else {
      layer.set(key, { raw: token.value, source });
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, layer };
}

/**
 * `MDP_<FLAG>` variables. An empty variable counts as unset, but for a secret it is an error: a
 * deployment that writes `MDP_AUTH_TOKEN=$SECRET` with the secret missing must not run open. Two
 * names of one setting must agree.
 */
export function envLayer<V>(table: SettingTable<V>, env: Env): LayerResult {
  const layer = new Map<string, RawEntry>();
  const errors: string[] = [];
  for (const [name, key] of table.envNames) {
    const value = env[name];
    if (value === '' && table.rows.get(key)?.secret) {
      errors.push(`${name} (environment) is set but empty: give it a value or unset it (an empty secret would leave the server unprotected)`);
      continue;
    }
    if (value === undefined || value === '') continue;
    const before = layer.get(key);
    if (before === undefined) layer.set(key, { raw: value, source: { kind: 'env', name } });
    else if (before.raw !== value)
      errors.push(`${sourceLabel(before.source, undefined)} and ${name} both set --${table.rows.get(key)!.flag}, differently: keep one`);
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, layer };
}

/**
 * The settings in a JSON file (comments and trailing commas allowed), by file key: a setting's
 * flag in camelCase. A config file refuses keys that are no setting; a manifest (the reference
 * server's `--cluster-config`) takes the settings it may set and ignores every other field.
 */
export function fileLayer<V>(table: SettingTable<V>, file: string, text: string, kind: 'file' | 'manifest'): LayerResult {
  const problems: ParseError[] = [];
  const data: unknown = parseJsonc(text, problems, { allowTrailingComma: true, disallowComments: false });
  const first = problems[0];
  if (first) {
    const before = text.slice(0, first.offset).split('\n');
    const where = `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
    return { ok: false, errors: [`${file}: ${where}: ${words(printParseErrorCode(first.error))}`] };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { ok: false, errors: [`${file} must hold a JSON object`] };
  const layer = new Map<string, RawEntry>();
  const errors: string[] = [];
  for (const [fileKey, raw] of Object.entries(data)) {
    const key = table.fileKeys.get(fileKey);
    const row = key === undefined ? undefined : table.rows.get(key);
    if (key === undefined || row === undefined || !sourcesOf(row).includes(kind)) {
      if (kind === 'manifest') continue;
      const near = row ? undefined : closest(fileKey, [...table.fileKeys.keys()]);
      errors.push(
        `${JSON.stringify(fileKey)} in ${file} ${row ? 'cannot be set in a config file' : `is not a setting${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}`}`,
      );
      continue;
    }
    const before = layer.get(key);
    const source = { kind: 'file', file, key: fileKey } as const;
    if (before === undefined) layer.set(key, { raw, source });
    else if (JSON.stringify(before.raw) !== JSON.stringify(raw))
      errors.push(`${sourceLabel(before.source, row)} and ${JSON.stringify(fileKey)} both set --${row.flag}, differently: keep one`);
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, layer };
}

/** A setting whose value names a file of further settings, read below the layers before it. */
export interface FileSetting {
  readonly key: string;
  readonly kind: 'file' | 'manifest';
}

/**
 * Every layer, in precedence order (command line, environment, then each file setting's file),
 * merged and validated. `flags` is the command-line layer (the caller looks at it first, for
 * `--help`).
 */
export function resolveSettings<V>(
  table: SettingTable<V>,
  input: { readonly flags: Layer; readonly env: Env; readonly readFile: ReadText; readonly files: readonly FileSetting[] },
): Resolution<V> {
  const env = envLayer(table, input.env);
  if (!env.ok) return env;
  const layers: Layer[] = [input.flags, env.layer];
  for (const spec of input.files) {
    const entry = layers.map((layer) => layer.get(spec.key)).find((e) => e !== undefined);
    if (entry === undefined) continue;
    const row = table.rows.get(spec.key);
    const label = sourceLabel(entry.source, row);
    const path = typeof entry.raw === 'string' ? entry.raw.trim() : '';
    if (path === '') return { ok: false, errors: [`${label} must name a file`] };
    let text: string;
    try {
      text = input.readFile(path);
    } catch (error) {
      return { ok: false, errors: [`cannot read ${path} (${label}): ${readProblem(error)}`] };
    }
    const layer = fileLayer(table, path, text, spec.kind);
    if (!layer.ok) return layer;
    layers.push(layer.layer);
  }
  return mergeLayers(table, layers);
}

/** Why a file could not be read, in words. */
export function readProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  return (error as Error).message;
}

/** `CommaExpected` → `comma expected`. */
function words(code: string): string {
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

/** The candidate at most two edits away from `name` (a swap of neighbours is one), if any. */
export function closest(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.min(2, Math.floor(name.length / 2));
  for (const candidate of candidates) {
    const d = editDistance(name, candidate);
    if (d <= bestDistance && (best === undefined || d < editDistance(name, best))) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}
