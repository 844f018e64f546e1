/**
 * The control websocket counts what an accepted link has sent of an unfinished frame against the
 * node's in-flight budget (anyone who reaches the port may open one): freed once the frame is
 * complete or the link gone, and past the budget the link whose frame began first is closed 1013
 * and its socket destroyed. Raw TCP clients write the frames by hand.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WatchedBudget } from '@mdp/test-kit';
import { startNode, type TestNode } from './harness.js';

const running: TestNode[] = [];
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(running.splice(0).map((n) => n.stop()));
});

interface RawLink {
  readonly socket: Socket;
  /** Resolves with the first close frame the node sent (code, reason). */
  readonly closeFrame: Promise<{ code: number; reason: string }>;
  readonly ended: Promise<void>;
}

/** Upgrade to /mdp/cluster by hand; nothing more is sent until the test writes it. */
async function rawLink(port: number): Promise<RawLink> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined);
  let buffer = Buffer.alloc(0);
  let frames = -1;
  let onUpgrade: () => void = () => undefined;
  let onClose: (closed: { code: number; reason: string }) => void = () => undefined;
  const upgraded = new Promise<void>((resolve) => (onUpgrade = resolve));
  const closeFrame = new Promise<{ code: number; reason: string }>((resolve) => (onClose = resolve));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (frames < 0) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      frames = end + 4;
      onUpgrade();
    }
    for (let at = frames; at + 2 <= buffer.length; ) {
      const short = (buffer[at + 1] as number) & 0x7f;
      const head = short === 126 ? 4 : 2;
      const length = short === 126 ? buffer.readUInt16BE(at + 2) : short;
      if (at + head + length > buffer.length) break;
      if (((buffer[at] as number) & 0x0f) === 0x8)
        onClose({ code: buffer.readUInt16BE(at + head), reason: buffer.subarray(at + head + 2, at + head + length).toString('utf8') });
      at += head + length;
    }
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(
    `GET /mdp/cluster HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  await upgraded;
  return { socket, closeFrame, ended };
}

/** The first `sent` bytes of a masked text frame of `payload` bytes (mask key 0: the payload goes as is). */
function partialFrame(payload: number, sent: number): Buffer {
  const head = Buffer.from([0x81, 0x80 | 127, 0, 0, 0, 0, (payload >>> 24) & 0xff, (payload >> 16) & 0xff, (payload >> 8) & 0xff, payload & 0xff, 0, 0, 0, 0]);
  return Buffer.concat([head, Buffer.alloc(payload, 0x20)]).subarray(0, sent);
}

describe('control links under the in-flight budget', () => {
  it('count an unfinished frame until the link is gone', async () => {
    const budget = new WatchedBudget(1 << 20);
    const node = await startNode({ inflight: budget });
    running.push(node);
    const link = await rawLink(node.port);
    link.socket.write(partialFrame(100_000, 40_000));
    await budget.reaches((total) => total >= 40_000);
    link.socket.destroy();
    await budget.reaches((total) => total === 0);
  });

  it('past the budget close the link whose frame began first, 1013 naming the limit', async () => {
    const budget = new WatchedBudget(100_000);
    const node = await startNode({ inflight: budget });
    running.push(node);
    const [old, young] = [await rawLink(node.port), await rawLink(node.port)];
    old.socket.write(partialFrame(90_000, 60_000));
    await budget.reaches((total) => total >= 60_000);
    young.socket.write(partialFrame(90_000, 45_000));
    expect(await old.closeFrame).toEqual({ code: 1013, reason: budget.reason });
    await old.ended;
    expect(budget.total).toBeGreaterThanOrEqual(45_000);
    expect(budget.total).toBeLessThan(100_000);
  });
});
