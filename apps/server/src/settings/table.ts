/**
 * One table of settings for the command line, the environment and config files. Each row names a
 * setting once (its flag); the row's other names follow from it:
 *
 *   flag --cluster-mode  ──▶  environment MDP_CLUSTER_MODE  ──▶  file key "clusterMode"
 *
 * Values are taken in layers, the first layer that has a value wins:
 *
 *   flags ▶ environment ▶ --config file ▶ --cluster-config manifest ▶ default
 *
 * and the merged values are validated by ONE valibot schema built from the rows (plus the checks
 * that compare two settings). Every issue becomes one line naming where the bad value came from.
 * Reading the sources is in sources.ts; help and --print-config text in text.ts.
 */
import * as v from 'valibot';
import type { ValueSchema } from './values.js';

/** Sources of a setting besides its flag. `manifest`: the reference server's `--cluster-config` file. */
export type SourceKind = 'env' | 'file' | 'manifest';

export interface Setting<T = unknown> {
  /** Flag name without dashes. The key of the row must be its camelCase form. */
  readonly flag: string;
  /** Other flag names (the reference server's); each is an environment name and a file key too. */
  readonly aliases?: readonly string[];
  readonly short?: string;
  /** `value` (default): one value, the last one given wins. `list`: repeatable. `switch`: no value. */
  readonly arity?: 'value' | 'list' | 'switch';
  readonly schema: ValueSchema<T>;
  /** Value when no source gives one; computed when a function. No default: the setting is unset. */
  readonly default?: T | (() => T);
  /** What `--help` says of the default, when its value alone would not say it well. */
  readonly defaultText?: string;
  /** Name of the value in `--help`, e.g. `<ms>`. */
  readonly placeholder?: string;
  /** `--help` text, wrapped to the help column's width. */
  readonly help: string;
  /** Never printed, never echoed in an error. */
  readonly secret?: boolean;
  /** A URL (or list of them) that may carry credentials: printed with its user info and query hidden. */
  readonly urls?: boolean;
  /** Where else the setting may come from. Default: the environment and the config file. */
  readonly sources?: readonly SourceKind[];
  /** Further environment names, kept from before (e.g. MDP_AUTH_TOKENS). */
  readonly envNames?: readonly string[];
  /** Further file keys (e.g. `authTokens`). */
  readonly fileKeys?: readonly string[];
}

/** Two settings that must hold a relation, e.g. the lease longer than the heartbeat. */
export interface CrossCheck {
  readonly keys: readonly [string, string];
  readonly holds: (first: number, second: number) => boolean;
  /** `{0}` and `{1}` stand for the two settings, each with its source and value. */
  readonly message: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a table of settings of every value type; each row keeps its own.
export type Rows = Readonly<Record<string, Setting<any>>>;

export interface SettingGroup<S extends Rows = Rows> {
  /** Heading in `--help` and `--print-config`. */
  readonly title: string;
  readonly settings: S;
  readonly checks?: readonly CrossCheck[];
  /** `--help` text after the rows. */
  readonly notes?: string;
}

/** Where a value came from. A `--cluster-config` manifest is a `file` source too. */
export type Source =
  | { readonly kind: 'flag'; readonly name: string }
  | { readonly kind: 'env'; readonly name: string }
  | { readonly kind: 'file'; readonly file: string; readonly key: string }
  | { readonly kind: 'default' };

type ValueOf<R> = R extends { readonly schema: ValueSchema<infer T> } ? (R extends { readonly default: unknown } ? T : T | undefined) : never;
export type ValuesOf<S extends Rows> = { readonly [K in keyof S]: ValueOf<S[K]> };
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
export type TableValues<G extends readonly SettingGroup[]> = UnionToIntersection<ValuesOf<G[number]['settings']>>;

/** Types a group literal, keeping each row's value type. */
export function settingGroup<const S extends Rows>(group: SettingGroup<S>): SettingGroup<S> {
  return group;
}

export function camelCase(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

export function envName(flag: string): string {
  return `MDP_${flag.toUpperCase().replace(/-/g, '_')}`;
}

export interface SettingTable<V> {
  readonly groups: readonly SettingGroup[];
  readonly rows: ReadonlyMap<string, Setting>;
  /** Flag names (long and short) to setting keys. */
  readonly flags: ReadonlyMap<string, string>;
  /** Environment names to setting keys. */
  readonly envNames: ReadonlyMap<string, string>;
  /** File keys to setting keys (rows a file may not set included). */
  readonly fileKeys: ReadonlyMap<string, string>;
  /** The one schema every merged set of values goes through. */
  readonly schema: v.GenericSchema<Record<string, unknown>, V>;
}

export function sourcesOf(row: Setting): readonly SourceKind[] {
  return row.sources ?? ['env', 'file'];
}

/** Build the table; throws when two rows share a name (a mistake in the table, not in the input). */
export function settingTable<const G extends readonly SettingGroup[]>(groups: G): SettingTable<TableValues<G>> {
  const rows = new Map<string, Setting>();
  const flags = new Map<string, string>();
  const envNames = new Map<string, string>();
  const fileKeys = new Map<string, string>();
  const claim = (names: Map<string, string>, name: string, key: string): void => {
    if (names.has(name)) throw new Error(`settings ${names.get(name)} and ${key} both use the name ${name}`);
    names.set(name, key);
  };
  const entries: Record<string, v.GenericSchema> = {};
  const checks: v.GenericPipeItem<Record<string, unknown>, Record<string, unknown>, v.BaseIssue<unknown>>[] = [];
  for (const group of groups) {
    for (const [key, row] of Object.entries(group.settings)) {
      if (camelCase(row.flag) !== key) throw new Error(`setting ${key} must be keyed by its flag in camelCase, ${camelCase(row.flag)}`);
      if (rows.has(key)) throw new Error(`setting ${key} is defined twice`);
      rows.set(key, row);
      entries[key] = v.optional(row.schema);
      const names = [row.flag, ...(row.aliases ?? [])];
      for (const name of names) claim(flags, name, key);
      if (row.short) claim(flags, row.short, key);
      const sources = sourcesOf(row);
      if (sources.includes('env')) for (const name of [...names.map(envName), ...(row.envNames ?? [])]) claim(envNames, name, key);
      // Every row has file keys, even one a file may not set: to say so rather than "no such setting".
      for (const name of [...names.map(camelCase), ...(row.fileKeys ?? [])]) claim(fileKeys, name, key);
    }
    for (const check of group.checks ?? []) checks.push(crossCheck(check));
  }
  const schema = v.pipe(v.object(entries), ...checks) as unknown as v.GenericSchema<Record<string, unknown>, TableValues<G>>;
  return { groups, rows, flags, envNames, fileKeys, schema };
}

/** A check of two numeric settings, reported on the first. Runs once both are valid. */
function crossCheck(check: CrossCheck): v.GenericPipeItem<Record<string, unknown>, Record<string, unknown>, v.BaseIssue<unknown>> {
  const [first, second] = check.keys;
  return v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const a = dataset.value[first];
    const b = dataset.value[second];
    if (typeof a !== 'number' || typeof b !== 'number' || check.holds(a, b)) return;
    addIssue({
      // The keys go into the message, for mergeLayers to name each with its source and value.
      message: check.message.replace('{0}', `{${first}}`).replace('{1}', `{${second}}`),
      path: [{ type: 'object', origin: 'value', input: dataset.value, key: first, value: a }],
    });
  });
}

/** One value of one layer, before validation. */
export interface RawEntry {
  readonly raw: unknown;
  readonly source: Source;
}

/** What one source gives: raw values by setting key. */
export type Layer = ReadonlyMap<string, RawEntry>;

export type Resolution<V> =
  | { readonly ok: true; readonly values: V; readonly sources: Readonly<Record<string, Source>> }
  | { readonly ok: false; readonly errors: readonly string[] };

/** The first value each setting has in `layers` (or its default), validated by the table's schema. */
export function mergeLayers<V>(table: SettingTable<V>, layers: readonly Layer[]): Resolution<V> {
  const merged: Record<string, unknown> = {};
  const sources: Record<string, Source> = {};
  for (const [key, row] of table.rows) {
    const entry = layers.map((layer) => layer.get(key)).find((e) => e !== undefined);
    if (entry) {
      merged[key] = entry.raw;
      sources[key] = entry.source;
    } else if (row.default !== undefined) {
      merged[key] = typeof row.default === 'function' ? (row.default as () => unknown)() : row.default;
      sources[key] = { kind: 'default' };
    }
  }
  const result = v.safeParse(table.schema, merged, { abortPipeEarly: true });
  if (result.success) return { ok: true, values: result.output, sources };
  const errors = result.issues.map((issue) => {
    const key = String(issue.path?.[0]?.key ?? '');
    const row = table.rows.get(key);
    const source = sources[key] ?? { kind: 'default' };
    if (issue.type === 'raw_check') {
      const values = issue.input as Record<string, unknown>;
      return issue.message.replace(/\{(\w+)\}/g, (_, other: string) => {
        return `${sourceLabel(sources[other] ?? { kind: 'default' }, table.rows.get(other))} (${JSON.stringify(values[other])})`;
      });
    }
    const got = row?.secret ? '' : `, got ${JSON.stringify(merged[key])}`;
    return `${sourceLabel(source, row)} ${issue.message}${got}`;
  });
  return { ok: false, errors };
}

/** A setting's name as its source spells it: `--port`, `MDP_PORT (environment)`, `"port" in FILE`. */
export function sourceLabel(source: Source, row: Setting | undefined): string {
  switch (source.kind) {
    case 'flag':
      return source.name;
    case 'env':
      return `${source.name} (environment)`;
    case 'file':
      return `${JSON.stringify(source.key)} in ${source.file}`;
    case 'default':
      return `the default --${row?.flag ?? '?'}`;
  }
}
