/**
 * Output schemas checked (output-schema.ts makes them): a tool's schema is listed only when it
 * compiles, since a host that cannot compile one tool's schema may refuse the whole list (the SDK's
 * client does); a client's answer that does not fit it becomes a tool error (`bad_output`), never
 * structured content that lies. Validators are the SDK's own (Ajv), compiled once per schema.
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import type { JsonObject } from './schema-text.js';

let ajv: AjvJsonSchemaValidator | undefined;

/**
 * The JSON Schema validator of every session's SDK `Server` (which checks with it only what an agent
 * answers to an elicitation): the one Ajv of this module, made on first use. The SDK's default is a
 * new Ajv per `Server`, whose meta-schema compiles when the session opens: milliseconds of CPU for
 * every session, and of the start of `mdp-server mcp`, for a check the bridge never asks for.
 */
export const SESSION_VALIDATOR: jsonSchemaValidator = {
  getValidator: (schema) => (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema),
};
/** Compiled validators by schema JSON (null: it does not compile); bounded, schemas come from clients. */
const compiled = new Map<string, JsonSchemaValidator<unknown> | null>();
const COMPILED_MAX = 512;

function validatorFor(schema: JsonObject): JsonSchemaValidator<unknown> | null {
  const key = JSON.stringify(schema);
  let validator = compiled.get(key);
  if (validator !== undefined) return validator;
  try {
    validator = (ajv ??= new AjvJsonSchemaValidator()).getValidator<unknown>(schema as never);
  } catch {
    validator = null;
  }
  if (compiled.size >= COMPILED_MAX) compiled.delete(compiled.keys().next().value as string);
  compiled.set(key, validator);
  return validator;
}

/** Whether `schema` can be listed: it compiles. */
export function compiles(schema: JsonObject): boolean {
  return validatorFor(schema) !== null;
}

/** Why `structuredContent` does not fit `schema`, or undefined when it does. */
export function outputProblem(schema: JsonObject, structuredContent: unknown): string | undefined {
  const validator = validatorFor(schema);
  if (!validator) return 'its output schema does not compile';
  const result = validator(structuredContent);
  return result.valid ? undefined : result.errorMessage;
}
