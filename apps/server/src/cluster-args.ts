/** The cluster flags of `mdp-server` (SPEC §10), parsed into MdpClusterOptions. */
import { CLUSTER_DEFAULTS, CLUSTER_MODES, DISCOVERY_DEFAULTS, type ClusterMode } from '@mdp/cluster';
import { MAX_TIMER_MS } from '@mdp/core';
import { defaultStateDir, type MdpClusterOptions } from './cluster.js';
import { wholeNumber } from './flag-values.js';

export const CLUSTER_HELP = `Cluster (several servers acting as one hub; SPEC §10):
  --cluster-mode <mode>            ${CLUSTER_MODES.join(' | ')} (default auto): auto discovers peers, elects a
                                   leader and mirrors local clients into it; proxy-required never leads
  --cluster-members <ids>          static membership: comma-separated server ids, this one's included
                                   (default: dynamic membership by discovery)
  --upstream-url <url>             mirror local clients into this hub instead of the elected leader
  --discover-host <host>           host whose port range is probed (default ${DISCOVERY_DEFAULTS.host})
  --discover-start-port <n>        first probed port (default ${DISCOVERY_DEFAULTS.startPort})
  --discover-attempts <n>          number of probed ports, 0 for none (default ${DISCOVERY_DEFAULTS.attempts})
  --discover-interval-ms <ms>      time between discovery rounds (default ${DISCOVERY_DEFAULTS.intervalMs})
  --discover-timeout-ms <ms>       time allowed for one probe (default ${DISCOVERY_DEFAULTS.probeTimeoutMs})
  --discover-seed <url>            extra address probed every round (repeatable)
  --cluster-heartbeat-interval-ms <ms>  leader heartbeat period (default ${CLUSTER_DEFAULTS.heartbeatIntervalMs})
  --lease-duration-ms <ms>         follower lease per heartbeat (default ${CLUSTER_DEFAULTS.leaseDurationMs})
  --election-timeout-min-ms <ms>   shortest random election time-out (default ${CLUSTER_DEFAULTS.electionTimeoutMinMs})
  --election-timeout-max-ms <ms>   longest random election time-out (default ${CLUSTER_DEFAULTS.electionTimeoutMaxMs})
  --cluster-state-dir <dir|none>   where term and vote survive restarts (default
                                   $XDG_STATE_HOME/mdp-server, else ~/.local/state/mdp-server)
  --cluster-secret <secret>        shared secret members prove in their hello; also MDP_CLUSTER_SECRET.
                                   Default with --auth-token: the tokens (a member proves its first
                                   one, so that token must be among every other member's tokens)
  In auto mode, when --port is not given and the default port is held by an MDP hub, the server
  takes the next free port of the discovery range and follows that hub.`;

export const CLUSTER_ARG_OPTIONS = {
  'cluster-mode': { type: 'string' },
  'cluster-members': { type: 'string' },
  'upstream-url': { type: 'string' },
  'discover-host': { type: 'string' },
  'discover-start-port': { type: 'string' },
  'discover-attempts': { type: 'string' },
  'discover-interval-ms': { type: 'string' },
  'discover-timeout-ms': { type: 'string' },
  'discover-seed': { type: 'string', multiple: true },
  'cluster-heartbeat-interval-ms': { type: 'string' },
  'lease-duration-ms': { type: 'string' },
  'election-timeout-min-ms': { type: 'string' },
  'election-timeout-max-ms': { type: 'string' },
  'cluster-state-dir': { type: 'string' },
  'cluster-secret': { type: 'string' },
} as const;

type Values = Readonly<Record<string, string | boolean | string[] | undefined>>;

/**
 * Cluster options from parsed flag values; a string is the error to print, undefined when no
 * cluster flag was given (the binary then applies `cliClusterDefaults`: auto mode).
 */
export function parseClusterArgs(values: Values, env: Readonly<Record<string, string | undefined>>): MdpClusterOptions | string | undefined {
  if (!Object.keys(CLUSTER_ARG_OPTIONS).some((flag) => values[flag] !== undefined) && !env.MDP_CLUSTER_SECRET) return undefined;
  return clusterOptions(values, env);
}

/** What `mdp-server` runs with when no cluster flag is given: auto mode, term and vote kept on disk. */
export function cliClusterDefaults(env: Readonly<Record<string, string | undefined>>): MdpClusterOptions {
  return clusterOptions({}, env) as MdpClusterOptions;
}

function clusterOptions(values: Values, env: Readonly<Record<string, string | undefined>>): MdpClusterOptions | string {
  const options: MdpClusterOptions = {};
  const text = (flag: string): string | undefined => {
    const raw = values[flag];
    return typeof raw === 'string' ? raw : undefined;
  };

  const mode = text('cluster-mode') ?? 'auto';
  if (!(CLUSTER_MODES as readonly string[]).includes(mode)) {
    return `--cluster-mode must be one of ${CLUSTER_MODES.join(', ')}, got ${JSON.stringify(mode)}`;
  }
  options.mode = mode as ClusterMode;

  const members = text('cluster-members');
  if (members !== undefined) {
    const ids = members.split(',').map((m) => m.trim()).filter((m) => m !== '');
    if (ids.length === 0) return '--cluster-members must name at least one server id';
    options.members = ids;
  }
  const upstream = text('upstream-url');
  if (upstream !== undefined) {
    if (upstream.trim() === '') return '--upstream-url must not be empty';
    options.upstreamUrl = upstream.trim();
  }

  const discovery: { -readonly [K in keyof NonNullable<MdpClusterOptions['discovery']>]?: unknown } & Record<string, unknown> = {};
  const host = text('discover-host');
  if (host !== undefined) {
    if (host.trim() === '') return '--discover-host must not be empty';
    discovery.host = host.trim();
  }
  const numbers: [string, string, number, number?][] = [
    ['discover-start-port', 'startPort', 1, 65535],
    ['discover-attempts', 'attempts', 0, 65535],
    ['discover-interval-ms', 'intervalMs', 1, MAX_TIMER_MS],
    ['discover-timeout-ms', 'probeTimeoutMs', 1, MAX_TIMER_MS],
  ];
  for (const [flag, key, min, max] of numbers) {
    const raw = text(flag);
    if (raw === undefined) continue;
    const value = wholeNumber(flag, raw, min, max);
    if (typeof value === 'string') return value;
    discovery[key] = value;
  }
  const seeds = (values['discover-seed'] as string[] | undefined)?.map((s) => s.trim());
  if (seeds?.some((s) => s === '')) return '--discover-seed must not be empty';
  if (seeds?.length) discovery.seedUrls = seeds;
  if (Object.keys(discovery).length > 0) options.discovery = discovery as MdpClusterOptions['discovery'];

  const timings: [string, keyof MdpClusterOptions][] = [
    ['cluster-heartbeat-interval-ms', 'heartbeatIntervalMs'],
    ['lease-duration-ms', 'leaseDurationMs'],
    ['election-timeout-min-ms', 'electionTimeoutMinMs'],
    ['election-timeout-max-ms', 'electionTimeoutMaxMs'],
  ];
  for (const [flag, key] of timings) {
    const raw = text(flag);
    if (raw === undefined) continue;
    const value = wholeNumber(flag, raw, 1, MAX_TIMER_MS);
    if (typeof value === 'string') return value;
    (options as Record<string, unknown>)[key] = value;
  }
  const heartbeat = options.heartbeatIntervalMs ?? CLUSTER_DEFAULTS.heartbeatIntervalMs;
  const lease = options.leaseDurationMs ?? CLUSTER_DEFAULTS.leaseDurationMs;
  const min = options.electionTimeoutMinMs ?? CLUSTER_DEFAULTS.electionTimeoutMinMs;
  const max = options.electionTimeoutMaxMs ?? CLUSTER_DEFAULTS.electionTimeoutMaxMs;
  if (lease <= heartbeat) return `--lease-duration-ms (${lease}) must be longer than the cluster heartbeat interval (${heartbeat})`;
  if (max < min) return `--election-timeout-max-ms (${max}) must not be below --election-timeout-min-ms (${min})`;

  const stateDir = text('cluster-state-dir');
  if (stateDir === undefined) options.stateDir = defaultStateDir(env);
  else if (stateDir.trim() === '') return '--cluster-state-dir must not be empty (use none to keep no state)';
  else if (stateDir !== 'none') options.stateDir = stateDir;

  const secret = text('cluster-secret') ?? env.MDP_CLUSTER_SECRET;
  if (secret !== undefined && secret !== '') options.secret = secret;
  return options;
}
