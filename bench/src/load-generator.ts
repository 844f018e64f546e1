/** The load generator as seen from the orchestrator and the tools: its own process, one RPC per run. */
import { fileURLToPath } from 'node:url';
import type { LoadArgs, LoadResult } from './loadgen.js';
import { Child } from './proc.js';

/** Time a run may take beyond its own duration before the call counts as failed, ms. */
const RUN_GRACE_MS = 60_000;

export class LoadGenerator {
  private readonly child = new Child('load generator', fileURLToPath(new URL('./loadgen.js', import.meta.url)), []);

  /** One run of closed-loop skill reads against a server; resolves with its counts and latencies. */
  run(args: LoadArgs): Promise<LoadResult> {
    return this.child.call<LoadResult>('run', args, args.durationMs + RUN_GRACE_MS);
  }
}
