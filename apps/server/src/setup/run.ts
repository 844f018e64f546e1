/**
 * `mdp-server setup`: for each host, read its config, plan the change (pure), then print and/or
 * write it. Everything the command depends on — home, cwd, platform, environment, the paths of
 * this installation, where output goes — comes in through `SetupContext`.
 */
import { parseSetupArgs, SETUP_HELP, type SetupRequest } from './args.js';
import { claudeCommands, shellLine } from './claude-cli.js';
import type { EditPlan } from './config-edit.js';
import { detectHosts } from './detect.js';
import { exists, findOnPath, readOptional, runCommand, writeAtomic } from './fs-io.js';
import { HOSTS, PROJECT_COMMAND, type HostId, type HostSpec, type Launch, type SetupPlace } from './hosts.js';
import { describePlan, entryChanges, planConfig, unifiedDiff } from './plan.js';

export interface SetupContext {
  readonly place: SetupPlace;
  /** This installation: the node binary and the real path of `dist/cli.js`. */
  readonly install: { readonly node: string; readonly cli: string };
  /** One call per line (no trailing newline). */
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

/** sysexits' EX_USAGE: a command-line usage error. */
export const EXIT_USAGE = 64;

export async function runSetup(argv: readonly string[], ctx: SetupContext): Promise<number> {
  const command = parseSetupArgs(argv);
  if (command.kind === 'help') {
    ctx.out(SETUP_HELP);
    return 0;
  }
  if (command.kind === 'error') {
    ctx.err(`mdp-server setup: ${command.message} (see mdp-server setup --help)`);
    return EXIT_USAGE;
  }
  const request = command.request;
  const which = (cmd: string): Promise<string | undefined> => findOnPath(cmd, ctx.place.env, ctx.place.platform);

  let hosts: HostId[] = [...request.hosts];
  if (hosts.length === 0) {
    const found = await detectHosts(ctx.place, { exists, which });
    if (found.length === 0) {
      ctx.err(
        'mdp-server setup: found no agent host installed (looked for claude, codex, cursor, code, windsurf and zed on PATH ' +
          'and for their config folders); name one, e.g. mdp-server setup cursor',
      );
      return EXIT_USAGE;
    }
    ctx.out(`Found ${found.map((f) => `${HOSTS[f.id].label} (${f.how})`).join(', ')}`);
    hosts = found.map((f) => f.id);
    if (request.scope === 'project') {
      for (const id of hosts.filter((h) => !HOSTS[h].scopes.includes('project'))) ctx.out(`${HOSTS[id].label}: skipped, it has no project-level MCP config`);
      hosts = hosts.filter((h) => HOSTS[h].scopes.includes('project'));
    }
  }

  const launch = request.remove ? undefined : launchFor(request, ctx.install);
  if (launch?.transport === 'stdio' && request.scope === 'project' && !(await which(PROJECT_COMMAND))) {
    ctx.err(
      `mdp-server setup: note: the project entries launch '${PROJECT_COMMAND}' from PATH, and it is not on PATH here; ` +
        'each machine that uses them needs it installed (see the README, "Project scope")',
    );
  }

  let failed = false;
  for (const id of hosts) {
    const host = HOSTS[id];
    const claude = id === 'claude-code' ? await which('claude') : undefined;
    const ok = claude ? await throughClaudeCli(host, claude, request, launch, ctx) : await throughFile(host, request, launch, ctx);
    if (!ok) failed = true;
  }
  return failed ? 1 : 0;
}

/**
 * What the entry launches. User scope: this installation by absolute path (the node binary and
 * `dist/cli.js`), which is right on this machine whatever PATH the host starts with. Project scope:
 * the file is committed and read on other machines, so it names only `mdp-server` on PATH.
 */
export function launchFor(request: Pick<SetupRequest, 'scope' | 'transport' | 'url'>, install: SetupContext['install']): Launch {
  if (request.transport === 'http') return { transport: 'http', url: request.url };
  if (request.scope === 'project') return { transport: 'stdio', command: PROJECT_COMMAND, args: ['mcp'] };
  return { transport: 'stdio', command: install.node, args: [install.cli, 'mcp'] };
}

/** Reads and plans one host's file; reports and returns undefined when that fails. */
async function plan(
  host: HostSpec,
  file: string,
  request: SetupRequest,
  launch: Launch | undefined,
  ctx: SetupContext,
): Promise<{ before: string | undefined; plan: EditPlan } | undefined> {
  let before: string | undefined;
  try {
    before = await readOptional(file);
  } catch (error) {
    ctx.err(`mdp-server setup: ${host.label}: cannot read ${file}: ${(error as Error).message}`);
    return undefined;
  }
  const result = planConfig(host, before, request.name, launch);
  if (!result.ok) {
    const where = result.line === undefined ? '' : ` at line ${result.line}${result.column === undefined ? '' : `, column ${result.column}`}`;
    ctx.err(`mdp-server setup: ${host.label}: cannot parse ${file}${where}: ${result.message}; left it untouched`);
    return undefined;
  }
  return { before, plan: result };
}

async function throughFile(host: HostSpec, request: SetupRequest, launch: Launch | undefined, ctx: SetupContext): Promise<boolean> {
  const file = host.file(request.scope, ctx.place);
  const planned = await plan(host, file, request, launch, ctx);
  if (!planned) return false;
  const { before, plan: result } = planned;
  const summary = describePlan(result, request.name);
  if (result.status === 'unchanged' || result.status === 'absent') {
    ctx.out(`${host.label}: ${file}: ${summary}`);
    return true;
  }
  const diff = unifiedDiff(file, before, result.text);
  if (request.dryRun) {
    ctx.out(`${host.label}: ${file}: would have ${summary} (dry run, nothing written)`);
    ctx.out(diff.trimEnd());
    return true;
  }
  try {
    await writeAtomic(file, result.text);
  } catch (error) {
    ctx.err(`mdp-server setup: ${host.label}: cannot write ${file}: ${(error as Error).message}`);
    return false;
  }
  ctx.out(`${host.label}: ${file}: ${summary}`);
  // An entry of ours that pointed elsewhere was changed in place: show the user exactly how.
  if (result.status === 'updated') ctx.out(diff.trimEnd());
  return true;
}

async function throughClaudeCli(host: HostSpec, claude: string, request: SetupRequest, launch: Launch | undefined, ctx: SetupContext): Promise<boolean> {
  const file = host.file(request.scope, ctx.place);
  const planned = await plan(host, file, request, launch, ctx);
  if (!planned) return false;
  const summary = describePlan(planned.plan, request.name);
  const commands = claudeCommands(planned.plan, request.scope, request.name);
  if (commands.length === 0) {
    ctx.out(`${host.label}: ${file}: ${summary}`);
    return true;
  }
  if (request.dryRun) {
    ctx.out(`${host.label}: would have ${summary} (dry run, nothing run); would run:`);
    for (const args of commands) ctx.out(`  ${shellLine(['claude', ...args])}`);
    return true;
  }
  for (const args of commands) {
    const result = await runCommand(claude, args, { cwd: ctx.place.cwd, env: ctx.place.env });
    if (result.code !== 0) {
      const reason = result.error?.message ?? (result.stderr.trim() || result.stdout.trim() || `exit ${String(result.code)}`);
      ctx.err(`mdp-server setup: ${host.label}: '${shellLine(['claude', ...args.slice(0, 5)])}' failed: ${reason}`);
      return false;
    }
  }
  ctx.out(`${host.label} (through ${claude}): ${summary}`);
  // The CLI rewrites the file its own way, so show the change as the entry's keys, not as a diff.
  if (planned.plan.status === 'updated') for (const line of entryChanges(planned.plan)) ctx.out(line);
  return true;
}
