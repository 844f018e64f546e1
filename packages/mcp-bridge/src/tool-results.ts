/**
 * Tool results, one shape for every tool (SPEC §13): the payload as `structuredContent` and the
 * same JSON as text; a failure is `{ ok: false, error }` with `isError: true`, never a protocol
 * error, so that the agent reads what went wrong and can act on it.
 */
import { UNSENDABLE_DATA_ERROR, type CallResult, type SerializedError } from '@mdp/protocol';
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
  if (result.ok) {
    try {
      return toolSuccess(result.data === undefined ? { ok: true } : { ok: true, data: result.data });
    } catch {
      // Its text is the JSON of the data: data nested deeper than JSON goes (see `sendable`).
      return toolFailure(UNSENDABLE_DATA_ERROR);
    }
  }
  return toolFailure(result.error, result.source ? { source: result.source } : {});
}

export interface VisibleOptions {
  /** The endpoint's declared `contentType`. */
  readonly contentType?: string | undefined;
  /** The client that answered (its own skills are the only `mdp:` resources it may embed). */
  readonly clientId: string;
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
  const content = contentOf(result.data, { contentType: options.contentType, maxBytes: options.maxContentBytes, clientId: options.clientId });
  if (content.kind === 'json') return callOutcome(result);
  if (content.kind === 'too_large') {
    return toolFailure({
      code: 'too_large',
      message: `The answer is ${content.bytes} bytes of content, over the ${content.maxBytes} bytes this server sends an agent in one result; nothing of it was sent. Ask the app for less (a smaller image, fewer blocks).`,
    });
  }
  // The blocks were checked field by field, but for their `_meta`, which is whatever the client sent.
  if (!content.blocks.every(blockSendable)) return toolFailure(UNSENDABLE_DATA_ERROR);
  const payload = { ok: true, data: result.data };
  return options.structured ? { content: content.blocks, structuredContent: payload } : { content: content.blocks };
}

/**
 * Whether `value` can be written as JSON. A client's data was parsed from JSON, but may nest deeper
 * than `JSON.stringify` goes: handed to the SDK, its transport would fail to write the answer, and
 * the agent would wait for it for good (over Streamable HTTP, with its POST held open).
 */
export function sendable(value: unknown): boolean {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

function blockSendable(block: ContentBlock): boolean {
  return sendable(block._meta) && (block.type !== 'resource' || sendable(block.resource._meta));
}
