/** Reading a request body straight from a node `IncomingMessage`, under a byte limit. */
import type { IncomingMessage } from 'node:http';
import { BODY_UNREADABLE, bodyTooLarge, decodeBody, type BodyResult } from './body.js';

const EMPTY = Buffer.alloc(0);

/**
 * Read `req`'s body as UTF-8 text, refusing more than `maxBytes`: first by the declared
 * Content-Length (nothing is read), then by counting the bytes received. On overflow nothing more
 * is kept: what still arrives is discarded (so the client, still sending, is not reset before it
 * reads the answer) until node closes the connection, which it does once the caller's 413 with
 * `Connection: close` is written. The rest of an oversized body is never read.
 */
export function readNodeBody(req: IncomingMessage, maxBytes: number): Promise<BodyResult> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.resolve(bodyTooLarge(maxBytes));
  // Already read by someone else, or the client is gone: no 'end' will come.
  if (req.readableEnded || req.destroyed) return Promise.resolve(BODY_UNREADABLE);
  return new Promise<BodyResult>((resolve) => {
    let first: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let total = 0;
    let settled = false;
    const settle = (result: BodyResult): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      // The 'error' listener stays: a client that aborts later must not make node throw.
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total > maxBytes) {
        // Removing the 'data' listener leaves the stream flowing: later chunks are dropped.
        settle(bodyTooLarge(maxBytes));
      } else if (first === undefined) {
        first = chunk;
      } else {
        (chunks ??= [first]).push(chunk);
      }
    };
    // Most bodies arrive in one chunk: decode it as is, without a copy.
    const onEnd = (): void => settle(decodeBody(chunks ? Buffer.concat(chunks, total) : (first ?? EMPTY)));
    const onError = (): void => settle(BODY_UNREADABLE);
    // 'close' before 'end': the client went away in the middle of its body.
    const onClose = (): void => settle(BODY_UNREADABLE);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
