/** Subscribers to one kind of event. A listener that throws is reported and never stops the others. */
export class Listeners<T> {
  private readonly set = new Set<(value: T) => void>();

  constructor(private readonly onError: (error: unknown) => void) {}

  /** Returns the unsubscribe. */
  add(listener: (value: T) => void): () => void {
    // A wrapper per subscription: the same function subscribed twice is unsubscribed one at a time.
    const entry = (value: T): void => listener(value);
    this.set.add(entry);
    return () => void this.set.delete(entry);
  }

  emit(value: T): void {
    for (const listener of [...this.set]) {
      try {
        listener(value);
      } catch (error) {
        this.onError(error);
      }
    }
  }

  get size(): number {
    return this.set.size;
  }

  clear(): void {
    this.set.clear();
  }
}
