/**
 * The four generic tools (SPEC §12–§13), always listed: `listClients`, `listPaths`, `callPath`,
 * `callPaths`, with the host contract's inputs and results. Arguments are parsed with the same
 * valibot schemas as the host API's requests, so an agent gets the same answer either way; the
 * JSON Schemas below describe those schemas to the agent (a test keeps their fields in step).
 */
import {
  MAX_CURSOR_LENGTH,
  MAX_LIST_LIMIT,
  parseCallPathRequest,
  parseCallPathsRequest,
  parseListClientsRequest,
  parseListPathsRequest,
  type CallPathRequest,
  type CallResult,
  type ParseResult,
} from '@mdp/protocol';
import { DEFAULT_MAX_MESSAGE_BYTES, FANOUT_BODY_FACTOR, fanoutTargets, type CallOptions, type HostApi } from '@mdp/core';
import { GENERIC_TOOL_NAMES } from './names.js';
import type { McpToolDefinition } from './surface.js';
import { badArguments, callOutcome, toolSuccess, type ToolResult } from './tool-results.js';

const search = { type: 'string', maxLength: 1000, description: 'Case-insensitive text to look for in ids, names, paths, methods and descriptions' };
const limit = { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT, description: 'Most items in this page (default 100)' };
const cursor = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_CURSOR_LENGTH,
  description:
    'The nextCursor of the page before, to list the next page. A page may hold fewer items than the limit, even none: ask again until there is no nextCursor',
};
const clientId = { type: 'string', minLength: 1, description: 'A client id from listClients (a mirrored client may also be named by its bare id)' };
const method = { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], description: "GET for skills and prompts; an endpoint's own method" };
const path = { type: 'string', description: 'The concrete path to call, e.g. /docs/review/skill.md or /todos/42 (":param" segments filled in)' };
const strings = (description: string) => ({ type: 'object', additionalProperties: { type: 'string' }, description });
const callFields = {
  method,
  path,
  query: strings('Query parameters'),
  body: { description: 'Request body (any JSON), for POST, PUT and PATCH' },
  headers: strings('Request headers'),
  auth: {
    type: 'object',
    description: 'Credentials passed to the client with the call',
    properties: { scheme: { type: 'string' }, token: { type: 'string' }, headers: strings('Auth headers'), metadata: { type: 'object' } },
  },
};

export const GENERIC_TOOLS: readonly McpToolDefinition[] = [
  {
    name: 'listClients',
    description:
      'List the apps and pages connected to this MDP server (MDP clients): id, name, description, what they publish (paths) and how they are connected. Start here. Paged: when the result has a nextCursor, call again with it as cursor for more.',
    inputSchema: { type: 'object', properties: { search, limit, cursor } },
    annotations: { title: 'List MDP clients', readOnlyHint: true },
  },
  {
    name: 'listPaths',
    description:
      'List the paths clients publish: endpoints (call them), prompts and skills (GET them; skills are markdown that explains the app). Without search or depth only the first level is listed: read those skills, then go deeper with depth or search. Paged: when the result has a nextCursor, call again with it as cursor for more.',
    inputSchema: {
      type: 'object',
      properties: {
        clientId: { ...clientId, description: "Only this client's paths" },
        search,
        depth: { type: 'integer', minimum: 1, description: 'List paths up to this depth (/a/skill.md is 1, /a/b/skill.md is 2)' },
        limit,
        cursor,
      },
    },
    annotations: { title: 'List MDP paths', readOnlyHint: true },
  },
  {
    name: 'callPath',
    description:
      'Call one path of one client: read a skill or prompt (GET), or call an endpoint with its method. Returns { ok, data } or { ok: false, error }.',
    inputSchema: { type: 'object', properties: { clientId, ...callFields }, required: ['clientId', 'method', 'path'] },
    annotations: { title: 'Call an MDP path', readOnlyHint: false, openWorldHint: true },
    // A long call may run as an MCP task (tasks.ts), as every catalog tool may.
    execution: { taskSupport: 'optional' },
  },
  {
    name: 'callPaths',
    description:
      'Call the same path on several clients at once (all that have it when clientIds is left out). Returns { results: [{ clientId, ok, data | error }] }.',
    inputSchema: {
      type: 'object',
      properties: {
        clientIds: { type: 'array', items: clientId, minItems: 1, maxItems: 1000, description: 'Clients to call; default: every client with this path' },
        ...callFields,
      },
      required: ['method', 'path'],
    },
    annotations: { title: 'Call an MDP path on many clients', readOnlyHint: false, openWorldHint: true },
  },
];

const GENERIC = new Set<string>(GENERIC_TOOL_NAMES);

/** Bytes of payload one `callPaths` may send in all, its copies to every client counted (as the host API's default). */
export const CALL_MANY_BUDGET_BYTES = FANOUT_BODY_FACTOR * DEFAULT_MAX_MESSAGE_BYTES;

export function isGenericTool(name: string): boolean {
  return GENERIC.has(name);
}

/** What `callPath` and every catalog tool list as their `execution`: they may run as MCP tasks. */
export const TASK_SUPPORT = { taskSupport: 'optional' } as const;

/**
 * Whether a task-augmented call of tool `name` is taken: `callPath` and any other name (a catalog
 * tool, or an unknown one, whose task then fails as its call would) yes; the listings and
 * `callPaths` no (their `execution.taskSupport` is the default, forbidden).
 */
export function runsAsTask(name: string): boolean {
  return name === 'callPath' || !GENERIC.has(name);
}

/** How `callPath` shows one call's result to the agent (default: as JSON). */
export type ShowCall = (request: CallPathRequest, result: CallResult) => ToolResult;

/** Run a generic tool. Host rejections (unknown client, no such path) are left to the caller. */
export async function callGenericTool(
  host: HostApi,
  name: string,
  args: Record<string, unknown>,
  options: CallOptions,
  show: ShowCall = (_request, result) => callOutcome(result),
): Promise<ToolResult> {
  const parsed = <T>(result: ParseResult<T>, run: (value: T) => Promise<ToolResult>): Promise<ToolResult> =>
    result.ok ? run(result.value) : Promise.resolve(badArguments(name, result.error));
  switch (name) {
    case 'listClients':
      return parsed(parseListClientsRequest(args), async (request) => toolSuccess({ ...(await host.listClients(request)) }));
    case 'listPaths':
      return parsed(parseListPathsRequest(args), async (request) => toolSuccess({ ...(await host.listPaths(request)) }));
    case 'callPath':
      return parsed(parseCallPathRequest(args), async (request) => show(request, await host.callPath(request, options)));
    case 'callPaths':
      return parsed(parseCallPathsRequest(args), async (request) => {
        const result = await host.callPaths(request, { ...options, maxTargets: fanoutTargets(request, CALL_MANY_BUDGET_BYTES) });
        // A tool error only when nothing succeeded; the per-client outcomes are in the results either way.
        const payload = { ...result };
        return result.results.some((entry) => entry.ok) ? toolSuccess(payload) : { ...toolSuccess(payload), isError: true };
      });
    default:
      throw new RangeError(`${name} is not a generic tool`);
  }
}
