/** Abort signals for bounded pieces of work under a long-lived one. */
import { setMaxListeners } from 'node:events';

/**
 * A controller for one bounded piece of work that many listeners watch (every probe in flight adds
 * one, so there is no listener limit): it aborts when `parent` does, and `release()` detaches it
 * from `parent` once the work is over. Not `AbortSignal.any`: node 20 keeps every signal derived
 * that way for as long as its parent lives.
 */
export function childSignal(parent: AbortSignal): { readonly controller: AbortController; release(): void } {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  const stop = (): void => controller.abort();
  if (parent.aborted) stop();
  else parent.addEventListener('abort', stop, { once: true });
  return { controller, release: () => parent.removeEventListener('abort', stop) };
}
