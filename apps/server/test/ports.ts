/** Free loopback ports for tests that need to know them before anything listens. */
import { createServer } from 'node:net';

/** `count` consecutive free loopback ports (bound, then released). */
export async function freePorts(count: number): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    // Below the OS's ephemeral range (32768 and up on Linux), where outgoing connections take ports.
    const base = 20000 + Math.floor(Math.random() * 12000);
    const held = [];
    try {
      for (let i = 0; i < count; i += 1) {
        const s = createServer();
        await new Promise<void>((resolve, reject) => {
          s.once('error', reject);
          s.listen(base + i, '127.0.0.1', () => resolve());
        });
        held.push(s);
      }
      return Array.from({ length: count }, (_, i) => base + i);
    } catch {
      // taken: try another range
    } finally {
      await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
    }
  }
  throw new Error('no free port range');
}
