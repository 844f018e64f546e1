/**
 * A prompt descriptor as MCP prompt arguments, and `prompts/get` arguments back as the call: a GET
 * of the concrete path with the arguments as query. Arguments are `:param` segments (required),
 * `clientId` when several clients share the prompt (required), then the properties of the
 * prompt's `inputSchema` (required as its `required` says; a property named like a parameter or
 * `clientId` is left out, the parameter wins).
 */
import type { PromptDescriptor } from '@mdp/protocol';
import { CLIENT_ID_ARG, fillPath, paramNames, pickClient, type Picked } from './path-args.js';
import { isJsonObject, isObjectSchema, requiredOf } from './schema-text.js';
import { capText } from './text.js';

export interface PromptArgument {
  readonly name: string;
  readonly description?: string;
  readonly required: boolean;
}

export interface PromptPlan {
  /** The prompt's path pattern. */
  readonly path: string;
  readonly params: readonly string[];
  readonly clientIds: readonly string[];
  /** Arguments sent as query parameters. */
  readonly query: readonly string[];
  /** The values a property's schema allows or suggests (`enum`, `const`, `examples`), strings only: what `completion/complete` offers. */
  readonly choices: ReadonlyMap<string, readonly string[]>;
}

/** Most values one argument's choices keep. */
export const CHOICES_MAX = 1000;

/** The strings a property schema names: its `enum`, `const` and `examples`, capped in number and length. */
export function schemaChoices(schema: unknown, maxChars: number): string[] {
  if (!isJsonObject(schema)) return [];
  const named = [...(Array.isArray(schema.enum) ? schema.enum : []), schema.const, ...(Array.isArray(schema.examples) ? schema.examples : [])];
  const strings = named.filter((value): value is string => typeof value === 'string' && value.length <= maxChars);
  return [...new Set(strings)].slice(0, CHOICES_MAX);
}

export interface PromptCall {
  readonly clientId: string;
  readonly path: string;
  readonly query?: Record<string, string>;
}

export function promptInput(descriptor: PromptDescriptor, clientIds: readonly string[], maxChars: number): { arguments: PromptArgument[]; plan: PromptPlan } {
  const { path } = descriptor;
  const params = paramNames(path);
  const args: PromptArgument[] = params.map((name) => ({ name, description: `Value of :${name} in ${path}`, required: true }));
  if (clientIds.length > 1) {
    const options = clientIds.map((id) => JSON.stringify(id)).join(', ');
    args.push({ name: CLIENT_ID_ARG, description: capText(`The client to ask: one of ${options}`, maxChars), required: true });
  }
  const reserved = new Set(args.map((arg) => arg.name));
  const query: string[] = [];
  const choices = new Map<string, string[]>();
  const own = descriptor.inputSchema;
  if (own !== undefined && isObjectSchema(own)) {
    const required = new Set(requiredOf(own));
    for (const [name, schema] of Object.entries(own.properties)) {
      if (reserved.has(name)) continue;
      const described = isJsonObject(schema) && typeof schema.description === 'string' ? capText(schema.description, maxChars) : '';
      args.push({ name, ...(described ? { description: described } : {}), required: required.has(name) });
      query.push(name);
      const offered = schemaChoices(schema, maxChars);
      if (offered.length > 0) choices.set(name, offered);
    }
  }
  return { arguments: args, plan: { path, params, clientIds, query, choices } };
}

/** The call `args` make with `plan`, or a sentence saying what is wrong with them. */
export function promptCall(plan: PromptPlan, args: Readonly<Record<string, string>> = {}): Picked<PromptCall> {
  const client = pickClient(plan.clientIds, args);
  if (!client.ok) return client;
  const path = fillPath(plan.path, args);
  if (!path.ok) return path;
  const query = plan.query.filter((name) => typeof args[name] === 'string').map((name) => [name, args[name] as string] as const);
  const call = { clientId: client.value, path: path.value };
  return { ok: true, value: query.length > 0 ? { ...call, query: Object.fromEntries(query) } : call };
}
