/**
 * The cluster settings of `mdp-server` (SPEC §10), turned into MdpClusterOptions. The reference
 * server's names are aliases (`--cluster-lease-duration-ms` for `--lease-duration-ms`, …), and its
 * `--cluster-config` manifest may set any of these settings.
 */
import { CLUSTER_DEFAULTS, CLUSTER_MODES, DISCOVERY_DEFAULTS } from '@mdp/cluster';
import { MAX_TIMER_MS } from '@mdp/core';
import type { MdpClusterOptions } from '../cluster.js';
import { clusterSecretFile } from '../cluster-secret.js';
import { defaultStateDir } from '../state-dir.js';
import { list, oneOf, serverAddress, serverAddresses, text, toggle, wholeNumber } from './values.js';
import { SERVER_DEFAULTS } from './options.js';
import { settingGroup, type SourceKind, type ValuesOf } from './table.js';

const FROM: readonly SourceKind[] = ['env', 'file', 'manifest'];
const timer = wholeNumber(1, MAX_TIMER_MS);

export const CLUSTER_SETTINGS = settingGroup({
  title: 'Cluster (several servers acting as one hub)',
  settings: {
    clusterMode: {
      flag: 'cluster-mode',
      placeholder: '<mode>',
      schema: oneOf(CLUSTER_MODES),
      default: 'auto',
      sources: FROM,
      help: `${CLUSTER_MODES.join(' | ')}: auto discovers peers, elects a leader and mirrors
        local clients into it; proxy-required never leads; standalone is a cluster of one`,
    },
    clusterId: {
      flag: 'cluster-id',
      placeholder: '<id>',
      schema: text(),
      default: SERVER_DEFAULTS.clusterId,
      sources: FROM,
      help: 'cluster id reported in /mdp/meta',
    },
    clusterConfig: {
      flag: 'cluster-config',
      placeholder: '<file>',
      schema: text(),
      help: `JSON manifest of cluster settings (the reference server's): clusterId,
        clusterMembers, upstreamUrl, discoverHost, discoverStartPort, discoverAttempts and any
        other cluster setting, below the --config file; other fields are ignored`,
    },
    clusterMembers: {
      flag: 'cluster-members',
      placeholder: '<ids>',
      schema: list('server ids'),
      sources: FROM,
      defaultText: 'dynamic membership by discovery',
      help: "static membership: comma-separated server ids, this one's included",
    },
    upstreamUrl: {
      flag: 'upstream-url',
      placeholder: '<url>',
      schema: serverAddress(),
      sources: FROM,
      urls: true,
      help: 'mirror local clients into this hub instead of the elected leader',
    },
    discoverHost: {
      flag: 'discover-host',
      placeholder: '<host>',
      schema: text(),
      default: DISCOVERY_DEFAULTS.host,
      sources: FROM,
      help: 'host whose port range is probed',
    },
    discoverStartPort: {
      flag: 'discover-start-port',
      placeholder: '<n>',
      schema: wholeNumber(1, 65535),
      default: DISCOVERY_DEFAULTS.startPort,
      sources: FROM,
      help: 'first probed port',
    },
    discoverAttempts: {
      flag: 'discover-attempts',
      placeholder: '<n>',
      schema: wholeNumber(0, 65535),
      default: DISCOVERY_DEFAULTS.attempts,
      sources: FROM,
      help: 'number of probed ports, 0 for none',
    },
    discoverIntervalMs: {
      flag: 'discover-interval-ms',
      aliases: ['cluster-discovery-interval-ms'],
      placeholder: '<ms>',
      schema: timer,
      default: DISCOVERY_DEFAULTS.intervalMs,
      sources: FROM,
      help: 'time between discovery rounds',
    },
    discoverTimeoutMs: {
      flag: 'discover-timeout-ms',
      placeholder: '<ms>',
      schema: timer,
      default: DISCOVERY_DEFAULTS.probeTimeoutMs,
      sources: FROM,
      help: 'time allowed for one probe',
    },
    discoverSeed: {
      flag: 'discover-seed',
      urls: true,
      placeholder: '<url>',
      arity: 'list',
      schema: serverAddresses(),
      sources: FROM,
      help: 'extra address probed every round (repeatable)',
    },
    serveDefaultPort: {
      flag: 'serve-default-port',
      placeholder: '<true|false>',
      schema: toggle(),
      default: true,
      sources: FROM,
      help: `while leading, also serve the first port of the discovery range (the one clients
        know) as soon as the member that held it is gone; let it go on step-down, and give it back
        when that member starts on it again`,
    },
    clusterHeartbeatIntervalMs: {
      flag: 'cluster-heartbeat-interval-ms',
      placeholder: '<ms>',
      schema: timer,
      default: CLUSTER_DEFAULTS.heartbeatIntervalMs,
      sources: FROM,
      help: 'leader heartbeat period',
    },
    leaseDurationMs: {
      flag: 'lease-duration-ms',
      aliases: ['cluster-lease-duration-ms'],
      placeholder: '<ms>',
      schema: timer,
      default: CLUSTER_DEFAULTS.leaseDurationMs,
      sources: FROM,
      help: 'follower lease per heartbeat',
    },
    electionTimeoutMinMs: {
      flag: 'election-timeout-min-ms',
      aliases: ['cluster-election-timeout-min-ms'],
      placeholder: '<ms>',
      schema: timer,
      default: CLUSTER_DEFAULTS.electionTimeoutMinMs,
      sources: FROM,
      help: 'shortest random election time-out',
    },
    electionTimeoutMaxMs: {
      flag: 'election-timeout-max-ms',
      aliases: ['cluster-election-timeout-max-ms'],
      placeholder: '<ms>',
      schema: timer,
      default: CLUSTER_DEFAULTS.electionTimeoutMaxMs,
      sources: FROM,
      help: 'longest random election time-out',
    },
    clusterStateDir: {
      flag: 'cluster-state-dir',
      placeholder: '<dir|none>',
      schema: text(),
      default: defaultStateDir,
      defaultText: '$XDG_STATE_HOME/mdp-server, else ~/.local/state/mdp-server',
      sources: FROM,
      help: `where term and vote survive restarts, and where the cluster secret and the mdp_auth
        cookie keys are made; none keeps no term or vote (the secret and the cookie keys then
        live in the default directory)`,
    },
    clusterSecret: {
      flag: 'cluster-secret',
      placeholder: '<secret|none>',
      schema: text(),
      secret: true,
      sources: FROM,
      defaultText: 'with --auth-token, the tokens; else a random secret made on first run in <state dir>/cluster-secret, readable by this user only',
      help: `shared secret members prove in their hello; a peer that cannot prove it is never
        counted or followed. none: an open cluster that any local process may join. With tokens
        instead, a member proves its first one, so that token must be among every other member's
        tokens`,
    },
  },
  checks: [
    { keys: ['leaseDurationMs', 'clusterHeartbeatIntervalMs'], holds: (lease, heartbeat) => lease > heartbeat, message: '{0} must be longer than {1}' },
    { keys: ['electionTimeoutMaxMs', 'electionTimeoutMinMs'], holds: (max, min) => max >= min, message: '{0} must not be below {1}' },
  ],
  notes: `  In auto mode, when no port is set and the default port is held by an MDP hub, the server
  takes the next free port of the discovery range, and follows that hub if it proves the same
  cluster secret (another user's hub is not followed: this server leads a cluster of its own).`,
});

export type ClusterValues = ValuesOf<typeof CLUSTER_SETTINGS.settings>;

/** Cluster options from the settings; `portGiven`: whether the port was set (no auto-mode fallback then). */
export function clusterOptions(values: ClusterValues, context: { readonly portGiven: boolean }): MdpClusterOptions {
  const stateDir = values.clusterStateDir !== 'none' ? values.clusterStateDir : undefined;
  return {
    mode: values.clusterMode,
    ...(values.clusterMembers !== undefined ? { members: values.clusterMembers } : {}),
    ...(values.upstreamUrl !== undefined ? { upstreamUrl: values.upstreamUrl } : {}),
    discovery: {
      host: values.discoverHost,
      startPort: values.discoverStartPort,
      attempts: values.discoverAttempts,
      intervalMs: values.discoverIntervalMs,
      probeTimeoutMs: values.discoverTimeoutMs,
      ...(values.discoverSeed !== undefined ? { seedUrls: values.discoverSeed } : {}),
    },
    serveDefaultPort: values.serveDefaultPort,
    heartbeatIntervalMs: values.clusterHeartbeatIntervalMs,
    leaseDurationMs: values.leaseDurationMs,
    electionTimeoutMinMs: values.electionTimeoutMinMs,
    electionTimeoutMaxMs: values.electionTimeoutMaxMs,
    ...(stateDir !== undefined ? { stateDir } : {}),
    ...secretOptions(values.clusterSecret, stateDir),
    portFallback: values.clusterMode === 'auto' && !context.portGiven,
  };
}

/**
 * The directory of the per-user files (the cluster secret, the cookie keys): `--cluster-state-dir`,
 * or the default one when it is `none`.
 */
export function userStateDir(values: Pick<ClusterValues, 'clusterStateDir'>): string {
  return values.clusterStateDir !== 'none' ? values.clusterStateDir : defaultStateDir();
}

/** `--cluster-secret`: a secret, `none` for an open cluster, or unset for the per-user secret file. */
function secretOptions(secret: string | undefined, stateDir: string | undefined): Pick<MdpClusterOptions, 'secret' | 'secretFile'> {
  if (secret === undefined) return { secretFile: clusterSecretFile(stateDir ?? defaultStateDir()) };
  return secret === 'none' ? {} : { secret };
}
