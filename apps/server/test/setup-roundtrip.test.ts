/**
 * Seeded, generated config files of the shapes users write (comments above tables and keys,
 * blank lines, the three Codex styles, trailing commas, CRLF, a byte-order mark, no final line
 * break): for each, adding our entry is idempotent, switching its transport and back works, and
 * removing it gives back the user's bytes.
 */
import { describe, expect, it } from 'vitest';
import { HOSTS, type HostId, type Launch } from '../src/setup/hosts.js';
import { planConfig } from '../src/setup/plan.js';

const STDIO: Launch = { transport: 'stdio', command: '/opt/node/bin/node', args: ['/opt/mdp/dist/cli.js', 'mcp'] };
const HTTP: Launch = { transport: 'http', url: 'http://127.0.0.1:47372/mcp' };

/** A small deterministic generator (an LCG), so a failure names a seed that reproduces it. */
function generator(seed: number): { chance: (p: number) => boolean; pick: <T>(items: readonly T[]) => T; below: (n: number) => number } {
  let state = seed;
  const next = (): number => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  return { chance: (p) => next() < p, pick: (items) => items[Math.floor(next() * items.length)]!, below: (n) => Math.floor(next() * n) };
}

type Gen = ReturnType<typeof generator>;

function finish(g: Gen, text: string): string {
  let out = text.replace(/\n+$/, '') + g.pick(['', '\n', '\n\n']);
  if (g.chance(0.2)) out = out.replaceAll('\n', '\r\n');
  return g.chance(0.1) ? `\uFEFF${out}` : out;
}

function tomlFile(g: Gen): string {
  const parts: string[] = [];
  if (g.chance(0.5)) parts.push(g.pick(['model = "o3"', 'model = "o3" # mine', '# top', 'x = [\n  1,\n  2,\n]']));
  const style = g.pick(['tables', 'dotted', 'under', 'inline', 'none']);
  if (style === 'dotted') parts.push('mcp_servers.docs.command = "npx"');
  if (style === 'inline') parts.push('mcp_servers.docs = { command = "npx" } # docs');
  if (style === 'under') parts.push(`[mcp_servers]\n${g.pick(['docs.command = "npx"', 'docs = { command = "npx" }', ''])}`);
  for (let i = 0, n = g.below(6); i < n; i++) {
    const header = style === 'tables' && g.chance(0.6) ? `[mcp_servers.s${i}]` : `[profiles.p${i}]`;
    const body = g.pick(['', 'k = 1\n', 'k = 1 # why\n', 'k = 1\n# commented = 2\n', 'a = """\nx\n"""\n']);
    parts.push(g.pick(['', '\n']) + g.pick(['', '# about the next table\n', '# a\n# b\n']) + `${header}\n${body}`);
  }
  return finish(g, parts.join('\n'));
}

function jsonFile(g: Gen, comments: boolean): string {
  const indent = g.pick(['  ', '    ', '\t']);
  const trailing = comments && g.chance(0.5);
  const comment = (text: string): string => (comments && g.chance(0.5) ? text : '');
  const object = (items: string[], outer: string): string =>
    items.length === 0
      ? '{}'
      : `{\n${items.map((item, i) => `${item}${i < items.length - 1 || trailing ? ',' : ''}${comment(' // why')}`).join('\n')}\n${outer}}`;
  const props: string[] = [];
  for (let i = 0, n = g.below(4); i < n; i++)
    props.push(`${comment(`${indent}// about k${i}\n`)}${indent}"k${i}": ${g.pick(['1', '{}', '[1, 2]', '{ "a": 1 }'])}`);
  // Files with a servers object that holds no server are left out: they lose it (see json-config.ts).
  if (g.chance(0.6)) {
    const servers: string[] = [];
    for (let i = 0, n = 1 + g.below(2); i < n; i++)
      servers.push(`${comment(`${indent}${indent}// about s${i}\n`)}${indent}${indent}"s${i}": { "command": "x" }`);
    props.splice(g.below(props.length + 1), 0, `${indent}"mcpServers": ${object(servers, indent)}`);
  }
  return finish(g, object(props, ''));
}

function roundTrip(id: HostId, text: string, launch: Launch): void {
  const host = HOSTS[id];
  const added = planConfig(host, text, 'mdp', launch);
  if (!added.ok) throw new Error(`add: ${added.message}`);
  expect(planConfig(host, added.text, 'mdp', launch)).toMatchObject({ ok: true, status: 'unchanged' });
  const switched = planConfig(host, added.text, 'mdp', launch === STDIO ? HTTP : STDIO);
  if (!switched.ok) throw new Error(`switch: ${switched.message}`);
  expect(planConfig(host, switched.text, 'mdp', launch)).toMatchObject({ ok: true });
  expect(planConfig(host, added.text, 'mdp', undefined)).toMatchObject({ ok: true, text });
}

describe.each([
  ['codex', (g: Gen) => tomlFile(g)],
  ['cursor', (g: Gen) => jsonFile(g, true)],
  ['claude-code', (g: Gen) => jsonFile(g, false)],
] as const)('%s: generated files', (id, file) => {
  it.each([1, 2, 3])('seed %i: 60 files, each added, switched and removed to its original bytes', (seed) => {
    const g = generator(seed);
    for (let i = 0; i < 60; i++) {
      const text = file(g);
      const launch = g.chance(0.5) ? STDIO : HTTP;
      try {
        roundTrip(id, text, launch);
      } catch (error) {
        throw new Error(`seed ${seed}, file ${i} (${JSON.stringify(text)}): ${(error as Error).message}`);
      }
    }
  });
});
