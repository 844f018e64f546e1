import { describe, expect, it } from 'vitest';
import { CallPathRequestSchema, CallPathsRequestSchema, ListClientsRequestSchema, ListPathsRequestSchema } from '@mdp/protocol';
import { GENERIC_TOOLS } from '../src/generic-tools.js';
import { GENERIC_TOOL_NAMES } from '../src/names.js';

describe('generic tool schemas', () => {
  it("describe exactly the fields of the host contract's request schemas", () => {
    const schemas = {
      listClients: ListClientsRequestSchema,
      listPaths: ListPathsRequestSchema,
      callPath: CallPathRequestSchema,
      callPaths: CallPathsRequestSchema,
    };
    expect(GENERIC_TOOLS.map((tool) => tool.name)).toEqual([...GENERIC_TOOL_NAMES]);
    for (const tool of GENERIC_TOOLS) {
      const entries = schemas[tool.name as keyof typeof schemas].entries as Record<string, { type: string }>;
      expect(Object.keys(tool.inputSchema.properties).sort()).toEqual(Object.keys(entries).sort());
      const required = Object.entries(entries)
        .filter(([, schema]) => schema.type !== 'optional')
        .map(([name]) => name);
      expect([...(tool.inputSchema.required ?? [])].sort()).toEqual(required.sort());
    }
  });
});
