/**
 * Preloaded into every server under test (`node --expose-gc --import probe.js server.js`): answers
 * the orchestrator's questions about this process over IPC, so that server CPU time is the
 * process's own (getrusage through process.cpuUsage: all threads, microsecond resolution) and
 * memory is measured after a full collection. Nothing here runs on the server's request path.
 */
import { serveRpc } from './rpc.js';

export interface ProcessUsage {
  /** User + system CPU time of the whole process since it started, µs. */
  readonly cpuUs: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
}

function usage(): ProcessUsage {
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  return {
    cpuUs: cpu.user + cpu.system,
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    external: memory.external,
    arrayBuffers: memory.arrayBuffers,
  };
}

const gc = (globalThis as { gc?: () => void }).gc;

serveRpc(
  {
    usage,
    /** Full collections (twice: weak references and finalizers free more on the second), then usage. */
    async gc() {
      if (!gc) throw new Error('start the server with --expose-gc');
      for (let i = 0; i < 3; i++) {
        gc();
        await new Promise((resolve) => setImmediate(resolve));
      }
      return usage();
    },
  },
  // Orchestrator gone: stop through the server's own graceful path.
  () => process.kill(process.pid, 'SIGTERM'),
);
