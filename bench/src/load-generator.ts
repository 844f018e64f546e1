/** The load generator as seen from the orchestrator and the tools: its own process, one RPC per run. */
import { fileURLToPath } from 'node:url';
import type { ProbeArgs, ProbeResult, WalkArgs, WalkResult } from './listing-load.js';
import type { LoadArgs, LoadResult } from './loadgen.js';
import { Child } from './proc.js';

/** Time a run may take beyond its own duration before the call counts as failed, ms. */
const RUN_GRACE_MS = 60_000;

export class LoadGenerator {
  private readonly child: Child;

  constructor(name = 'load generator') {
    this.child = new Child(name, fileURLToPath(new URL('./loadgen.js', import.meta.url)), []);
  }

  /** One run of closed-loop skill reads against a server; resolves with its counts and latencies. */
  run(args: LoadArgs): Promise<LoadResult> {
    return this.child.call<LoadResult>('run', args, args.durationMs + RUN_GRACE_MS);
  }

  /** Walk every page of the largest listings for `durationMs` (listing-load.ts). */
  walk(args: WalkArgs): Promise<WalkResult> {
    return this.child.call<WalkResult>('walk', args, args.durationMs + RUN_GRACE_MS);
  }

  /** Stop its process (the bench stops every process at the end anyway). */
  stop(): Promise<void> {
    return this.child.stop();
  }

  /** Time `GET /mdp/meta` for `durationMs` (listing-load.ts). */
  probeMeta(args: ProbeArgs): Promise<ProbeResult> {
    return this.child.call<ProbeResult>('probeMeta', args, args.durationMs + RUN_GRACE_MS);
  }
}
