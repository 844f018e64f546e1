import type { ErrorCode, SerializedError } from '@mdp/protocol';

/**
 * The one error type of the server. `code` is stable and is what edges map to the wire: only the
 * HTTP edge turns it into a status, only the websocket edge into a close code.
 */
export class MdpError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options?: { details?: Record<string, unknown>; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MdpError';
    this.code = code;
    this.details = options?.details;
  }

  toJSON(): SerializedError {
    return serializeError(this);
  }
}

/** Serialize any thrown value. Unknown errors never leak their message. */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof MdpError) {
    return error.details ? { code: error.code, message: error.message, details: error.details } : { code: error.code, message: error.message };
  }
  return { code: 'handler_error', message: 'Internal error' };
}
