/**
 * The attack of issue 36's known gap, as a client: raw TCP connections that each send all but the
 * last byte of a message and never finish it, as websocket frames or as HTTP request bodies. Each
 * says how the server ended it (a close frame, an HTTP answer), or that it is still open.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

/** How the server ended one unfinished message, once it did. */
export type Ending =
  | { readonly kind: 'close-frame'; readonly code: number; readonly reason: string }
  | { readonly kind: 'answer'; readonly status: number; readonly headers: string; readonly body: string }
  | { readonly kind: 'gone' };

export interface Partial {
  readonly socket: Socket;
  /** Resolves once the server has ended it (or the connection is gone). */
  readonly ended: Promise<Ending>;
}

function opened(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the socket receives, and a promise of the whole of it once it closes. */
function received(socket: Socket): { bytes: () => Buffer; closed: Promise<Buffer> } {
  let bytes = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => (bytes = Buffer.concat([bytes, chunk])));
  return { bytes: () => bytes, closed: new Promise((resolve) => socket.once('close', () => resolve(bytes))) };
}

/** The first close frame in the server's (unmasked) frames after the handshake. */
function closeFrameIn(frames: Buffer): Ending | undefined {
  for (let at = 0; at + 2 <= frames.length; ) {
    const short = (frames[at + 1] as number) & 0x7f;
    const head = short === 126 ? 4 : short === 127 ? 10 : 2;
    const length = short === 126 ? frames.readUInt16BE(at + 2) : short === 127 ? Number(frames.readBigUInt64BE(at + 2)) : short;
    const start = at + head;
    if (start + length > frames.length) return undefined;
    if (((frames[at] as number) & 0x0f) === 0x8)
      return { kind: 'close-frame', code: frames.readUInt16BE(start), reason: frames.subarray(start + 2, start + length).toString('utf8') };
    at = start + length;
  }
  return undefined;
}

/**
 * A websocket that sends `frameBytes − 1` bytes of a `frameBytes`-byte text frame (header included)
 * and then nothing: resolves once the handshake is done and the bytes are written.
 */
export async function partialFrame(port: number, frameBytes: number): Promise<Partial> {
  const socket = await opened(port);
  const got = received(socket);
  socket.write(
    `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  await new Promise<void>((resolve, reject) => {
    const check = (): void => {
      const text = got.bytes().toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      socket.off('data', check);
      if (text.startsWith('HTTP/1.1 101')) resolve();
      else reject(new Error(`upgrade refused: ${text.split('\r\n')[0]}`));
    };
    socket.on('data', check);
  });
  const handshake = got.bytes().indexOf('\r\n\r\n') + 4;
  const payload = frameBytes - 14;
  const header = Buffer.alloc(14);
  header[0] = 0x81;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(payload), 2);
  // The mask key is bytes 10-13 (zeros: the payload goes as it is), then all but the last byte of a JSON-ish payload.
  await new Promise<void>((resolve) => socket.write(Buffer.concat([header, Buffer.alloc(payload - 1, 0x20)]), () => resolve()));
  const ended = got.closed.then((all): Ending => closeFrameIn(all.subarray(handshake)) ?? { kind: 'gone' });
  return { socket, ended };
}

/**
 * An HTTP POST of `path` declaring a `bodyBytes`-byte JSON body and sending all but its last byte:
 * resolves once the bytes are written.
 */
export async function partialBody(port: number, path: string, bodyBytes: number): Promise<Partial> {
  const socket = await opened(port);
  const got = received(socket);
  const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n\r\n`;
  await new Promise<void>((resolve) => socket.write(Buffer.concat([Buffer.from(head), Buffer.alloc(bodyBytes - 1, 0x20)]), () => resolve()));
  const answer = (): Ending | undefined => {
    const text = got.bytes().toString('utf8');
    const end = text.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const headers = text.slice(0, end);
    const length = Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? 0);
    if (Buffer.byteLength(text.slice(end + 4)) < length) return undefined;
    return { kind: 'answer', status: Number(headers.slice(9, 12)), headers: headers.toLowerCase(), body: text.slice(end + 4, end + 4 + length) };
  };
  const ended = new Promise<Ending>((resolve) => {
    const check = (): void => {
      const found = answer();
      if (found) resolve(found);
    };
    socket.on('data', check);
    socket.once('close', () => resolve(answer() ?? { kind: 'gone' }));
  });
  return { socket, ended };
}

/** Open `count` partial messages of `make`, `parallel` at a time. */
export async function many(count: number, parallel: number, make: () => Promise<Partial>): Promise<Partial[]> {
  const all: Partial[] = [];
  for (let i = 0; i < count; i += parallel) {
    all.push(...(await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, make))));
  }
  return all;
}
