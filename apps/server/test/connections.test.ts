/** The connection tracker both the stall sweep and shutdown read, with the time passed in. */
import { describe, expect, it } from 'vitest';
import { ConnectionTracker, type TrackedSocket } from '../src/connections.js';

const WRITE_TIMEOUT = 1000;

/** A socket whose write buffer the test moves by hand. */
function socket(name: string): TrackedSocket & { name: string; writableLength: number; bytesWritten: number } {
  return { name, writableLength: 0, bytesWritten: 0 };
}

function tracker(...sockets: ReturnType<typeof socket>[]) {
  const connections = new ConnectionTracker<ReturnType<typeof socket>>();
  for (const s of sockets) connections.opened(s);
  return connections;
}

describe('shutdown: idle connections', () => {
  it('counts a connection idle until an answer begins on it, and again once every answer is done', () => {
    const a = socket('a');
    const connections = tracker(a);
    expect(connections.idle()).toEqual([a]);
    const first = connections.answering(a);
    const second = connections.answering(a);
    expect(connections.idle()).toEqual([]);
    first();
    expect(connections.idle()).toEqual([]);
    second();
    expect(connections.idle()).toEqual([a]);
  });

  it('never counts a websocket, nor a closed connection', () => {
    const ws = socket('ws');
    const gone = socket('gone');
    const connections = tracker(ws, gone);
    connections.upgraded(ws);
    connections.closed(gone);
    expect(connections.idle()).toEqual([]);
    expect(connections.size).toBe(1);
  });

  it('ignores answers and upgrades of connections it does not track', () => {
    const stranger = socket('stranger');
    const connections = tracker();
    const done = connections.answering(stranger);
    connections.upgraded(stranger);
    done();
    expect(connections.size).toBe(0);
    expect(connections.idle()).toEqual([]);
  });

  it('an answer that ends after its connection closed changes nothing', () => {
    const a = socket('a');
    const connections = tracker(a);
    const done = connections.answering(a);
    connections.closed(a);
    done();
    connections.opened(a);
    expect(connections.idle()).toEqual([a]);
  });
});

describe('the stall sweep', () => {
  it('leaves alone a connection with nothing waiting to be written, however long', () => {
    const a = socket('a');
    const connections = tracker(a);
    expect(connections.stalled(0, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.stalled(10 * WRITE_TIMEOUT, WRITE_TIMEOUT)).toEqual([]);
  });

  it('reports a connection whose waiting bytes did not move for the write time-out, once, and forgets it', () => {
    const a = socket('a');
    const connections = tracker(a);
    a.writableLength = 500;
    expect(connections.stalled(100, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.stalled(100 + WRITE_TIMEOUT - 1, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.stalled(100 + WRITE_TIMEOUT, WRITE_TIMEOUT)).toEqual([{ socket: a, waitingBytes: 500, stalledMs: WRITE_TIMEOUT }]);
    expect(connections.size).toBe(0);
    expect(connections.stalled(100 + 5 * WRITE_TIMEOUT, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.idle()).toEqual([]);
  });

  it('counts the time from the last progress: a reader that reads, however slowly, is kept', () => {
    const a = socket('a');
    const connections = tracker(a);
    a.writableLength = 500;
    connections.stalled(0, WRITE_TIMEOUT);
    a.bytesWritten = 10;
    expect(connections.stalled(WRITE_TIMEOUT, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.stalled(2 * WRITE_TIMEOUT - 1, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.stalled(2 * WRITE_TIMEOUT, WRITE_TIMEOUT)).toHaveLength(1);
  });

  it('starts over when the waiting bytes were all written in between', () => {
    const a = socket('a');
    const connections = tracker(a);
    a.writableLength = 500;
    connections.stalled(0, WRITE_TIMEOUT);
    a.writableLength = 0;
    connections.stalled(WRITE_TIMEOUT / 2, WRITE_TIMEOUT);
    // A new answer waits, with the counter of written bytes where it was.
    a.writableLength = 200;
    expect(connections.stalled(WRITE_TIMEOUT, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.stalled(2 * WRITE_TIMEOUT - 1, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.stalled(2 * WRITE_TIMEOUT, WRITE_TIMEOUT)).toEqual([{ socket: a, waitingBytes: 200, stalledMs: WRITE_TIMEOUT }]);
  });

  it('never sweeps a websocket, even one seen waiting before its upgrade', () => {
    const ws = socket('ws');
    const connections = tracker(ws);
    ws.writableLength = 500;
    connections.stalled(0, WRITE_TIMEOUT);
    connections.upgraded(ws);
    expect(connections.stalled(10 * WRITE_TIMEOUT, WRITE_TIMEOUT)).toEqual([]);
    expect(connections.size).toBe(1);
  });

  it('sweeps each connection on its own', () => {
    const stuck = socket('stuck');
    const reading = socket('reading');
    const connections = tracker(stuck, reading);
    stuck.writableLength = reading.writableLength = 100;
    connections.stalled(0, WRITE_TIMEOUT);
    reading.bytesWritten = 50;
    expect(connections.stalled(WRITE_TIMEOUT, WRITE_TIMEOUT).map((s) => s.socket)).toEqual([stuck]);
    expect(connections.size).toBe(1);
  });
});
