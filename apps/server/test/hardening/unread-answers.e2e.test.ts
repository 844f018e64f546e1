/**
 * Issue 18, finding 4: HTTP readers that pipeline skill reads of large answers and never read them
 * pinned memory (200 connections × 5 reads of 900 KB: 65 → 476 MB, no socket closed in 30 s). Now
 * a pipelined request is served only when the answer before it on its connection is finished, more
 * than --max-pipelined-requests waiting are refused (503, the connection closes), and a connection
 * whose answer is not taken for --http-write-timeout-ms is closed. Figures are the child server's own.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { stopAll } from '@mdp/test-kit';
import { MB, startChild, stopChildren } from './child.js';
import { wsClientWithSkill, read } from './clients.js';

afterEach(async () => {
  await stopAll();
  await stopChildren();
});

const CONNECTIONS = 10;
const PIPELINED = 8;
// Larger than the kernel buffers of a loopback connection take, so the first answer cannot finish.
const ANSWER = 'a'.repeat(8 * MB);

/** Open a connection, write `count` pipelined reads at once, and never read the answers. */
async function pipelineAndStall(port: number, count: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  // No 'data' listener: the socket reads no further than its own small buffer.
  socket.write(`GET /skills/big/s HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`.repeat(count));
  return socket;
}

describe('HTTP readers that never read their answers', () => {
  it('hold at most one answer per connection, and are closed once their answer stalls', { timeout: 30_000 }, async () => {
    const server = await startChild(['--http-write-timeout-ms', '1000', '--max-pipelined-requests', '2', '--max-message-bytes', String(16 * MB)]);
    const big = await wsClientWithSkill(server.ws, 'big', ANSWER);
    const before = await server.memory(true);

    const sockets = await Promise.all(Array.from({ length: CONNECTIONS }, () => pipelineAndStall(server.port, PIPELINED)));
    // Every connection is closed by the server, with its answer still waiting.
    await server.logged('http.unread_answer_closed', CONNECTIONS);

    // One answer per connection was made: the requests behind it waited for it to finish, which it
    // never did (without the bounds every pipelined read was relayed at once and its answer held).
    expect(big.calls).toHaveLength(CONNECTIONS);
    const after = await server.memory(true);
    // The answers of closed connections are released.
    expect(after.heapUsed + after.external - (before.heapUsed + before.external)).toBeLessThan(16 * MB);
    // Never as much as one copy of every pipelined answer, which is what holding them all would take.
    expect(after.maxRss - before.rss).toBeLessThan(CONNECTIONS * PIPELINED * ANSWER.length);
    // A reader that reads is served afterwards.
    expect(await read(server.http, '/skills/big/s')).toMatchObject({ status: 200 });
    for (const socket of sockets) socket.destroy();
  });
});
