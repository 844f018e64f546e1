/**
 * Where the time goes: reads a V8 `.cpuprofile` (from `node --cpu-prof`) and lists self time by
 * area (package or node subsystem), and self and inclusive time by function.
 *
 *   node dist/profile.js <file.cpuprofile | directory> [top]
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const META = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

/** The package or node subsystem a frame belongs to. */
export function areaOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return META.has(frame.functionName) ? frame.functionName : '(native)';
  if (url.startsWith('node:')) {
    const parts = url.slice(5).split('/');
    return `node:${parts[0] === 'internal' ? parts.slice(1, 2).join('/') || 'internal' : parts[0]}`.replace(/\.js$/, '');
  }
  const pnpm = url.lastIndexOf('/node_modules/');
  if (pnpm >= 0) {
    const rest = url.slice(pnpm + '/node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  const pkg = url.match(/\/(packages|apps)\/([^/]+)\//);
  if (pkg) return `@mdp/${pkg[2]}`;
  return url.replace(/^file:\/\//, '');
}

function frameKey(frame: CallFrame): string {
  const file = frame.url ? frame.url.replace(/^file:\/\/.*?\/(node_modules\/\.pnpm\/[^/]+\/node_modules\/|packages\/|apps\/)/, '') : '';
  return `${frame.functionName || '(anonymous)'} ${file ? `${file}:${frame.lineNumber + 1}` : ''}`.trim();
}

export interface ProfileSummary {
  /** Sampled time that was not idle, µs. */
  readonly busyUs: number;
  readonly areas: ReadonlyArray<readonly [string, number]>;
  readonly selfTop: ReadonlyArray<readonly [string, number]>;
  readonly inclusiveTop: ReadonlyArray<readonly [string, number]>;
}

export function analyzeProfile(profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const areas = new Map<string, number>();
  let busyUs = 0;
  const add = (map: Map<string, number>, key: string, us: number): void => {
    map.set(key, (map.get(key) ?? 0) + us);
  };
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i] as number);
    // timeDeltas[i + 1] is the time until the next sample: the time spent in this one.
    const us = profile.timeDeltas[i + 1] ?? 0;
    if (!node || node.callFrame.functionName === '(idle)') continue;
    busyUs += us;
    add(self, frameKey(node.callFrame), us);
    add(areas, areaOf(node.callFrame), us);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = (byId.get(id) as ProfileNode).callFrame;
      if (META.has(frame.functionName) || !frame.url || frame.url.startsWith('node:')) continue;
      const key = frameKey(frame);
      if (seen.has(key)) continue;
      seen.add(key);
      add(inclusive, key, us);
    }
  }
  const sorted = (map: Map<string, number>, n: number): Array<[string, number]> => [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
  return { busyUs, areas: sorted(areas, top), selfTop: sorted(self, top), inclusiveTop: sorted(inclusive, top) };
}

/**
 * Render a summary. With `operations` (calls relayed while the profile ran), each line also shows
 * µs per operation: the profile's busy time is the main thread's, a little under getrusage's CPU.
 */
export function renderProfile(summary: ProfileSummary, title: string, operations?: number): string {
  const pct = (us: number): string => `${((us / summary.busyUs) * 100).toFixed(1)}%`.padStart(6);
  const per = (us: number): string => (operations ? `${(us / operations).toFixed(1).padStart(7)} µs` : '');
  const head = operations ? ` — ${operations.toLocaleString('en-US')} relayed calls, ${(summary.busyUs / operations).toFixed(1)} µs busy each` : '';
  const lines = [`#### ${title}: ${(summary.busyUs / 1e6).toFixed(2)} s busy${head}`, '', 'Self time by area:', ''];
  for (const [area, us] of summary.areas) lines.push(`  ${pct(us)} ${per(us)}  ${area}`);
  lines.push('', 'Self time by function:', '');
  for (const [key, us] of summary.selfTop) lines.push(`  ${pct(us)} ${per(us)}  ${key}`);
  lines.push('', 'Inclusive time by function (project and library frames):', '');
  for (const [key, us] of summary.inclusiveTop) lines.push(`  ${pct(us)} ${per(us)}  ${key}`);
  return lines.join('\n');
}

export function summarizeProfileFile(path: string, top = 25, operations?: number, title = path): string {
  return renderProfile(analyzeProfile(JSON.parse(readFileSync(path, 'utf8')) as CpuProfile, top), title, operations);
}

/** Every profile under `dir` (one sub-directory per subject, as `pnpm bench --profile` writes them). */
export function summarizeProfileDir(dir: string, top = 25): string {
  const out: string[] = [];
  for (const sub of readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    const subDir = join(dir, sub.name);
    const relayedFile = join(subDir, 'relayed.json');
    const relayed = existsSync(relayedFile) ? (JSON.parse(readFileSync(relayedFile, 'utf8')) as { relayed: number }).relayed : undefined;
    for (const file of readdirSync(subDir).filter((f) => f.endsWith('.cpuprofile'))) {
      out.push(summarizeProfileFile(join(subDir, file), top, relayed || undefined, sub.name));
    }
  }
  return out.join('\n\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node dist/profile.js <file.cpuprofile> [top]\n');
    process.exit(64);
  }
  const n = top ? Number(top) : 25;
  process.stdout.write(`${file.endsWith('.cpuprofile') ? summarizeProfileFile(file, n) : summarizeProfileDir(file, n)}\n`);
}
