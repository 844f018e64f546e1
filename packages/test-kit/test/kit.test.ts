/** The kit's own parts that tests rely on to be exact: the manual clock, the waiters, the session watch, the fakes' lifecycle. */
import { connect, createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Router } from '@mdp/core';
import {
  Changes,
  Inbox,
  closedPort,
  descriptor,
  fakeClient,
  freePorts,
  listen,
  manualClock,
  recordingLogger,
  skill,
  stopAll,
  track,
  until,
  watchSessions,
} from '../src/index.js';

describe('manualClock', () => {
  it('runs due timers in time order (then in the order they were set), each at its own time, and none early', () => {
    const clock = manualClock();
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => seen.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => seen.push(`c@${clock.now()}`), 20);
    const cleared = clock.setTimeout(() => seen.push('never'), 5);
    clock.clearTimeout(cleared);
    clock.advance(9);
    expect(seen).toEqual([]);
    clock.advance(11);
    expect(seen).toEqual(['a@10', 'b@20', 'c@20']);
    expect(clock.pending()).toBe(0);
    expect(clock.wallNow() - clock.now()).toBe(1_700_000_000_000);
  });

  it('runs a timer set by a timer within the same advance when it falls due', () => {
    const clock = manualClock(0);
    const seen: number[] = [];
    clock.setTimeout(() => clock.setTimeout(() => seen.push(clock.now()), 5), 5);
    clock.advance(10);
    expect(seen).toEqual([10]);
  });

  it('advanceSettled lets promise callbacks run between timers', async () => {
    const clock = manualClock();
    const seen: string[] = [];
    clock.setTimeout(() => void Promise.resolve().then(() => clock.setTimeout(() => seen.push('second'), 1)), 1);
    await clock.advanceSettled(2);
    expect(seen).toEqual(['second']);
  });
});

describe('Inbox', () => {
  it('next() sees only what arrives after it; seen() also what came before; count() waits for enough', async () => {
    const inbox = new Inbox<number>();
    inbox.push(1);
    const next = inbox.next();
    const even = inbox.next((n) => n % 2 === 0);
    inbox.push(3);
    inbox.push(4);
    expect(await next).toBe(3);
    expect(await even).toBe(4);
    expect(await inbox.seen((n) => n === 1)).toBe(1);
    const three = inbox.count(3, (n) => n > 2);
    inbox.push(5);
    expect(await three).toEqual([3, 4, 5]);
  });
});

describe('until', () => {
  it('checks at once and on each change, and resolves with the first value', async () => {
    const changes = new Changes();
    let value = 0;
    const done = until(changes.subscribe, () => value >= 2 && `reached ${value}`);
    value = 1;
    changes.emit();
    value = 2;
    changes.emit();
    expect(await done).toBe('reached 2');
    expect(await until([], () => 'now')).toBe('now');
  });

  it('rejects with what the check throws, and names what it waited for past its bound', async () => {
    await expect(until([], () => JSON.parse('{'))).rejects.toThrow(SyntaxError);
    await expect(until(new Changes().subscribe, () => false, { timeoutMs: 1, what: 'nothing' })).rejects.toThrow('timed out after 1 ms waiting for nothing');
  });
});

describe('recordingLogger', () => {
  it('keeps every line and waits on events with fields', async () => {
    const { logger, records, next, events } = recordingLogger({ fields: { node: 'n1' } });
    const second = next('b', { n: 2 });
    logger.debug('a');
    logger.info('b', { n: 1 });
    logger.info('b', { n: 2 });
    expect(await second).toMatchObject({ event: 'b', n: 2, node: 'n1', level: 'info' });
    expect(events()).toEqual(['a', 'b', 'b']);
    expect(records).toHaveLength(3);
  });
});

describe('watchSessions and fakeClient', () => {
  let router: Router;
  afterEach(() => router.close());

  it('sees the sessions open and end, and a fake client answers at once or later', async () => {
    router = new Router();
    const sessions = watchSessions(router);
    const now = fakeClient(router, descriptor('now', [skill('/s/skill.md')]));
    const later = fakeClient(router, descriptor('later', [skill('/s/skill.md')]), { later: true, reply: () => ({ ok: true, data: 'late' }) });
    expect(sessions.opened).toEqual([now.session, later.session]);
    expect(sessions.session(now.session.id)).toBe(now.session);
    expect(await router.invoke('now', 'GET', '/s/skill.md')).toEqual({ ok: true, data: 'content of /s/skill.md' });
    expect(await router.invoke('later', 'GET', '/s/skill.md')).toEqual({ ok: true, data: 'late' });
    expect([now.calls.length, later.calls.length]).toEqual([1, 1]);
    const ended = sessions.ended(later.session);
    later.disconnect('gone');
    expect(await ended).toBe('gone');
    expect(await sessions.ended(later.session)).toBe('gone');
    expect(() => sessions.only).toThrow('expected one session, have 2');
  });
});

describe('track and stopAll', () => {
  it('stops what was tracked, newest first, and reports what failed after stopping the rest', async () => {
    const stopped: string[] = [];
    track({ close: () => void stopped.push('first') });
    track({
      close: () => {
        throw new Error('broken');
      },
    });
    track({ close: async () => void stopped.push('third') });
    await expect(stopAll()).rejects.toThrow('1 of what the test started failed to stop');
    expect(stopped).toEqual(['third', 'first']);
    await stopAll();
  });
});

describe('ports', () => {
  it('freePorts gives consecutive ports that can be bound; closedPort one that refuses', async () => {
    const ports = await freePorts(3);
    expect(ports).toEqual([ports[0], ports[0]! + 1, ports[0]! + 2]);
    const servers = ports.map(() => createServer());
    try {
      for (const [i, server] of servers.entries()) expect(await listen(server, ports[i])).toBe(ports[i]);
    } finally {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    }
    const port = await closedPort();
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? ''));
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});
