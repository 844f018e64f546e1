/**
 * FrameProgress against a model: messages of several frames (fragments, control frames between
 * them, every length encoding) are laid end to end, the bytes held after each prefix of the stream
 * are worked out from the frames themselves, and the stream is fed in random chunks. Seeded, so a
 * failure replays.
 */
import { describe, expect, it } from 'vitest';
import { FrameProgress } from '../src/index.js';

interface Frame {
  readonly fin: boolean;
  readonly opcode: number;
  readonly payload: number;
  readonly masked?: boolean;
}

/** The wire bytes of `frame` (payload bytes are 0x20: only lengths matter here). */
function encode(frame: Frame): Buffer {
  const masked = frame.masked ?? true;
  const { payload } = frame;
  const length =
    payload < 126
      ? [payload]
      : payload < 65536
        ? [126, payload >> 8, payload & 0xff]
        : [127, 0, 0, 0, 0, (payload >>> 24) & 0xff, (payload >> 16) & 0xff, (payload >> 8) & 0xff, payload & 0xff];
  const head = Buffer.from([(frame.fin ? 0x80 : 0) | frame.opcode, (masked ? 0x80 : 0) | (length[0] as number), ...length.slice(1)]);
  return Buffer.concat([head, masked ? Buffer.from([1, 2, 3, 4]) : Buffer.alloc(0), Buffer.alloc(payload, 0x20)]);
}

/** The stream of `frames` and, for each prefix length 0..n, the bytes held after it. */
function model(frames: readonly Frame[]): { bytes: Buffer; held: number[] } {
  const parts: Buffer[] = [];
  const held: number[] = [0];
  let fragments = 0;
  for (const frame of frames) {
    const wire = encode(frame);
    parts.push(wire);
    for (let i = 1; i < wire.length; i++) held.push(fragments + i);
    if (frame.opcode >= 8) {
      // A control frame holds nothing once complete.
    } else if (frame.fin) fragments = 0;
    else fragments += frame.payload;
    held.push(fragments);
  }
  return { bytes: Buffer.concat(parts), held };
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random messages: 1–4 frames each, pings and pongs between fragments, lengths of every encoding. */
function randomFrames(random: () => number, messages: number): Frame[] {
  const lengths = [0, 1, 125, 126, 127, 300, 65535, 65536, 70000];
  const pick = (): number => (random() < 0.5 ? (lengths[Math.floor(random() * lengths.length)] as number) : Math.floor(random() * 2000));
  const frames: Frame[] = [];
  for (let m = 0; m < messages; m++) {
    const parts = 1 + Math.floor(random() * 4);
    for (let p = 0; p < parts; p++) {
      frames.push({ fin: p === parts - 1, opcode: p === 0 ? 1 : 0, payload: pick(), masked: random() < 0.9 });
      if (p < parts - 1 && random() < 0.4) frames.push({ fin: true, opcode: random() < 0.5 ? 9 : 10, payload: Math.floor(random() * 126) });
    }
    if (random() < 0.2) frames.push({ fin: true, opcode: 9, payload: 4 });
  }
  return frames;
}

describe('FrameProgress', () => {
  it('holds nothing between messages, and the frame so far within one', () => {
    const progress = new FrameProgress();
    const frame = encode({ fin: true, opcode: 1, payload: 130 });
    expect(progress.feed(frame)).toBe(0);
    expect(progress.chunks).toBe(0);
    expect(progress.feed(frame.subarray(0, 50))).toBe(50);
    expect(progress.feed(frame.subarray(50, 100))).toBe(100);
    expect(progress.chunks).toBe(2);
    expect(progress.feed(frame.subarray(100))).toBe(0);
    expect(progress.chunks).toBe(0);
  });

  it('holds the finished fragments of a message until its last, but not the control frames between', () => {
    const progress = new FrameProgress();
    expect(progress.feed(encode({ fin: false, opcode: 1, payload: 1000 }))).toBe(1000);
    expect(progress.feed(encode({ fin: true, opcode: 9, payload: 10 }))).toBe(1000);
    expect(progress.feed(encode({ fin: false, opcode: 0, payload: 500 }))).toBe(1500);
    expect(progress.chunks).toBe(3);
    expect(progress.feed(encode({ fin: true, opcode: 0, payload: 1 }))).toBe(0);
  });

  it("counts the chunk where one message ends and the next begins as the next one's only chunk", () => {
    const progress = new FrameProgress();
    const first = encode({ fin: true, opcode: 1, payload: 200 });
    const second = encode({ fin: true, opcode: 1, payload: 200 });
    progress.feed(first.subarray(0, 100));
    progress.feed(first.subarray(100, 150));
    expect(progress.chunks).toBe(2);
    expect(progress.feed(Buffer.concat([first.subarray(150), second.subarray(0, 30)]))).toBe(30);
    expect(progress.chunks).toBe(1);
  });

  it('reads 8-byte lengths (a frame of 1 MiB declared, all but one byte sent)', () => {
    const progress = new FrameProgress();
    const frame = encode({ fin: true, opcode: 1, payload: 1 << 20 });
    expect(frame.length).toBe((1 << 20) + 14);
    expect(progress.feed(frame.subarray(0, frame.length - 1))).toBe(frame.length - 1);
  });

  it('reads nothing after a close frame', () => {
    const progress = new FrameProgress();
    expect(progress.feed(Buffer.concat([encode({ fin: true, opcode: 8, payload: 2 }), encode({ fin: true, opcode: 1, payload: 100 }).subarray(0, 50)]))).toBe(
      0,
    );
    expect(progress.feed(Buffer.alloc(1000))).toBe(0);
  });

  it('counts an empty frame that ends a chunk as complete', () => {
    const progress = new FrameProgress();
    expect(progress.feed(encode({ fin: true, opcode: 1, payload: 0 }))).toBe(0);
    expect(progress.feed(encode({ fin: true, opcode: 1, payload: 0, masked: false }))).toBe(0);
  });

  it.each([1, 2, 3, 4, 5, 6, 7, 8])('agrees with the model on random streams fed in random chunks (seed %i)', (seed) => {
    const random = seeded(seed);
    const { bytes, held } = model(randomFrames(random, 25));
    const progress = new FrameProgress();
    let at = 0;
    while (at < bytes.length) {
      // Single bytes, small pieces and large runs.
      const r = random();
      const size = r < 0.3 ? 1 : r < 0.7 ? 1 + Math.floor(random() * 40) : 1 + Math.floor(random() * 100_000);
      const end = Math.min(bytes.length, at + size);
      expect(progress.feed(bytes.subarray(at, end)), `after ${end} of ${bytes.length} bytes`).toBe(held[end]);
      at = end;
    }
    expect(progress.held).toBe(0);
    expect(progress.chunks).toBe(0);
  });
});
