/**
 * Input schemas come from clients. Before an agent sees one: every `description` and `title` in it
 * is capped (text.ts), nesting deeper than SCHEMA_MAX_DEPTH is replaced by `{}` (any value), and
 * each top-level property is an object, as MCP hosts insist (a boolean schema `true` becomes `{}`,
 * `false` becomes `{ not: {} }`). One malformed tool must never make a host refuse the whole list.
 */
import { capText } from './text.js';

export type JsonObject = Record<string, unknown>;

/** Deepest nesting kept in a client's schema. */
export const SCHEMA_MAX_DEPTH = 32;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON Schema given as a boolean or anything else, as an object schema. */
export function schemaObject(value: unknown): JsonObject {
  if (isJsonObject(value)) return value;
  return value === false ? { not: {} } : {};
}

/** `value` with every `description`/`title` string capped at `max` and nesting bounded. */
export function capSchemaText(value: unknown, max: number, depth = 0): unknown {
  if (depth >= SCHEMA_MAX_DEPTH) return Array.isArray(value) ? [] : isJsonObject(value) ? {} : value;
  if (Array.isArray(value)) return value.map((item) => capSchemaText(item, max, depth + 1));
  if (!isJsonObject(value)) return value;
  // fromEntries makes own properties of every key, `__proto__` included (assignment would not).
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => [
      key,
      (key === 'description' || key === 'title') && typeof child === 'string' ? capText(child, max) : capSchemaText(child, max, depth + 1),
    ]),
  );
}

/** Whether `schema` describes an object with named properties (so they can become arguments). */
export function isObjectSchema(schema: JsonObject): schema is JsonObject & { properties: JsonObject } {
  return (schema.type === 'object' || schema.type === undefined) && isJsonObject(schema.properties);
}

/** The string entries of a schema's `required`. */
export function requiredOf(schema: JsonObject): string[] {
  return Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : [];
}
