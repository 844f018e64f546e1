import { stringifyServerMessage, type ServerToClientMessage } from '@mdp/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EXPIRE_BATCH } from '@mdp/core';
import { Mailbox, pollDeadlines, type PollConnection } from '../src/mailbox.js';

const ping = (timestamp: number): ServerToClientMessage => ({ type: 'ping', timestamp });
const call = (requestId: string): ServerToClientMessage => ({ type: 'callClient', requestId, clientId: 'c1', method: 'GET', path: '/s' });

/** A message as the mailbox queues it: with its JSON text. */
const queued = (message: ServerToClientMessage) => ({ message, text: stringifyServerMessage(message) });

/** A poll connection that goes away when `controller` aborts. */
function abortable(controller: AbortController): PollConnection {
  return {
    isLive: () => !controller.signal.aborted,
    onGone(listener) {
      controller.signal.addEventListener('abort', listener, { once: true });
      return () => controller.signal.removeEventListener('abort', listener);
    },
  };
}

/** Run the two event-loop turns (setImmediate twice) after which a waiting take gets its message. */
async function handOver(): Promise<void> {
  await vi.advanceTimersToNextTimerAsync();
  await vi.advanceTimersToNextTimerAsync();
}

describe('Mailbox', () => {
  let mailbox: Mailbox;

  beforeEach(() => {
    vi.useFakeTimers();
    mailbox = new Mailbox();
  });

  afterEach(() => {
    mailbox.close();
    expect(vi.getTimerCount()).toBe(0);
    vi.useRealTimers();
  });

  it('hands out queued messages in order', async () => {
    mailbox.push(call('a'));
    mailbox.push(ping(1));
    mailbox.push(call('b'));
    expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(call('a')));
    expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(ping(1)));
    expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(call('b')));
    expect(await mailbox.take({ waitMs: 0 })).toEqual({ reason: 'timeout' });
  });

  it('keeps only the newest ping', async () => {
    mailbox.push(ping(1));
    mailbox.push(call('a'));
    mailbox.push(ping(2));
    expect(mailbox.size).toBe(2);
    expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(call('a')));
    expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(ping(2)));
  });

  describe('stale messages', () => {
    const ended = new Set<string>();
    const isStale = (message: ServerToClientMessage): boolean => message.type === 'callClient' && ended.has(message.requestId);
    beforeEach(() => {
      ended.clear();
      mailbox = new Mailbox(isStale);
    });

    it('are skipped when polled, queued or waited for', async () => {
      mailbox.push(call('a'));
      mailbox.push(call('b'));
      mailbox.push(call('c'));
      ended.add('a').add('b');
      expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(call('c')));
      const taken = mailbox.take({ waitMs: 1000 });
      mailbox.push(call('d'));
      ended.add('d');
      await handOver();
      expect(mailbox.hasWaiter).toBe(true);
      mailbox.push(call('e'));
      await handOver();
      expect(await taken).toEqual(queued(call('e')));
    });

    it('are dropped as the queue grows, so a session nobody polls keeps only live calls', () => {
      for (let i = 0; i < 10_000; i++) {
        mailbox.push(call(`r${i}`));
        if (i >= 5) ended.add(`r${i - 5}`); // each call ends a little after it was queued
      }
      expect(mailbox.size).toBeLessThan(128);
      ended.clear();
      expect(mailbox.size).toBeGreaterThanOrEqual(5);
    });

    it('are not counted among the queued calls; nor are other messages', async () => {
      expect(mailbox.queuedCalls()).toBe(0);
      mailbox.push(call('a'));
      mailbox.push(ping(1));
      mailbox.push(call('b'));
      mailbox.push(call('c'));
      expect(mailbox.queuedCalls()).toBe(3);
      ended.add('b');
      expect(mailbox.queuedCalls()).toBe(2);
      expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(call('a')));
      expect(mailbox.queuedCalls()).toBe(1);
      mailbox.putBack(queued(call('a')));
      expect(mailbox.queuedCalls()).toBe(2);
    });
  });

  it('answers a waiting take after a push, once a full event-loop turn has passed', async () => {
    const taken = mailbox.take({ waitMs: 1000 });
    mailbox.push(ping(1));
    expect(mailbox.hasWaiter).toBe(true);
    await vi.advanceTimersToNextTimerAsync();
    expect(mailbox.hasWaiter).toBe(true);
    await vi.advanceTimersToNextTimerAsync();
    expect(mailbox.hasWaiter).toBe(false);
    expect(await taken).toEqual(queued(ping(1)));
    expect(mailbox.size).toBe(0);
  });

  it('times out after waitMs', async () => {
    const taken = mailbox.take({ waitMs: 1000 });
    await vi.advanceTimersByTimeAsync(999);
    expect(mailbox.hasWaiter).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(await taken).toEqual({ reason: 'timeout' });
  });

  it('lets a newer take replace the waiting one', async () => {
    const first = mailbox.take({ waitMs: 1000 });
    const second = mailbox.take({ waitMs: 1000 });
    expect(await first).toEqual({ reason: 'replaced' });
    mailbox.push(ping(1));
    await handOver();
    expect(await second).toEqual(queued(ping(1)));
  });

  it('takes nothing for an aborted waiter', async () => {
    const controller = new AbortController();
    const taken = mailbox.take({ waitMs: 1000, connection: abortable(controller) });
    controller.abort();
    expect(await taken).toEqual({ reason: 'abandoned' });
    mailbox.push(ping(1));
    expect(mailbox.size).toBe(1);
    expect(await mailbox.take({ waitMs: 0, connection: abortable(controller) })).toEqual({ reason: 'abandoned' });
    expect(mailbox.size).toBe(1);
  });

  it('keeps the message when the waiter turns out dead at hand-over', async () => {
    let live = true;
    const taken = mailbox.take({ waitMs: 1000, connection: { isLive: () => live, onGone: () => () => {} } });
    mailbox.push(ping(1));
    live = false;
    await handOver();
    expect(await taken).toEqual({ reason: 'abandoned' });
    expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(ping(1)));
  });

  it('puts a message back at the head and hands it to a waiting take', async () => {
    mailbox.push(ping(2));
    mailbox.putBack(queued(ping(1)));
    expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(ping(1)));
    expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(ping(2)));
    const taken = mailbox.take({ waitMs: 1000 });
    mailbox.putBack(queued(ping(3)));
    await handOver();
    expect(await taken).toEqual(queued(ping(3)));
  });

  it('answers polls that time out together in batches, one timer for them all', async () => {
    const waits = pollDeadlines();
    const mailboxes = Array.from({ length: EXPIRE_BATCH * 2 + 5 }, () => new Mailbox(undefined, undefined, undefined, waits));
    let answered = 0;
    for (const box of mailboxes) void box.take({ waitMs: 1000 }).then(() => answered++);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(answered).toBe(EXPIRE_BATCH);
    await vi.advanceTimersByTimeAsync(1);
    expect(answered).toBe(EXPIRE_BATCH * 2);
    await vi.advanceTimersByTimeAsync(1);
    expect(answered).toBe(mailboxes.length);
    for (const box of mailboxes) box.close();
    waits.clear();
  });

  describe('bounds', () => {
    it('refuse a call past the message bound, after dropping ended calls, and keep the mailbox', async () => {
      const ended = new Set<string>();
      const overflows: string[] = [];
      mailbox = new Mailbox(
        (m) => m.type === 'callClient' && ended.has(m.requestId),
        { maxMessages: 2, maxBytes: 1_000_000 },
        (reason) => overflows.push(reason),
      );
      expect(mailbox.push(call('a'))).toBeUndefined();
      expect(mailbox.push(call('b'))).toBeUndefined();
      ended.add('a');
      // 'a' ended: dropping it makes room for 'c'.
      expect(mailbox.push(call('c'))).toBeUndefined();
      expect(mailbox.size).toBe(2);
      expect(mailbox.push(call('d'))).toMatch(
        /^HTTP loop queue full \(2 messages, \d+ bytes waiting; at most 2 messages, 1000000 bytes\): the client is behind; try again later$/,
      );
      expect(mailbox.size).toBe(2);
      expect(overflows).toEqual([]);
      // The client polls: it takes what was queued, and there is room again.
      expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(call('b')));
      expect(mailbox.push(call('e'))).toBeUndefined();
      expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(call('c')));
      expect(await mailbox.take({ waitMs: 0 })).toEqual(queued(call('e')));
    });

    it('refuse a call past the byte bound', () => {
      const size = stringifyServerMessage(call('a')).length;
      mailbox = new Mailbox(undefined, { maxMessages: 100, maxBytes: size * 2 });
      mailbox.push(call('a'));
      mailbox.push(call('b'));
      expect(mailbox.byteSize).toBe(size * 2);
      expect(mailbox.push(call('c'))).toMatch(/^HTTP loop queue full/);
      expect(mailbox.byteSize).toBe(size * 2);
    });

    it('queue other messages up to twice the bounds, then end the mailbox', async () => {
      const overflows: string[] = [];
      mailbox = new Mailbox(undefined, { maxMessages: 2, maxBytes: 1_000_000 }, (reason) => overflows.push(reason));
      mailbox.push(call('a'));
      mailbox.push(call('b'));
      mailbox.push({ type: 'pong', timestamp: 1 });
      mailbox.push({ type: 'pong', timestamp: 2 });
      expect(mailbox.size).toBe(4);
      expect(overflows).toEqual([]);
      mailbox.push({ type: 'pong', timestamp: 3 });
      expect(overflows).toEqual([
        expect.stringMatching(
          /^HTTP loop queue over its limit \(4 messages, \d+ bytes waiting; at most 2 messages, 1000000 bytes\): the client is not polling$/,
        ),
      ]);
      // Closed: it answers nothing more and takes nothing more.
      expect(mailbox.size).toBe(0);
      mailbox.push(call('f'));
      expect(overflows).toHaveLength(1);
      expect(await mailbox.take({ waitMs: 0 })).toEqual({ reason: 'closed' });
    });

    it('looks for ended calls once per PRUNE_FROM refusals, not on every refused call', () => {
      let checks = 0;
      mailbox = new Mailbox(
        () => {
          checks++;
          return false;
        },
        { maxMessages: 10, maxBytes: 1_000_000 },
      );
      for (let i = 0; i < 10; i++) mailbox.push(call(`k${i}`));
      checks = 0;
      for (let i = 0; i < 64; i++) expect(mailbox.push(call(`r${i}`))).toMatch(/queue full/);
      expect(checks).toBe(10);
      mailbox.push(call('r64'));
      expect(checks).toBe(20);
    });

    it('count bytes down as messages are taken and up as they are put back', async () => {
      mailbox = new Mailbox(undefined, { maxMessages: 10, maxBytes: 10_000 });
      mailbox.push(ping(1));
      const size = mailbox.byteSize;
      const taken = await mailbox.take({ waitMs: 0 });
      expect(mailbox.byteSize).toBe(0);
      if (taken.message === undefined) throw new Error('expected a message');
      mailbox.putBack(taken);
      expect(mailbox.byteSize).toBe(size);
    });
  });

  it('answers the waiter and drops everything when closed', async () => {
    const taken = mailbox.take({ waitMs: 1000 });
    mailbox.push(ping(1));
    mailbox.close();
    mailbox.close();
    expect(await taken).toEqual({ reason: 'closed' });
    mailbox.push(ping(2));
    mailbox.putBack(queued(ping(3)));
    expect(mailbox.size).toBe(0);
    expect(await mailbox.take({ waitMs: 1000 })).toEqual({ reason: 'closed' });
  });
});
