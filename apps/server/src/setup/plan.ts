/**
 * Planning for one host's config file, pure: the file's current text in, its new text and a
 * description of the change out. The I/O layer (run.ts) reads, asks, prints and writes.
 */
import { createTwoFilesPatch } from 'diff';
import type { EditPlan, EditResult } from './config-edit.js';
import { editJsonConfig } from './json-config.js';
import { editTomlConfig } from './toml-config.js';
import type { HostSpec, Launch } from './hosts.js';

/** U+FEFF at the start of a file: a UTF-8 byte-order mark, which some Windows editors write. */
const BOM = '\uFEFF';

/**
 * Plans writing our entry (`launch`) or taking it out (`launch` undefined). A byte-order mark is
 * not part of either format's grammar: the editors plan on the text after it, and it is put back.
 */
export function planConfig(host: HostSpec, text: string | undefined, name: string, launch: Launch | undefined): EditResult {
  const bom = text?.startsWith(BOM) === true;
  const request = { text: bom ? text!.slice(BOM.length) : text, key: host.key, name, desired: launch && host.entry(launch), owned: host.owned };
  const result = host.format === 'toml' ? editTomlConfig(request) : editJsonConfig(request, { comments: host.format === 'jsonc' });
  return bom && result.ok ? { ...result, text: BOM + result.text } : result;
}

/** One line saying what happened (or would happen) to the entry. */
export function describePlan(plan: EditPlan, name: string): string {
  switch (plan.status) {
    case 'added':
      return `added "${name}"`;
    case 'updated':
      return `updated "${name}" (${plan.changed.join(', ')})`;
    case 'unchanged':
      return `"${name}" already up to date`;
    case 'removed':
      return `removed "${name}"`;
    case 'absent':
      return `no "${name}" entry, nothing to remove`;
  }
}

/** A unified diff of one file; a file that does not exist yet is diffed against /dev/null. */
export function unifiedDiff(file: string, before: string | undefined, after: string): string {
  return createTwoFilesPatch(before === undefined ? '/dev/null' : file, file, before ?? '', after, undefined, undefined, { context: 3 });
}

/** "  args: [old] -> [new]" for each key an update changed. */
export function entryChanges(plan: EditPlan): string[] {
  const show = (entry: Record<string, unknown> | undefined, key: string): string =>
    entry && Object.hasOwn(entry, key) ? JSON.stringify(entry[key]) : '(none)';
  return plan.changed.map((key) => `  ${key}: ${show(plan.previous, key)} -> ${show(plan.entry, key)}`);
}
