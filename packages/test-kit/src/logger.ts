/** A logger whose lines a test reads and waits on, so that it waits on what the code logs, never sleeps. */
import { createLogger, type LogFields, type Logger, type LogLevel } from '@mdp/core';
import { Inbox } from './waiters.js';

/** One JSON log line, parsed. */
export type LogRecord = Record<string, unknown> & { readonly event: string; readonly level: string };

export interface RecordingLoggerOptions {
  /** Default `debug`: everything. */
  readonly level?: LogLevel;
  /** Fields on every line (a node id, a component). */
  readonly fields?: LogFields;
}

export interface RecordingLogger {
  readonly logger: Logger;
  /** Every line so far, in order. */
  readonly records: LogRecord[];
  /** Every line so far, to wait on. */
  readonly lines: Inbox<LogRecord>;
  /** Resolves with the next line of `event` (whose fields include `fields`) logged after this call. */
  next(event: string, fields?: Record<string, unknown>): Promise<LogRecord>;
  /** The first line of `event` (with `fields`) so far, or else the next one. */
  seen(event: string, fields?: Record<string, unknown>): Promise<LogRecord>;
  /** The events logged so far, in order. */
  events(): string[];
}

const matching =
  (event: string, fields: Record<string, unknown>) =>
  (record: LogRecord): boolean =>
    record.event === event && Object.entries(fields).every(([name, value]) => record[name] === value);

/**
 * A real `@mdp/core` logger that keeps every line it writes. Set `MDP_TEST_LOG=all` (or any other
 * value: everything but debug) to also see the lines on stderr while a test runs.
 */
export function recordingLogger(options: RecordingLoggerOptions = {}): RecordingLogger {
  const lines = new Inbox<LogRecord>();
  const print = process.env.MDP_TEST_LOG;
  const logger = createLogger({
    level: options.level ?? 'debug',
    fields: options.fields ?? {},
    write: (line) => {
      const record = JSON.parse(line) as LogRecord;
      if (print && (print === 'all' || record.level !== 'debug')) process.stderr.write(line);
      lines.push(record);
    },
  });
  return {
    logger,
    records: lines.items,
    lines,
    next: (event, fields = {}) => lines.next(matching(event, fields)),
    seen: (event, fields = {}) => lines.seen(matching(event, fields)),
    events: () => lines.items.map((record) => record.event),
  };
}
