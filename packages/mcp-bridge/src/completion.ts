/**
 * `completion/complete`: values for a prompt's arguments and a resource template's variables, as a
 * pure function of the catalog.
 *
 *   - a prompt's `clientId` (several clients share it): their ids;
 *   - a prompt argument from its input schema: the property's `enum`, `const` and `examples`;
 *   - a `:param` of a prompt or skill path (a template variable): the values the same client(s)
 *     publish at that place in other paths (`/topics/cats/skill.md` or `GET /topics/dogs` for
 *     `/topics/:topic/skill.md`), earlier parameters narrowed by the values already chosen
 *     (`context.arguments`), kept only when they are valid parameter values.
 *
 * Values start with what the agent typed (case-insensitive), in the order found, at most MCP's 100 a
 * result with `total` and `hasMore`. A prompt, template or argument the catalog does not have gets no
 * values rather than an error: the catalog may change while an agent types, and MCP hosts ask as
 * the user types.
 */
import { isValidParamValue, splitPath } from '@mdp/protocol';
import { CLIENT_ID_ARG } from './path-args.js';
import type { CatalogClient, Surface } from './surface.js';

/** MCP's most values in one completion result. */
export const COMPLETION_MAX_VALUES = 100;
/** Longest value an agent may have typed, characters; a longer one matches nothing. */
export const COMPLETION_MAX_INPUT = 1000;

export type CompletionRef = { readonly type: 'ref/prompt'; readonly name: string } | { readonly type: 'ref/resource'; readonly uri: string };

export interface CompletionQuery {
  readonly ref: CompletionRef;
  readonly argument: { readonly name: string; readonly value: string };
  /** Arguments or variables already chosen. */
  readonly context?: { readonly arguments?: Readonly<Record<string, string>> };
}

export interface Completion {
  readonly values: string[];
  readonly total: number;
  readonly hasMore: boolean;
}

const none: Completion = { values: [], total: 0, hasMore: false };

/**
 * Values the clients publish at the place of `:name` in `pattern`: the segment of each of their paths
 * that agrees with `pattern` up to there (a literal equal, a parameter equal to its chosen value or,
 * not chosen, anything).
 */
export function paramValues(pattern: string, name: string, clients: readonly CatalogClient[], chosen: Readonly<Record<string, string>> = {}): string[] {
  const segments = splitPath(pattern);
  const at = segments.indexOf(`:${name}`);
  if (at < 0) return [];
  const values = new Set<string>();
  for (const client of clients) {
    for (const path of client.paths) {
      const other = splitPath(path.path);
      if (other.length <= at) continue;
      const value = other[at] as string;
      if (value.startsWith(':') || !isValidParamValue(value)) continue;
      const agrees = segments.slice(0, at).every((segment, i) => {
        const theirs = other[i] as string;
        if (!segment.startsWith(':')) return theirs === segment;
        const given = chosen[segment.slice(1)];
        return given === undefined || given === theirs;
      });
      if (agrees) values.add(value);
    }
  }
  return [...values];
}

function matching(candidates: readonly string[], typed: string): Completion {
  if (typed.length > COMPLETION_MAX_INPUT) return none;
  const prefix = typed.toLowerCase();
  const found = candidates.filter((value) => value.toLowerCase().startsWith(prefix));
  return { values: found.slice(0, COMPLETION_MAX_VALUES), total: found.length, hasMore: found.length > COMPLETION_MAX_VALUES };
}

/** The completion of `query` against the surface and the catalog's clients. */
export function complete(surface: Surface, clients: readonly CatalogClient[], query: CompletionQuery): Completion {
  const { ref, argument } = query;
  const chosen = query.context?.arguments ?? {};
  const byId = (ids: readonly string[]): CatalogClient[] => clients.filter((client) => ids.includes(client.id));
  if (ref.type === 'ref/prompt') {
    const prompt = surface.prompts.find((entry) => entry.definition.name === ref.name);
    if (!prompt) return none;
    const { plan } = prompt;
    if (plan.params.includes(argument.name)) {
      const picked = chosen[CLIENT_ID_ARG];
      const ids = picked !== undefined && plan.clientIds.includes(picked) ? [picked] : plan.clientIds;
      return matching(paramValues(plan.path, argument.name, byId(ids), chosen), argument.value);
    }
    if (argument.name === CLIENT_ID_ARG && plan.clientIds.length > 1) return matching(plan.clientIds, argument.value);
    return matching(plan.choices.get(argument.name) ?? [], argument.value);
  }
  const template = surface.templates.find((entry) => entry.definition.uriTemplate === ref.uri);
  if (!template) return none;
  return matching(paramValues(template.path, argument.name, byId([template.clientId]), chosen), argument.value);
}
