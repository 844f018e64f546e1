/**
 * A mock-client process: holds one population of MDP clients (websocket or HTTP loop) against one
 * server, driven by the orchestrator over RPC. Runs in its own process so that the server under
 * test pays only for the server side.
 */
import type { Population } from '../fixtures.js';
import { serveRpc } from '../rpc.js';
import { LoopClientPool } from './loop-clients.js';
import { newStats } from './stats.js';
import { WsClientPool, churn } from './ws-clients.js';

const stats = newStats();
let pool: WsClientPool | LoopClientPool | undefined;

interface ConnectArgs {
  readonly url: string;
  readonly transport: 'ws' | 'loop';
  readonly population: Population;
  /** Handshakes in flight at once while connecting. */
  readonly parallel?: number;
}

serveRpc({
  async connect(args: ConnectArgs) {
    const started = performance.now();
    pool = args.transport === 'ws' ? new WsClientPool(stats) : new LoopClientPool(stats);
    await pool.connect(args.url, args.population, args.parallel ?? 64);
    return { ms: performance.now() - started };
  },
  async disconnect() {
    await pool?.disconnect();
    pool = undefined;
  },
  stats: () => ({ ...stats }),
  churn: (args: { url: string; concurrency: number; durationMs: number; skills: number }) =>
    churn(args.url, args.concurrency, args.durationMs, args.skills, stats),
});
