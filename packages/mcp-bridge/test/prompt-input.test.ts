import { describe, expect, it } from 'vitest';
import type { PromptDescriptor } from '@mdp/protocol';
import { promptCall, promptInput } from '../src/prompt-input.js';

const prompt = (path: string, inputSchema?: Record<string, unknown>): PromptDescriptor =>
  ({ type: 'prompt', path, ...(inputSchema ? { inputSchema } : {}) }) as PromptDescriptor;

describe('promptInput', () => {
  it('arguments: path parameters, clientId when shared, then inputSchema properties', () => {
    const schema = { type: 'object', properties: { tone: { type: 'string', description: 'How to sound' }, id: {}, length: {} }, required: ['tone'] };
    const { arguments: args, plan } = promptInput(prompt('/reviews/:id/prompt.md', schema), ['a', 'b'], 100);
    expect(args).toEqual([
      { name: 'id', description: 'Value of :id in /reviews/:id/prompt.md', required: true },
      { name: 'clientId', description: 'The client to ask: one of "a", "b"', required: true },
      { name: 'tone', description: 'How to sound', required: true },
      { name: 'length', required: false },
    ]);
    expect(plan.query).toEqual(['tone', 'length']);
  });

  it('no inputSchema, or not an object one: only the path gives arguments', () => {
    expect(promptInput(prompt('/a/prompt.md'), ['c'], 100).arguments).toEqual([]);
    expect(promptInput(prompt('/a/prompt.md', { type: 'string' }), ['c'], 100).arguments).toEqual([]);
  });
});

describe('promptCall', () => {
  it('fills the path and sends the declared arguments as query', () => {
    const { plan } = promptInput(prompt('/reviews/:id/prompt.md', { type: 'object', properties: { tone: {} } }), ['c'], 100);
    expect(promptCall(plan, { id: 'r1', tone: 'kind', other: 'x' })).toEqual({
      ok: true,
      value: { clientId: 'c', path: '/reviews/r1/prompt.md', query: { tone: 'kind' } },
    });
    expect(promptCall(plan, {})).toMatchObject({ ok: false, message: expect.stringContaining('Argument "id" is required') });
  });
});
