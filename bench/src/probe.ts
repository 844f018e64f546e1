/**
 * Preloaded into every server under test (`node --expose-gc --import probe.js server.js`): answers
 * the orchestrator's questions about this process over IPC, so that server CPU time is the
 * process's own (getrusage through process.cpuUsage: all threads, microsecond resolution) and
 * memory is measured after a full collection. Nothing here runs on the server's request path.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { serveRpc } from './rpc.js';

export interface ProcessUsage {
  /** User + system CPU time of the whole process since it started, µs. */
  readonly cpuUs: number;
  readonly rss: number;
  /** The largest resident set the process has had since it started (getrusage's ru_maxrss), bytes. */
  readonly maxRss: number;
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
    maxRss: process.resourceUsage().maxRSS * 1024,
    heapUsed: memory.heapUsed,
    external: memory.external,
    arrayBuffers: memory.arrayBuffers,
  };
}

const gc = (globalThis as { gc?: () => void }).gc;

/** The event-loop delay histogram between `startLoopDelay` and `loopDelay` (`tools/hardening-stress.mjs`). */
let loopDelay: IntervalHistogram | undefined;

/**
 * CPU time between two ticks of a 1 ms timer, from `startTurnCpu` to `turnCpu`: how long the
 * server's turns of the event loop keep it busy, in CPU time rather than wall time, so that a
 * machine busy with other processes (which delays every timer) does not count. Whatever the server
 * does between two ticks (one turn, or several short ones) counts as one.
 */
let turnCpu: { samples: number[]; timer: NodeJS.Timeout | undefined } | undefined;

/** The inspector session of an allocation sampling in progress (`tools/alloc-one.mjs`). */
let sampling: Session | undefined;
/** The inspector session of a CPU profile in progress (`tools/cpu-one.mjs`). */
let profiling: Session | undefined;
const post = (session: Session, method: string, params?: object): Promise<unknown> =>
  new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));

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
    /**
     * Sample allocations every `intervalBytes` until `stopAllocations`: every object, or with
     * `survivorsOnly` only those that outlived a young-generation collection (the promoted ones).
     */
    async startAllocations({ intervalBytes, survivorsOnly = false }: { intervalBytes: number; survivorsOnly?: boolean }) {
      if (sampling) throw new Error('allocation sampling already started');
      sampling = new Session();
      sampling.connect();
      await post(sampling, 'HeapProfiler.enable');
      await post(sampling, 'HeapProfiler.startSampling', {
        samplingInterval: intervalBytes,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: !survivorsOnly,
      });
    },
    /** Start V8's CPU profiler, sampling every `intervalUs` (`tools/cpu-one.mjs`: the measured run only). */
    async startCpuProfile({ intervalUs }: { intervalUs: number }) {
      if (profiling) throw new Error('CPU profile already started');
      profiling = new Session();
      profiling.connect();
      await post(profiling, 'Profiler.enable');
      await post(profiling, 'Profiler.setSamplingInterval', { interval: intervalUs });
      await post(profiling, 'Profiler.start');
    },
    /** Stop the CPU profiler and write the profile (`.cpuprofile` JSON) to `file`. */
    async stopCpuProfile({ file }: { file: string }) {
      if (!profiling) throw new Error('CPU profile not started');
      const session = profiling;
      profiling = undefined;
      const { profile } = (await post(session, 'Profiler.stop')) as { profile: unknown };
      session.disconnect();
      await writeFile(file, JSON.stringify(profile));
    },
    /** Start measuring how late the event loop runs (10 ms resolution). */
    startLoopDelay() {
      loopDelay?.disable();
      loopDelay = monitorEventLoopDelay({ resolution: 10 });
      loopDelay.enable();
    },
    /** Stop measuring; the event loop's largest and 99th-percentile delay since the start, ms. */
    loopDelay() {
      if (!loopDelay) throw new Error('loop delay not started');
      loopDelay.disable();
      const figures = { maxMs: loopDelay.max / 1e6, p99Ms: loopDelay.percentile(99) / 1e6 };
      loopDelay = undefined;
      return figures;
    },
    /** Start timing the CPU time between two ticks of a 1 ms timer. */
    startTurnCpu() {
      if (turnCpu?.timer) clearTimeout(turnCpu.timer);
      const state: { samples: number[]; timer: NodeJS.Timeout | undefined } = { samples: [], timer: undefined };
      let last = process.cpuUsage();
      const tick = (): void => {
        const now = process.cpuUsage();
        state.samples.push((now.user - last.user + now.system - last.system) / 1000);
        last = now;
        state.timer = setTimeout(tick, 1);
      };
      state.timer = setTimeout(tick, 1);
      turnCpu = state;
    },
    /** Stop; the largest and the 99th-percentile CPU time between two ticks since the start, ms. */
    turnCpu() {
      if (!turnCpu) throw new Error('turn CPU not started');
      clearTimeout(turnCpu.timer);
      const sorted = turnCpu.samples.sort((a, b) => a - b);
      turnCpu = undefined;
      const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
      return { maxMs: at(100), p99Ms: at(99) };
    },
    /** Stop sampling and write the sampling heap profile (JSON) to `file`. */
    async stopAllocations({ file }: { file: string }) {
      if (!sampling) throw new Error('allocation sampling not started');
      const session = sampling;
      sampling = undefined;
      const { profile } = (await post(session, 'HeapProfiler.stopSampling')) as { profile: unknown };
      session.disconnect();
      await writeFile(file, JSON.stringify(profile));
    },
  },
  // Orchestrator gone: stop through the server's own graceful path.
  () => process.kill(process.pid, 'SIGTERM'),
);
