/**
 * Claude Code through its own CLI. Claude Code keeps its user-scope servers in ~/.claude.json, a
 * file it also rewrites for its own state while it runs, so setup leaves the writing to `claude
 * mcp` whenever the CLI is on PATH (https://code.claude.com/docs/en/mcp). Setup still reads the
 * file to decide: nothing to do when our entry is already right, so a second run calls nothing.
 *
 * `add-json` rather than `add`: it carries the whole entry, so keys the user added to our entry
 * (`env`, …) survive an update, which `add` with its flags would drop.
 */
import type { EditPlan } from './config-edit.js';
import type { Scope } from './hosts.js';

/** The `claude` invocations (arguments only) that turn the file's state into the planned one. */
export function claudeCommands(plan: EditPlan, scope: Scope, name: string): string[][] {
  const remove = ['mcp', 'remove', '--scope', scope, name];
  const add = (): string[] => ['mcp', 'add-json', '--scope', scope, name, JSON.stringify(plan.entry)];
  switch (plan.status) {
    case 'added':
      return [add()];
    case 'updated':
      return [remove, add()];
    case 'removed':
      return [remove];
    case 'unchanged':
    case 'absent':
      return [];
  }
}

/** A command line as a POSIX shell would need it typed, for the user to read. */
export function shellLine(argv: readonly string[]): string {
  return argv.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`)).join(' ');
}
