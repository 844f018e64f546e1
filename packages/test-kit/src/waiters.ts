/**
 * Waiting on events, never on time: an inbox of things that happened that a test can wait on, and
 * `until`, which checks a condition each time something it watches reports a change.
 */

/**
 * What arrived (messages, log lines, calls), kept in order; `next(match)` resolves with the next one
 * that matches, arriving after the call.
 */
export class Inbox<T> {
  readonly items: T[] = [];
  private readonly waiters: Array<{ match: (item: T) => boolean; resolve: (item: T) => void }> = [];
  private readonly listeners = new Set<(item: T) => void>();

  push(item: T): void {
    this.items.push(item);
    for (const waiter of [...this.waiters]) {
      if (!waiter.match(item)) continue;
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve(item);
    }
    for (const listener of [...this.listeners]) listener(item);
  }

  /** Resolves with the next item matching `match` that arrives after this call. */
  next(match: (item: T) => boolean = () => true): Promise<T> {
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  /** The first item so far that matches, or else the next one to arrive. */
  seen(match: (item: T) => boolean = () => true): Promise<T> {
    const found = this.items.find(match);
    return found === undefined ? this.next(match) : Promise.resolve(found);
  }

  /** Resolves once `count` items match in all (counting those already here). */
  async count(count: number, match: (item: T) => boolean = () => true): Promise<T[]> {
    await until(
      (change) => this.subscribe(change),
      () => this.items.filter(match).length >= count || undefined,
    );
    return this.items.filter(match);
  }

  /** Hear every item as it arrives; returns the unsubscribe. */
  subscribe(listener: (item: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** Subscribes a callback to some source of change events; returns the unsubscribe. */
export type Subscribe = (onChange: () => void) => () => void;

export interface UntilOptions {
  /** Give up after this long, ms, rejecting with an error that names `what`: a bound, not a wait. Default none (the test's own time-out applies). */
  readonly timeoutMs?: number;
  /** What it waits for, in the time-out's error (a function: computed then, with what is known by then). */
  readonly what?: string | (() => string);
}

/**
 * Resolves with the first value of `check()` that is neither `undefined` nor `false`, checked now
 * and after every change any of `sources` reports; rejects when `check` throws or past `timeoutMs`.
 */
export function until<T>(sources: Subscribe | readonly Subscribe[], check: () => T | undefined | false, options: UntilOptions = {}): Promise<T> {
  const subscribes = typeof sources === 'function' ? [sources] : sources;
  return new Promise((resolve, reject) => {
    const unsubscribes: Array<() => void> = [];
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (error: Error | undefined, value?: T): void => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      for (const unsubscribe of unsubscribes) unsubscribe();
      if (error) reject(error);
      else resolve(value as T);
    };
    const test = (): void => {
      if (done) return;
      try {
        const value = check();
        if (value !== undefined && value !== false) finish(undefined, value);
      } catch (error) {
        finish(error as Error);
      }
    };
    for (const subscribe of subscribes) unsubscribes.push(subscribe(test));
    if (options.timeoutMs !== undefined) {
      const what = (): string => (typeof options.what === 'function' ? options.what() : (options.what ?? 'a condition'));
      timer = setTimeout(() => finish(new Error(`timed out after ${options.timeoutMs} ms waiting for ${what()}`)), options.timeoutMs);
    }
    test();
  });
}

/** A source of change events that a test fires by hand (a fake's own "something happened"). */
export class Changes {
  private readonly listeners = new Set<() => void>();

  readonly subscribe: Subscribe = (listener) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  emit(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
