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

/** Errors the mock clients counted so far, and the last one's message. */
interface ClientErrors {
  readonly errors: number;
  readonly lastError: string | undefined;
}

/** A load run's figures, its errors with those the mock clients counted from `before` to `after`. */
export function loadFigures(result: LoadResult, before: ClientErrors, after: ClientErrors) {
  const clientErrors = after.errors - before.errors;
  return {
    ops: result.requests,
    opsPerSec: result.rps,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + clientErrors,
    lastError: result.lastError ?? (clientErrors > 0 ? after.lastError : undefined),
  };
}
