/** Structured logging: one JSON line per event, level threshold, child fields. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LOG_LEVELS, Router, createLogger, isLogLevel, silentLogger, type LogLevel } from '../src/index.js';
import { connectClient, manualClock } from './helpers.js';

function capture(level?: LogLevel, fields?: Record<string, unknown>, clock?: { wallNow(): number }) {
  const lines: string[] = [];
  const logger = createLogger({ level, fields, clock, write: (line) => lines.push(line) });
  const records = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { logger, lines, records };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('createLogger', () => {
  it('writes one JSON line per event with time, level, event and fields', () => {
    const { logger, lines, records } = capture('info', undefined, manualClock(Date.parse('2024-05-06T07:08:09.010Z')));
    logger.info('client.registered', { clientId: 'alpha', paths: 3 });
    logger.warn('session.close_failed', { sessionId: 's' });

    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.endsWith('\n')).toBe(true);
      expect(line.indexOf('\n')).toBe(line.length - 1);
    }
    expect(records()).toEqual([
      { time: '2024-05-06T07:08:09.010Z', level: 'info', event: 'client.registered', clientId: 'alpha', paths: 3 },
      { time: '2024-05-06T07:08:09.010Z', level: 'warn', event: 'session.close_failed', sessionId: 's' },
    ]);
  });

  it('keeps a multi-line value on one line', () => {
    const { logger, lines } = capture('info');
    logger.info('x', { text: 'a\nb' });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.split('\n')).toHaveLength(2); // the content and the empty string after the final newline
  });

  it.each([
    ['silent', []],
    ['error', ['error']],
    ['warn', ['error', 'warn']],
    ['info', ['error', 'warn', 'info']],
    ['debug', ['error', 'warn', 'info', 'debug']],
  ] as const)('at level %s writes %j', (level, expected) => {
    const { logger, records } = capture(level);
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    expect(
      records()
        .map((r) => r.level)
        .sort(),
    ).toEqual([...expected].sort());
    expect(logger.level).toBe(level);
  });

  it('defaults to level info on stderr', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const logger = createLogger();
    expect(logger.level).toBe('info');
    logger.debug('hidden');
    logger.info('shown');
    expect(write).toHaveBeenCalledTimes(1);
    expect(JSON.parse(String(write.mock.calls[0]?.[0]))).toMatchObject({ level: 'info', event: 'shown' });
  });

  it('serializes an error field as name, message and stack', () => {
    const { logger, records } = capture('error');
    logger.error('boom', { error: new TypeError('bad thing') });
    const record = records()[0];
    expect(record?.error).toMatchObject({ name: 'TypeError', message: 'bad thing' });
    expect(typeof (record!.error as { stack?: unknown }).stack).toBe('string');
  });

  it('child loggers add fields and keep the level and the sink', () => {
    const { logger, records } = capture('warn', { service: 'mdp' });
    const child = logger.child({ component: 'router' }).child({ sessionId: 's1' });
    expect(child.level).toBe('warn');
    child.info('dropped');
    child.warn('kept', { extra: true });
    expect(records()).toEqual([expect.objectContaining({ level: 'warn', event: 'kept', service: 'mdp', component: 'router', sessionId: 's1', extra: true })]);
  });

  it('silentLogger writes nothing', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    silentLogger.error('nothing');
    silentLogger.child({ a: 1 }).error('nothing');
    expect(write).not.toHaveBeenCalled();
    expect(silentLogger.level).toBe('silent');
  });

  it('isLogLevel accepts exactly the levels', () => {
    expect(LOG_LEVELS).toEqual(['silent', 'error', 'warn', 'info', 'debug']);
    for (const level of LOG_LEVELS) expect(isLogLevel(level)).toBe(true);
    expect(isLogLevel('trace')).toBe(false);
    expect(isLogLevel('INFO')).toBe(false);
  });
});

describe('router logging', () => {
  it('logs through the given logger and respects its level', async () => {
    const clock = manualClock();
    const debug = capture('debug');
    const router = new Router({ clock, logger: debug.logger });
    connectClient(router, 'alpha');
    await clock.advanceSettled(90_000);
    await router.close();
    const events = debug.records().map((r) => r.event);
    expect(events).toEqual(expect.arrayContaining(['session.open', 'client.registered', 'session.expired', 'session.end']));
    expect(debug.records().find((r) => r.event === 'session.expired')).toMatchObject({ level: 'info', clientId: 'alpha' });

    const info = capture('info');
    const quiet = new Router({ clock, logger: info.logger });
    connectClient(quiet, 'alpha');
    await clock.advanceSettled(90_000);
    await quiet.close();
    expect(info.records().map((r) => r.event)).toEqual(['session.expired']);
  });

  it('logs a failing event listener as an error', async () => {
    const { logger, records } = capture('error');
    const router = new Router({ logger });
    router.onClientEvent(() => {
      throw new Error('listener bug');
    });
    connectClient(router, 'alpha');
    await router.close();
    expect(records()[0]).toMatchObject({ level: 'error', event: 'client_event.listener_failed', error: { message: 'listener bug' } });
  });
});
