/** How the test clients answer a `callClient`: a handler's value, a failure, or no answer at all. */
import type { CallClientMessage } from '@mdp/protocol';

/** What a test client's handler returns: the data, a {@link ClientFailure}, or {@link NO_ANSWER}. */
export type CallHandler = (call: CallClientMessage) => unknown | Promise<unknown>;

/** Returned by a handler: the client never answers the call. */
export const NO_ANSWER = Symbol('no answer');

/** Returned by a handler: the client answers `ok: false` with this error. */
export class ClientFailure {
  constructor(readonly error: { code: string; message: string; details?: Record<string, unknown> }) {}
}

/** The `callClientResult` for `call` from `handler` (a throw becomes `handler_error`), or undefined for no answer. */
export async function resultOf(call: CallClientMessage, handler: CallHandler): Promise<Record<string, unknown> | undefined> {
  let result: unknown;
  try {
    result = await handler(call);
  } catch (error) {
    return { type: 'callClientResult', requestId: call.requestId, ok: false, error: { code: 'handler_error', message: String(error) } };
  }
  if (result === NO_ANSWER) return undefined;
  if (result instanceof ClientFailure) return { type: 'callClientResult', requestId: call.requestId, ok: false, error: result.error };
  return { type: 'callClientResult', requestId: call.requestId, ok: true, data: result };
}
