/**
 * Malformed params as MCP asks: the SDK parses every request with its method's schema before the
 * handler runs (its own `tasks/*` handlers included), and a mismatch escapes as a schema error that
 * it answers with `-32603` and the raw issue list. Here each handler of a session's server is
 * wrapped so that such an error is `-32602` naming the method and the field.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

type Handler = (request: { method: string; params?: unknown }, extra: unknown) => unknown;

interface SchemaIssue {
  readonly path?: ReadonlyArray<PropertyKey>;
  readonly message?: string;
}

/** The SDK's schema errors: zod's (`ZodError`, or `$ZodError` from zod/v4 core), with `issues`. */
const SCHEMA_ERRORS: ReadonlySet<string> = new Set(['ZodError', '$ZodError']);

/**
 * The issues of a schema error about the request's params, or undefined for any other error (one
 * a handler met parsing something else, e.g. an answer, stays what it was).
 */
function issuesOf(error: unknown): readonly SchemaIssue[] | undefined {
  if (!(error instanceof Error) || !SCHEMA_ERRORS.has(error.name)) return undefined;
  const issues = (error as { issues?: unknown }).issues;
  if (!Array.isArray(issues) || issues.length === 0) return undefined;
  return (issues as SchemaIssue[]).every((issue) => issue.path?.[0] === 'params') ? issues : undefined;
}

/** `-32602` for the first issue, its path without the leading `params`. */
export function invalidParamsError(method: string, issues: readonly SchemaIssue[]): McpError {
  const issue = issues[0];
  const field = (issue?.path ?? []).slice(1).map(String).join('.') || 'params';
  return new McpError(ErrorCode.InvalidParams, `Invalid ${method} params: ${field}: ${issue?.message ?? 'malformed'}`);
}

/**
 * Wrap every request handler `server` has now (call it once all are set): a schema error becomes
 * {@link invalidParamsError}. A server without the handler table (another SDK) is left as it is.
 */
export function answerMalformedParams(server: Server): void {
  const handlers = (server as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (!(handlers instanceof Map)) return;
  for (const [method, handler] of [...(handlers as Map<string, Handler>)]) {
    handlers.set(method, async (request: Parameters<Handler>[0], extra: unknown) => {
      try {
        return await handler(request, extra);
      } catch (error) {
        const issues = issuesOf(error);
        throw issues ? invalidParamsError(method, issues) : error;
      }
    });
  }
}
