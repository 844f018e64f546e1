/**
 * A catalog tool's `outputSchema`, from the endpoint's declared `outputSchema`. Tool results are
 * `{ ok, data? , error?, source? }` (tool-results.ts), so the tool's schema is that envelope with the
 * endpoint's schema as `data`; a failure (`ok: false`, `isError`) fits it too, as it must: the SDK's
 * client checks `structuredContent` against the schema even on an error.
 *
 * The endpoint's schema is a client's word: it is capped like input schemas and stripped of `$id`
 * (one client's id must not clash with another's in a validator). Whether it compiles, and whether
 * an answer fits it, is output-check.ts's (which loads a validator: not this module, which the
 * `./lite` entry reaches through the surface).
 */
import { capSchemaText, isJsonObject, type JsonObject } from './schema-text.js';

function withoutIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutIds);
  if (!isJsonObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== '$id' && key !== '$schema')
      .map(([key, child]) => [key, withoutIds(child)]),
  );
}

/** The envelope schema of a tool whose endpoint declares `outputSchema` (an object or boolean schema), else undefined. */
export function toolOutputSchema(outputSchema: unknown, maxChars: number): JsonObject | undefined {
  if (!isJsonObject(outputSchema) && typeof outputSchema !== 'boolean') return undefined;
  return {
    type: 'object',
    properties: {
      ok: { type: 'boolean' },
      data: withoutIds(capSchemaText(outputSchema, maxChars)),
      error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } }, required: ['code', 'message'] },
      source: { type: 'string' },
    },
    required: ['ok'],
  };
}
