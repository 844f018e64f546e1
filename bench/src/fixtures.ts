/**
 * What every mock client registers and answers, and what the load generator asks for and expects.
 * Shared by the mock clients, the baselines and the load generator so that every server under test
 * relays exactly the same bytes.
 */

/** The body every skill read returns (and the bare HTTP server answers with): 130 bytes of Markdown. */
export const SKILL_TEXT =
  '# Bench skill\n\nA fixed skill body returned by every mock client, so that every server relays the same bytes.\n\n- one\n- two\n- three\n';

export const SKILL_CONTENT_TYPE = 'text/markdown; charset=utf-8';

/** Client ids are `<prefix><index>`: `c0`, `c1`, … */
export function clientId(prefix: string, index: number): string {
  return `${prefix}${index}`;
}

/** Skill `j` is registered at `/s<j>/skill.md` and read at `/skills/<clientId>/s<j>` (SPEC §8 candidate `/<path>/skill.md`). */
export function skillPath(index: number): string {
  return `/s${index}/skill.md`;
}

export function skillReadPath(client: string, skill: number): string {
  return `/skills/${client}/s${skill}`;
}

/** Endpoint `j` (for host and MCP calls) is registered as `POST /e<j>/act`. */
export function endpointPath(index: number): string {
  return `/e${index}/act`;
}

/**
 * How the load reaches a client's paths: a plain skill read (`GET /skills/…`), a host API call
 * (`POST /mdp/call` of an endpoint), or an MCP `tools/call` of the generic `callPath` tool over
 * Streamable HTTP. The catalog holds skills for the first, endpoints for the others.
 */
export type ReadVia = 'skill' | 'host-call' | 'mcp-call';

/**
 * The registerClient message of one mock client with `count` skill (or endpoint) descriptors. With
 * `descriptionBytes`, every description is padded to that many characters (the largest catalogs
 * the limits allow, for the listing scenario).
 */
export function registerMessage(id: string, count: number, via: ReadVia = 'skill', descriptionBytes = 0): object {
  const paths = [];
  for (let j = 0; j < count; j++) {
    const description = descriptionBytes > 0 ? `Bench skill ${j} `.padEnd(descriptionBytes, 'd') : `Bench ${via === 'skill' ? 'skill' : 'endpoint'} ${j}`;
    paths.push(via === 'skill' ? { type: 'skill', path: skillPath(j), description } : { type: 'endpoint', method: 'POST', path: endpointPath(j), description });
  }
  return { type: 'registerClient', client: { id, name: `Bench client ${id}`, version: '1.0.0', paths } };
}

/** A population of registered clients: ids `<prefix>0 … <prefix>(clients-1)`, each with `skills` skills. */
export interface Population {
  readonly prefix: string;
  readonly clients: number;
  readonly skills: number;
  /** How many of the clients (the first ones) the load reads from; default all of them. */
  readonly readClients?: number;
  /** How the load reaches them; default `skill`. */
  readonly via?: ReadVia;
  /** Characters of each path's description (default: a short one). */
  readonly descriptionBytes?: number;
}
