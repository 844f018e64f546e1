/**
 * Whether a poll response reached its connection. With @hono/node-server, `c.env.outgoing` is the
 * node `ServerResponse`: a message counts as delivered once the response has finished (all of it
 * handed to the OS); a response that closes before that gives its message back to the queue.
 * On other runtimes (and `app.request` in tests) there is no such object and a returned response
 * counts as delivered.
 */

/** The parts of a node `ServerResponse` this module reads. */
export interface NodeResponseLike {
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  readonly socket?: { readonly destroyed: boolean; readonly writable: boolean } | null;
  once(event: 'finish' | 'close', listener: () => void): unknown;
  off(event: 'finish' | 'close', listener: () => void): unknown;
}

/** The node response of a request, when the runtime passes one as `env.outgoing`. */
export function nodeResponseOf(env: unknown): NodeResponseLike | undefined {
  if (typeof env !== 'object' || env === null) return undefined;
  const outgoing = (env as { outgoing?: unknown }).outgoing;
  if (typeof outgoing !== 'object' || outgoing === null) return undefined;
  const candidate = outgoing as Partial<NodeResponseLike>;
  return typeof candidate.once === 'function' && typeof candidate.off === 'function' && typeof candidate.destroyed === 'boolean'
    ? (outgoing as NodeResponseLike)
    : undefined;
}

/** False once the response or its socket is known to be gone (closed, ended, peer hung up). */
export function isResponseLive(response: NodeResponseLike): boolean {
  if (response.destroyed || response.writableEnded) return false;
  const socket = response.socket;
  return !socket || (!socket.destroyed && socket.writable);
}

/** Call `onLost` when the response closes before it finished writing. */
export function watchDelivery(response: NodeResponseLike, onLost: () => void): void {
  const onFinish = (): void => {
    response.off('close', onClose);
  };
  const onClose = (): void => {
    response.off('finish', onFinish);
    if (!response.writableFinished) onLost();
  };
  response.once('finish', onFinish);
  response.once('close', onClose);
}
