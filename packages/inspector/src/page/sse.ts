/**
 * Server-sent events read from a fetch body (EventSource cannot send an Authorization header).
 * `SseParser` is pure: text in, complete events out; a chunk may end anywhere in an event.
 */

export interface SseEvent {
  readonly event: string;
  readonly data: string;
}

export class SseParser {
  private buffer = '';

  /** Feed decoded text; returns the events it completed. Comment lines (`:`) are skipped. */
  push(text: string): SseEvent[] {
    this.buffer += text.replace(/\r\n?/g, '\n');
    const events: SseEvent[] = [];
    let end = this.buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0) events.push({ event, data: data.join('\n') });
      end = this.buffer.indexOf('\n\n');
    }
    return events;
  }
}
