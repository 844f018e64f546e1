/**
 * An endpoint as an MCP tool's input schema, and an agent's arguments back as the call:
 *
 *   - the schema is an object; each `:param` segment is a required string property;
 *   - a tool shared by several clients has a required `clientId` (an enum of their ids);
 *   - an object `inputSchema` merges its properties in; when one of them has the name of a path
 *     parameter (or of `clientId`), or the schema is not an object, the whole schema goes under
 *     one `body` argument instead;
 *   - GET and DELETE send the endpoint's arguments as `query` (strings as they are, other values
 *     as JSON), POST, PUT and PATCH as `body`.
 */
import type { EndpointDescriptor, EndpointMethod } from '@mdp/protocol';
import { CLIENT_ID_ARG, PARAM_VALUE_PATTERN, fillPath, paramNames, pickClient, queryValue, type Picked } from './path-args.js';
import { capSchemaText, isJsonObject, isObjectSchema, requiredOf, schemaObject, type JsonObject } from './schema-text.js';

export interface ToolInputSchema extends JsonObject {
  readonly type: 'object';
  readonly properties: JsonObject;
  readonly required?: string[];
}

export interface ToolAnnotations {
  readonly title: string;
  readonly readOnlyHint: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

/** Where the endpoint's own input sits among the tool's arguments. */
export type InputPlacement =
  /** Top-level arguments (besides parameters and `clientId`); `declared` when the endpoint has an input schema. */
  | { readonly kind: 'merged'; readonly declared: boolean }
  /** One argument holds it all. */
  | { readonly kind: 'nested'; readonly key: string };

/** How a tool's arguments become a call. */
export interface ToolPlan {
  readonly method: EndpointMethod;
  /** The endpoint's path pattern. */
  readonly path: string;
  readonly params: readonly string[];
  /** Ids of the clients that have this tool; with more than one, `clientId` chooses. */
  readonly clientIds: readonly string[];
  readonly input: InputPlacement;
}

/** The call a tool's arguments make (validated again by the host contract's schema before it goes out). */
export interface ToolCall {
  readonly clientId: string;
  readonly method: EndpointMethod;
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
}

const SENDS_BODY: ReadonlySet<EndpointMethod> = new Set(['POST', 'PUT', 'PATCH']);

/** Keys the nested input may take, first free one wins. */
const NESTED_KEYS = ['body', 'input', 'payload'];

export function sendsBody(method: EndpointMethod): boolean {
  return SENDS_BODY.has(method);
}

export function toolAnnotations(method: EndpointMethod, path: string): ToolAnnotations {
  const title = `${method} ${path}`;
  switch (method) {
    case 'GET':
      return { title, readOnlyHint: true };
    case 'DELETE':
      return { title, readOnlyHint: false, destructiveHint: true };
    case 'PUT':
      return { title, readOnlyHint: false, idempotentHint: true };
    default:
      return { title, readOnlyHint: false };
  }
}

/** The input schema of a tool for `descriptor` offered by `clientIds`; descriptions in it capped at `maxChars`. */
export function toolInput(descriptor: EndpointDescriptor, clientIds: readonly string[], maxChars: number): { inputSchema: ToolInputSchema; plan: ToolPlan } {
  const { method, path } = descriptor;
  const params = paramNames(path);
  const properties: Array<[string, unknown]> = params.map((name) => [
    name,
    { type: 'string', pattern: PARAM_VALUE_PATTERN, description: `Value of :${name} in ${path}` },
  ]);
  const required = [...params];
  if (clientIds.length > 1) {
    properties.push([CLIENT_ID_ARG, { type: 'string', enum: [...clientIds], description: 'The client to call' }]);
    required.push(CLIENT_ID_ARG);
  }
  const reserved = new Set(properties.map(([name]) => name));
  const extra: JsonObject = {};
  let input: InputPlacement;
  const own = descriptor.inputSchema === undefined ? undefined : (capSchemaText(descriptor.inputSchema, maxChars) as JsonObject);
  if (own === undefined) {
    input = { kind: 'merged', declared: false };
    extra.additionalProperties = true;
  } else if (isObjectSchema(own) && !Object.keys(own.properties).some((name) => reserved.has(name))) {
    input = { kind: 'merged', declared: true };
    for (const [name, schema] of Object.entries(own.properties)) properties.push([name, schemaObject(schema)]);
    required.push(...requiredOf(own).filter((name) => !reserved.has(name)));
    for (const keyword of ['additionalProperties', '$defs', 'definitions'] as const) {
      if (own[keyword] !== undefined) extra[keyword] = own[keyword];
    }
  } else {
    const key = NESTED_KEYS.find((name) => !reserved.has(name)) ?? `${NESTED_KEYS[0]}_`;
    input = { kind: 'nested', key };
    // Definitions stay at the root, where `#/$defs/…` references look for them.
    const { $defs, definitions, ...schema } = own;
    if ($defs !== undefined) extra.$defs = $defs;
    if (definitions !== undefined) extra.definitions = definitions;
    properties.push([key, { description: `Sent to the endpoint as its ${sendsBody(method) ? 'body' : 'query'}`, ...schema }]);
    if (!isObjectSchema(own) || requiredOf(own).length > 0) required.push(key);
  }
  const inputSchema: ToolInputSchema = {
    type: 'object',
    properties: Object.fromEntries(properties),
    ...(required.length > 0 ? { required: [...new Set(required)] } : {}),
    ...extra,
  };
  return { inputSchema, plan: { method, path, params, clientIds, input } };
}

/** The call `args` make with `plan`, or a sentence saying what is wrong with them. */
export function toolCall(plan: ToolPlan, args: Readonly<Record<string, unknown>> = {}): Picked<ToolCall> {
  const client = pickClient(plan.clientIds, args);
  if (!client.ok) return client;
  const path = fillPath(plan.path, args);
  if (!path.ok) return path;
  const taken = new Set<string>(plan.params);
  if (plan.clientIds.length > 1) taken.add(CLIENT_ID_ARG);

  let input: unknown;
  if (plan.input.kind === 'merged') {
    const rest = Object.entries(args).filter(([name, value]) => !taken.has(name) && value !== undefined);
    input = rest.length > 0 || plan.input.declared ? Object.fromEntries(rest) : undefined;
  } else {
    const key = plan.input.key;
    const unknown = Object.keys(args).filter((name) => !taken.has(name) && name !== key);
    if (unknown.length > 0) {
      return {
        ok: false,
        message: `Unknown argument${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => JSON.stringify(n)).join(', ')}: this endpoint's input goes under "${key}"`,
      };
    }
    input = args[key];
  }

  const call = { clientId: client.value, method: plan.method, path: path.value };
  if (input === undefined) return { ok: true, value: call };
  // A value that is not an object cannot be a query string; it goes as the body, whatever the method.
  if (sendsBody(plan.method) || !isJsonObject(input)) return { ok: true, value: { ...call, body: input } };
  const query = Object.entries(input).filter(([, value]) => value !== undefined);
  return { ok: true, value: query.length > 0 ? { ...call, query: Object.fromEntries(query.map(([name, value]) => [name, queryValue(value)])) } : call };
}
