/**
 * Tool results, one shape for every tool (SPEC §13): the payload as `structuredContent` and the
 * same JSON as text; a failure is `{ ok: false, error }` with `isError: true`, never a protocol
 * error, so that the agent reads what went wrong and can act on it.
 */
import type { CallResult, SerializedError } from '@mdp/protocol';

export interface ToolResult {
  readonly [key: string]: unknown;
  readonly content: Array<{ readonly type: 'text'; readonly text: string }>;
  readonly structuredContent: Record<string, unknown>;
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
