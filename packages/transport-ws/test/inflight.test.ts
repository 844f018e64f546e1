/**
 * The node's in-flight budget on the websocket endpoint: what a peer has sent of a message it has
 * not finished is counted from its socket's bytes (fragments, control frames between them and
 * frames arriving a few bytes at a time included), freed once the message is complete or the peer
 * gone, and past the budget the connection whose unfinished message began first is closed 1013 with
 * the limit named, its socket destroyed at once. Raw TCP clients write the frames by hand.
 */
import { describe, expect, it } from 'vitest';
import { CHUNK_COST } from '@mdp/core';
import { WatchedBudget } from '@mdp/test-kit';
import { WS_CLOSE } from '../src/index.js';
import { harnessPerTest, rawUpgrade, type RawClient } from './helpers.js';

const { start } = harnessPerTest();

/** One masked frame: FIN, opcode, payload. */
function frame(payload: Buffer | string, options: { fin?: boolean; opcode?: number; masked?: boolean } = {}): Buffer {
  const data = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const { fin = true, opcode = 1, masked = true } = options;
  const n = data.length;
  const length =
    n < 126
      ? Buffer.from([n])
      : n < 65536
        ? Buffer.from([126, n >> 8, n & 0xff])
        : Buffer.from([127, 0, 0, 0, 0, (n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
  length[0] = (length[0] as number) | (masked ? 0x80 : 0);
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const body = masked ? Buffer.from(data.map((byte, i) => byte ^ (mask[i % 4] as number))) : data;
  return Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | opcode]), length, masked ? mask : Buffer.alloc(0), body]);
}

/** A ping message padded to `bytes` with JSON whitespace: valid before registration, answered with a pong. */
const paddedPing = (timestamp: number, bytes: number): string => {
  const text = JSON.stringify({ type: 'ping', timestamp });
  return text + ' '.repeat(Math.max(0, bytes - text.length));
};

/** Resolves once a raw client has received a pong (server frames are unmasked: its JSON shows as is). */
function pongs(raw: RawClient): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (raw.frames().includes('"type":"pong"')) {
        raw.socket.off('data', check);
        resolve();
      }
    };
    raw.socket.on('data', check);
    check();
  });
}

describe('in-flight budget', () => {
  it('counts a frame still arriving, a few bytes at a time, and frees it once the message is complete', async () => {
    const budget = new WatchedBudget(1 << 20);
    const h = await start({ transport: { inflight: budget } });
    const raw = await rawUpgrade(h.port);
    const bytes = frame(paddedPing(1, 3000));
    raw.socket.setNoDelay(true);
    // The header and a little of the payload, then some more: each chunk held is charged too.
    raw.socket.write(bytes.subarray(0, 20));
    await budget.reaches((total) => total === 20 + CHUNK_COST);
    raw.socket.write(bytes.subarray(20, 2000));
    await budget.reaches((total) => total >= 2000 + CHUNK_COST);
    expect(budget.holders).toBe(1);
    raw.socket.write(bytes.subarray(2000));
    await pongs(raw);
    expect(budget.total).toBe(0);
    expect(budget.holders).toBe(0);
  });

  it('holds finished fragments until the last, not the control frames between, and frees them with the message', async () => {
    const budget = new WatchedBudget(1 << 20);
    const h = await start({ transport: { inflight: budget } });
    const raw = await rawUpgrade(h.port);
    const text = paddedPing(5, 400);
    raw.socket.write(frame(text.slice(0, 300), { fin: false }));
    await budget.reaches((total) => total >= 300 + CHUNK_COST);
    raw.socket.write(frame('ping!', { opcode: 9 }));
    raw.socket.write(frame(text.slice(300), { opcode: 0 }));
    await pongs(raw);
    expect(budget.total).toBe(0);
  });

  it('frees what a peer held when it goes away mid-frame', async () => {
    const budget = new WatchedBudget(1 << 20);
    const h = await start({ transport: { inflight: budget } });
    const raw = await rawUpgrade(h.port);
    raw.socket.write(frame(paddedPing(1, 50_000)).subarray(0, 30_000));
    await budget.reaches((total) => total >= 30_000);
    raw.socket.destroy();
    await budget.reaches((total) => total === 0);
    expect(budget.holders).toBe(0);
  });

  it('past the budget closes the connection whose unfinished message began first, 1013 naming the limit, and destroys its socket; the newer message arrives', async () => {
    const budget = new WatchedBudget(100_000);
    const h = await start({ transport: { inflight: budget } });
    const old = await rawUpgrade(h.port);
    const young = await rawUpgrade(h.port);
    old.socket.write(frame(paddedPing(1, 70_000)).subarray(0, 60_000));
    await budget.reaches((total) => total >= 60_000);
    const youngBytes = frame(paddedPing(2, 50_000));
    young.socket.write(youngBytes.subarray(0, 45_000));
    expect(await old.closeFrame).toEqual({ code: WS_CLOSE.tryAgainLater, reason: budget.reason });
    expect(budget.reason).toBe('Server is receiving too much at once (maxInflightBytes 100000); try again later');
    // Destroyed at once: it need not answer the close frame for the server to let go of its bytes.
    await old.ended;
    young.socket.write(youngBytes.subarray(45_000));
    await pongs(young);
    expect(budget.total).toBe(0);
    expect(h.sessions.opened.filter((s) => !s.closed)).toHaveLength(1);
  });

  it('stops counting a peer whose frame is over maxMessageBytes: ws closes it 1009 and reads nothing more of it', async () => {
    const budget = new WatchedBudget(1 << 20);
    const h = await start({ transport: { inflight: budget, maxMessageBytes: 1000 } });
    const raw = await rawUpgrade(h.port);
    raw.socket.write(frame(paddedPing(1, 5000)).subarray(0, 3000));
    expect((await raw.closeFrame).code).toBe(WS_CLOSE.messageTooBig);
    // Whatever it sends now is discarded by ws: none of it may be counted (0x20 bytes would read as
    // frames of 32 bytes, fragments of a message that never ends).
    let counted = 0;
    budget.changes.subscribe(() => (counted = Math.max(counted, budget.total)));
    raw.socket.write(Buffer.alloc(20_000, 0x20));
    raw.socket.end();
    await raw.ended;
    expect(counted).toBe(0);
    expect(budget.total).toBe(0);
  });

  it('a peer refused (4401) that then sends a bad frame is only closed: the server goes on', async () => {
    const budget = new WatchedBudget(1 << 20);
    const h = await start({ transport: { inflight: budget, authorize: () => false } });
    const raw = await rawUpgrade(h.port);
    expect(await raw.closeFrame).toEqual({ code: WS_CLOSE.unauthorized, reason: 'Unauthorized' });
    // An unmasked frame: a protocol error `ws` reports as an 'error' event on the websocket.
    raw.socket.write(frame('{}', { masked: false }));
    await raw.ended;
    const next = await rawUpgrade(h.port);
    expect(await next.closeFrame).toMatchObject({ code: WS_CLOSE.unauthorized });
    expect(budget.total).toBe(0);
  });
});
