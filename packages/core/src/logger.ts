/** Structured logging: one JSON line per event, quiet by default. */
import { systemClock, type Clock } from './clock.js';

export const LOG_LEVELS = ['silent', 'error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFields = Record<string, unknown>;

export interface Logger {
  error(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  debug(event: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
  readonly level: LogLevel;
}

const RANK: Record<LogLevel, number> = { silent: 0, error: 1, warn: 2, info: 3, debug: 4 };

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; default process.stderr. */
  write?: (line: string) => void;
  fields?: LogFields;
  /** Where each line's `time` comes from (its wall clock); default the system's. */
  clock?: Pick<Clock, 'wallNow'>;
}

function errorFields(value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const base = options.fields ?? {};
  const clock = options.clock ?? systemClock;
  const threshold = RANK[level];
  const emit = (lvl: Exclude<LogLevel, 'silent'>, event: string, fields?: LogFields): void => {
    if (RANK[lvl] > threshold) return;
    const record: LogFields = { time: new Date(clock.wallNow()).toISOString(), level: lvl, event, ...base };
    if (fields) for (const [k, v] of Object.entries(fields)) record[k] = k === 'error' ? errorFields(v) : v;
    write(`${JSON.stringify(record)}\n`);
  };
  return {
    level,
    error: (e, f) => emit('error', e, f),
    warn: (e, f) => emit('warn', e, f),
    info: (e, f) => emit('info', e, f),
    debug: (e, f) => emit('debug', e, f),
    child: (fields) => createLogger({ level, write, clock, fields: { ...base, ...fields } }),
  };
}

export const silentLogger: Logger = createLogger({ level: 'silent' });
