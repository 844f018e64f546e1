/**
 * What a test started, stopped after it: every client the kit connects is tracked here, and a
 * harness tracks its servers the same way, so that one `stopAll()` in `afterEach` stops them all,
 * the newest first (clients before the server they talk to).
 */

export interface Stoppable {
  close(): unknown;
}

const started: Stoppable[] = [];

/** Stop `item` at the next `stopAll()`; returns it. */
export function track<T extends Stoppable>(item: T): T {
  started.push(item);
  return item;
}

/** Stop everything tracked, newest first; what one close throws does not keep the others running. */
export async function stopAll(): Promise<void> {
  const errors: unknown[] = [];
  for (const item of started.splice(0).reverse()) {
    try {
      await item.close();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length > 0) throw new AggregateError(errors, `${errors.length} of what the test started failed to stop`);
}
