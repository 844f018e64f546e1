/**
 * Tool results, one shape for every tool (SPEC §13): the payload as `structuredContent` and the
 * same JSON as text; a failure is `{ ok: false, error }` with `isError: true`, never a protocol
 * error, so that the agent reads what went wrong and can act on it.
 */
import type { CallResult, SerializedError } from '@mdp/protocol';
import { contentOf, type ContentBlock } from './content.js';

export interface ToolResult {
  readonly [key: string]: unknown;
  readonly content: ContentBlock[];
  /** The JSON of the result: always, except for content blocks of a tool with no output schema. */
  readonly structuredContent?: Record<string, unknown>;
  readonly isError?: boolean;
}

export function toolSuccess(payload: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(payload) }], structuredContent: payload };
}

export function toolFailure(error: SerializedError, extra: Record<string, unknown> = {}): ToolResult {
  const payload = { ok: false, error, ...extra };
  return { content: [{ type: 'text', text: JSON.stringify(payload) }], structuredContent: payload, isError: true };
}

export function badArguments(tool: string, problem: string): ToolResult {
  return toolFailure({ code: 'bad_request', message: `Invalid arguments for ${tool}: ${problem}` });
}

/** The result of one call, as `callPath` and every catalog tool answer it. */
export function callOutcome(result: CallResult): ToolResult {
  if (result.ok) return toolSuccess(result.data === undefined ? { ok: true } : { ok: true, data: result.data });
  return toolFailure(result.error, result.source ? { source: result.source } : {});
}

export interface VisibleOptions {
  /** The endpoint's declared `contentType`. */
  readonly contentType?: string | undefined;
  /** Most bytes of text and decoded data in the blocks (`maxContentBytes`). */
  readonly maxContentBytes: number;
  /** Keep the JSON as `structuredContent` beside blocks: the tool lists an output schema. */
  readonly structured: boolean;
}

/**
 * The result of one call as an agent can see it (content.ts): MCP content, or media the endpoint
 * declares, as content blocks; content over the cap a `too_large` error; anything else as
 * {@link callOutcome}.
 */
export function visibleOutcome(result: CallResult, options: VisibleOptions): ToolResult {
  if (!result.ok) return callOutcome(result);
  const content = contentOf(result.data, { contentType: options.contentType, maxBytes: options.maxContentBytes });
  if (content.kind === 'json') return callOutcome(result);
  if (content.kind === 'too_large') {
    return toolFailure({
      code: 'too_large',
      message: `The answer is ${content.bytes} bytes of content, over the ${content.maxBytes} bytes this server sends an agent in one result; nothing of it was sent. Ask the app for less (a smaller image, fewer blocks).`,
    });
  }
  const payload = { ok: true, data: result.data };
  return options.structured ? { content: content.blocks, structuredContent: payload } : { content: content.blocks };
}
