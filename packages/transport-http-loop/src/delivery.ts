/**
 * Whether a poll response reached its connection. With @hono/node-server, `c.env.outgoing` is the
 * node `ServerResponse` (and the node adapter has it anyway): a message counts as delivered once
 * the response has finished (all of it handed to the OS) on a healthy socket; a response that
 * closes before that gives its message back to the queue.
 * On other runtimes (and `app.request` in tests) there is no such object and a returned response
 * counts as delivered.
 */

/** The parts of a node `ServerResponse` this module reads. */
export interface NodeResponseLike {
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  readonly socket?: { readonly destroyed: boolean; readonly writable: boolean; readonly errored?: unknown } | null;
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
  // Read now: node detaches the socket from the response before other 'finish' listeners run.
  const socket = response.socket;
  const onFinish = (): void => {
    response.off('close', onClose);
    // Node 20 also emits 'finish' when the socket fails under a pending write (the peer reset
    // the connection): the write "completed" with an error and the rest never left.
    if (socket && (socket.destroyed || (socket.errored ?? null) !== null)) onLost();
  };
  const onClose = (): void => {
    response.off('finish', onFinish);
    if (!response.writableFinished) onLost();
  };
  response.once('finish', onFinish);
  response.once('close', onClose);
}
