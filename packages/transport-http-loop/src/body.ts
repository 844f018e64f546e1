/** Reading request bodies under a byte limit, and their JSON. */

export type BodyResult =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly status: 400 | 413; readonly error: string };

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Read a request body as UTF-8 text, refusing more than `maxBytes`: first by the declared
 * Content-Length (nothing is read), then by counting the bytes actually received, since a
 * chunked body declares no length and a declared one may lie.
 */
export async function readBodyText(request: Request, maxBytes: number): Promise<BodyResult> {
  const tooLarge = { ok: false, status: 413, error: `Request body exceeds ${maxBytes} bytes` } as const;
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) return tooLarge;
  if (request.body === null) return { ok: true, text: '' };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return tooLarge;
      }
      chunks.push(value);
    }
  } catch {
    return { ok: false, status: 400, error: 'Request body could not be read' };
  }
  try {
    return { ok: true, text: decoder.decode(Buffer.concat(chunks)) };
  } catch {
    return { ok: false, status: 400, error: 'Invalid JSON: body is not UTF-8' };
  }
}

export type JsonObjectResult =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly error: string };

/** Parse a body that must be a JSON object; an empty body counts as `{}` when `emptyIsObject`. */
export function parseJsonObject(text: string, emptyIsObject: boolean): JsonObjectResult {
  if (text.trim() === '') {
    return emptyIsObject ? { ok: true, value: {} } : { ok: false, error: 'Invalid JSON: body is empty' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `Invalid JSON: ${(error as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: 'Body must be a JSON object' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}
