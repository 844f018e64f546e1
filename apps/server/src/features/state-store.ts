/**
 * The state store (SPEC §14, the reference server's `--state-store`): a node-local diagnostic
 * snapshot in four JSON files, rewritten as clients come, change and go and as the cluster view or
 * the upstream proxy changes. Nothing reads the files back: they are for people and tools looking at
 * a running (or stopped) node. The contents are in state-store/documents.ts, the timing in
 * state-store/schedule.ts, the disk in state-store/files.ts.
 *
 * Listed after the cluster: its start subscribes to the node the cluster's start creates, and its
 * close (among the first) makes the last write while the clients are still there, marked stopped.
 */
import { resolve } from 'node:path';
import { MAX_TIMER_MS, redactUrl, systemClock, type Clock } from '@mdp/core';
import { PROTOCOL_VERSION } from '@mdp/protocol';
import type { ProxyStatus } from '@mdp/cluster';
import type { ListeningInfo, ServerContext, ServerFeature } from '../feature.js';
import { storeFiles } from '../state-store/documents.js';
import { prepareStoreDir, writeStoreFiles, writeStoreFilesSync } from '../state-store/files.js';
import { SCHEDULE_DEFAULTS } from '../state-store/schedule.js';
import { StoreWriter } from '../state-store/writer.js';
import type { ClusterFeature } from './cluster.js';

/** Where the files go unless told: under the directory the server starts in (the reference's default). */
export const DEFAULT_STATE_STORE_DIR = '.mdp/store';

/** What `createMdpServer` takes as `stateStore`. */
export interface MdpStateStoreOptions {
  /** Directory of the files; a relative one is taken from the current directory when the server is created. Default `.mdp/store`. */
  dir?: string;
  /** Least time between the starts of two writes, ms. Default 250 (at most four writes a second). */
  minIntervalMs?: number;
  /** Wait before trying again after a failed write, ms. Default 5000. */
  retryMs?: number;
  /** Time for the schedule (tests). Default the system clock. */
  clock?: Clock;
}

export interface StateStoreFeatureOptions {
  readonly cluster: ClusterFeature;
  readonly clusterId: string;
  /** Whether `/mcp` is served. */
  readonly mcpHttp: boolean;
}

/** The proxy's state without credentials in its URLs. */
function proxyView(status: ProxyStatus | undefined): unknown {
  if (!status || status.state === 'idle') return status;
  return { ...status, upstream: redactUrl(status.upstream), ...('wsUrl' in status ? { wsUrl: redactUrl(status.wsUrl) } : {}) };
}

/**
 * @throws StateStoreDirError when the directory cannot be made or written, RangeError for a bad
 * interval (before anything listens).
 */
export function stateStoreFeature(ctx: ServerContext, store: MdpStateStoreOptions, options: StateStoreFeatureOptions): ServerFeature {
  for (const [name, value] of [
    ['minIntervalMs', store.minIntervalMs],
    ['retryMs', store.retryMs],
  ] as const) {
    if (value !== undefined && !(Number.isFinite(value) && value >= 0 && value <= MAX_TIMER_MS)) {
      throw new RangeError(`stateStore.${name} must be a number of milliseconds from 0 to ${MAX_TIMER_MS}, got ${String(value)}`);
    }
  }
  const cwd = process.cwd();
  const dir = resolve(cwd, store.dir ?? DEFAULT_STATE_STORE_DIR);
  prepareStoreDir(dir);
  const logger = ctx.logger.child({ component: 'state-store' });
  const clock = store.clock ?? systemClock;
  let writer: StoreWriter | undefined;
  let status: 'running' | 'stopped' = 'running';
  let generation = 0;
  let startedAt = 0;
  const unsubscribe: Array<() => void> = [];

  const files = (info: ListeningInfo) => {
    const node = options.cluster.node;
    return storeFiles({
      now: clock.wallNow(),
      generation: ++generation,
      status,
      server: {
        serverId: info.serverId,
        clusterId: options.clusterId,
        clusterMode: node?.mode ?? 'standalone',
        protocolVersion: PROTOCOL_VERSION,
        pid: process.pid,
        cwd,
        storeDir: dir,
        startedAt,
      },
      urls: info.urls,
      secure: info.secure,
      cluster: options.cluster.view(info),
      upstreamProxy: node && node.mode !== 'standalone' ? proxyView(node.proxyStatus()) : undefined,
      mcp: options.mcpHttp,
      clients: ctx.router.listClients(),
    });
  };

  return {
    name: 'state-store',
    start(info) {
      startedAt = clock.wallNow();
      writer = new StoreWriter({
        clock,
        schedule: {
          ...SCHEDULE_DEFAULTS,
          ...(store.minIntervalMs !== undefined ? { minIntervalMs: store.minIntervalMs } : {}),
          ...(store.retryMs !== undefined ? { retryMs: store.retryMs } : {}),
        },
        writeSync: () => writeStoreFilesSync(dir, files(info)),
        // The documents are of the moment the write starts; they are made a slice at a time.
        write: () => writeStoreFiles(dir, files(info), () => clock.now()),
        // One error line for a run of failures (the retries are detail), one line when it works again.
        onFailure: (error, first) => {
          if (first) logger.error('state_store.write_failed', { dir, generation, error });
          else logger.debug('state_store.write_failed', { dir, generation, error });
        },
        onWritten: (recovered) => {
          if (recovered) logger.info('state_store.write_recovered', { dir, generation });
          else logger.debug('state_store.written', { generation });
        },
      });
      const changed = (): void => writer?.changed();
      unsubscribe.push(ctx.router.onClientEvent(changed));
      const node = options.cluster.node;
      if (node) unsubscribe.push(node.onLeaderChange(changed), node.onProxyStatus(changed));
      logger.info('state_store.started', { dir });
    },
    async close() {
      for (const stop of unsubscribe.splice(0)) stop();
      status = 'stopped';
      await writer?.close();
    },
  };
}
