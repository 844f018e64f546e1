/** Text made from the table of settings: the `--help` listing and the `--print-config` document. */
import { redactUrl } from '@mdp/core';
import { camelCase, sourceLabel, sourcesOf, type Setting, type SettingTable, type Source } from './table.js';

/** Column where descriptions start in `--help`, and the width they wrap at. */
const HELP_COLUMN = 35;
const HELP_WIDTH = 100;

/** What `--help` shows as the default of `row`, or `undefined` when it has none. */
function defaultOf(row: Setting): string | undefined {
  if (row.defaultText !== undefined) return row.defaultText;
  if (row.default === undefined) return undefined;
  const value: unknown = typeof row.default === 'function' ? (row.default as () => unknown)() : row.default;
  return Array.isArray(value) ? value.join(',') : String(value);
}

/** `text` in lines of at most `width` characters, broken between words. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

function helpRow(row: Setting): string {
  const names = [...(row.short ? [`-${row.short}`] : []), `--${row.flag}`, ...(row.aliases ?? []).map((a) => `--${a}`)];
  const label = `  ${names.join(', ')}${row.placeholder ? ` ${row.placeholder}` : ''}`;
  const fallback = defaultOf(row);
  const indent = ' '.repeat(HELP_COLUMN);
  const body = wrap(`${row.help}${fallback !== undefined ? ` (default ${fallback})` : ''}`, HELP_WIDTH - HELP_COLUMN).map((line) => `${indent}${line}`);
  // A label too wide for the column gets a line of its own.
  if (label.length >= HELP_COLUMN - 1) return [label, ...body].join('\n');
  return [`${label.padEnd(HELP_COLUMN)}${body[0]!.trimStart()}`, ...body.slice(1)].join('\n');
}

/** Every group of the table: its heading, one entry per setting with its default, its notes. */
export function helpSections<V>(table: SettingTable<V>): string {
  return table.groups
    .map((group) => [`${group.title}:`, ...Object.values(group.settings).map(helpRow), ...(group.notes ? [group.notes] : [])].join('\n'))
    .join('\n\n');
}

/** Where a value came from, for the comment beside it. */
function origin(source: Source | undefined, row: Setting): string {
  return source === undefined || source.kind === 'default' ? 'default' : sourceLabel(source, row);
}

/**
 * The settings in effect as a config file (JSON with comments): each value with where it came
 * from. Secrets, unset settings and settings a file cannot hold are comments, so the document can
 * be saved and used as `--config` as it is; a secret's value never appears.
 */
function redactedUrls(value: unknown): unknown {
  if (typeof value === 'string') return redactUrl(value);
  return Array.isArray(value) ? value.map((item: unknown) => (typeof item === 'string' ? redactUrl(item) : item)) : value;
}

export function configDocument<V>(table: SettingTable<V>, values: V, sources: Readonly<Record<string, Source>>): string {
  const lines = ['// mdp-server settings in effect (flag > MDP_* environment > config file > default).', '{'];
  const all = values as Record<string, unknown>;
  for (const group of table.groups) {
    const rows = Object.entries(group.settings).filter(([, row]) => sourcesOf(row).length > 0);
    if (rows.length === 0) continue;
    lines.push(`  // ${group.title}`);
    for (const [key, row] of rows) {
      const value = all[key];
      const name = JSON.stringify(camelCase(row.flag));
      const from = origin(sources[key], row);
      if (value === undefined) lines.push(`  // ${name}: not set`);
      else if (row.secret) lines.push(`  // ${name}: hidden (${Array.isArray(value) ? `${value.length} set, ` : ''}from ${from})`);
      else if (row.urls && JSON.stringify(redactedUrls(value)) !== JSON.stringify(value)) {
        lines.push(`  // ${name}: ${JSON.stringify(redactedUrls(value))} (credentials hidden; from ${from})`);
      } else if (!sourcesOf(row).includes('file')) lines.push(`  // ${name}: ${JSON.stringify(value)} (from ${from}; not a file setting)`);
      else lines.push(`  ${name}: ${JSON.stringify(value)}, // ${from}`);
    }
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
