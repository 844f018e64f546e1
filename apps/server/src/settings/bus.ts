/**
 * The fleet settings of `mdp-server` (SPEC §16): `--bus` and what a node needs to join a fleet on
 * NATS, turned into MdpBusOptions. A group of the settings table; like every setting each also
 * comes from `MDP_BUS_*` and the config file (`bus`, `busPrefix`, …). Secrets (token, password)
 * are never printed.
 */
import * as v from 'valibot';
import { BUS_DEFAULTS, prefixProblem } from '@mdp/bus-nats/lite';
import type { MdpBusOptions } from '../features/bus.js';
import { list, text, wholeNumber } from './values.js';
import { settingGroup, sourceLabel, type Source, type ValuesOf } from './table.js';

/** A NATS server URL as the bus takes it: `nats://HOST:PORT` or `tls://HOST:PORT` (user info allowed). */
const NATS_URL = /^(nats|tls):\/\/[^/\s?#]+$/;

const natsUrls = v.pipe(
  list('NATS URLs'),
  v.check(
    (urls) => urls.every((url) => NATS_URL.test(url)),
    (issue) => {
      const bad = (issue.input as readonly string[]).find((url) => !NATS_URL.test(url)) ?? '';
      return `must be NATS server URLs, nats://HOST:PORT or tls://HOST:PORT: ${JSON.stringify(bad.replace(/\/\/[^@/]*@/, '//…@'))}`;
    },
  ),
);

const prefix = v.pipe(
  text(),
  v.check(
    (value) => prefixProblem(value) === undefined,
    (issue) => prefixProblem(issue.input as string)?.replace(/^bus: /, '') ?? 'is not a fleet prefix',
  ),
);

export const BUS_SETTINGS = settingGroup({
  title: 'Fleet on NATS (every node serves every client; off by default)',
  settings: {
    bus: {
      flag: 'bus',
      placeholder: '<urls>',
      schema: natsUrls,
      urls: true,
      help: `join a fleet on this NATS (nats://HOST:PORT or tls://HOST:PORT, comma-separated for a
        NATS cluster; the server needs JetStream, nats-server -js): clients of every node are
        listed, read and called from any node, HTTP loop sessions work behind a load balancer
        without stickiness. Excludes the local discovery and election (--cluster-mode,
        --cluster-members, --upstream-url, --discover-*); give every node its own --server-id`,
    },
    busPrefix: {
      flag: 'bus-prefix',
      placeholder: '<name>',
      schema: prefix,
      defaultText: 'made from --cluster-id',
      help: 'fleets with different prefixes share one NATS without seeing each other (1-48 of A-Z a-z 0-9 _ -)',
    },
    busCreds: {
      flag: 'bus-creds',
      placeholder: '<file>',
      schema: text(),
      help: 'NATS credentials file (JWT and NKey seed, as nsc writes it)',
    },
    busToken: {
      flag: 'bus-token',
      placeholder: '<token>',
      schema: text(),
      secret: true,
      help: 'NATS token',
    },
    busUser: {
      flag: 'bus-user',
      placeholder: '<user>',
      schema: text(),
      help: 'NATS user (with --bus-password)',
    },
    busPassword: {
      flag: 'bus-password',
      placeholder: '<password>',
      schema: text(),
      secret: true,
      help: 'NATS password (with --bus-user)',
    },
    busTlsCa: {
      flag: 'bus-tls-ca',
      placeholder: '<file>',
      schema: text(),
      help: 'TLS to NATS, trusting the CA certificate(s) in this PEM file (tls:// URLs need TLS too)',
    },
    busTlsCert: {
      flag: 'bus-tls-cert',
      placeholder: '<file>',
      schema: text(),
      help: 'client certificate (PEM) for a NATS server that verifies clients, with --bus-tls-key',
    },
    busTlsKey: {
      flag: 'bus-tls-key',
      placeholder: '<file>',
      schema: text(),
      help: 'its private key (PEM)',
    },
    busTtlMs: {
      flag: 'bus-ttl-ms',
      placeholder: '<ms>',
      schema: wholeNumber(1000, 60_000),
      default: BUS_DEFAULTS.ttlMs,
      help: `a dead node's clients are gone from every other node within this long: it
        beats every quarter of it and is taken for dead after 7/8 of it without a beat. Give every
        node of a fleet the same`,
    },
    busReplicas: {
      flag: 'bus-replicas',
      placeholder: '<n>',
      schema: v.pipe(
        wholeNumber(1, 5),
        v.check((n) => n === 1 || n === 3 || n === 5, 'must be 1, 3 or 5'),
      ),
      default: BUS_DEFAULTS.replicas,
      help: 'JetStream replicas of the fleet directory (3 or 5 on a NATS cluster)',
    },
  },
});

export type BusValues = ValuesOf<typeof BUS_SETTINGS.settings>;

/**
 * Cluster settings that ask for the one-machine discovery, election or mirroring (SPEC §10), which
 * a fleet on NATS replaces. `--cluster-id` (the default prefix), `--cluster-state-dir` and
 * `--cluster-secret` (files of the state directory) still have a meaning.
 */
const CLUSTER_ONLY = [
  'clusterMode',
  'clusterConfig',
  'clusterMembers',
  'upstreamUrl',
  'discoverHost',
  'discoverStartPort',
  'discoverAttempts',
  'discoverIntervalMs',
  'discoverTimeoutMs',
  'discoverSeed',
  'serveDefaultPort',
  'clusterHeartbeatIntervalMs',
  'leaseDurationMs',
  'electionTimeoutMinMs',
  'electionTimeoutMaxMs',
] as const;

/** Why the bus settings cannot run together with the others, or undefined (one line per problem). */
export function busProblems(
  values: BusValues & { readonly clusterMode: string },
  sources: Readonly<Record<string, Source>>,
  label: (key: string) => string,
): string[] {
  const problems: string[] = [];
  const given = (key: string): boolean => sources[key] !== undefined && sources[key].kind !== 'default';
  if (values.bus === undefined) {
    for (const [key, row] of Object.entries(BUS_SETTINGS.settings)) {
      // A default written back (a --print-config file) says nothing.
      const value = (values as Record<string, unknown>)[key];
      if (key !== 'bus' && given(key) && !('default' in row && row.default === value)) problems.push(`${label(key)} needs --bus (a fleet on NATS)`);
    }
    return problems;
  }
  for (const key of CLUSTER_ONLY) {
    if (!given(key)) continue;
    // Standalone is what bus mode runs anyway.
    if (key === 'clusterMode' && values.clusterMode === 'standalone') continue;
    problems.push(`${label(key)} cannot be used with --bus: a fleet on NATS has no local discovery, election or hub (every node serves every client)`);
  }
  const ways = [values.busCreds !== undefined, values.busToken !== undefined, values.busUser !== undefined || values.busPassword !== undefined];
  if (ways.filter(Boolean).length > 1) problems.push('give one way to authenticate to NATS: --bus-creds, --bus-token, or --bus-user with --bus-password');
  if ((values.busUser === undefined) !== (values.busPassword === undefined)) problems.push('--bus-user and --bus-password go together');
  if ((values.busTlsCert === undefined) !== (values.busTlsKey === undefined)) problems.push('--bus-tls-cert and --bus-tls-key go together');
  return problems;
}

/** The bus options of the settings' values, or undefined without `--bus`. */
export function busOptions(values: BusValues): MdpBusOptions | undefined {
  if (values.bus === undefined) return undefined;
  const auth =
    values.busCreds !== undefined
      ? { credsFile: values.busCreds }
      : values.busToken !== undefined
        ? { token: values.busToken }
        : values.busUser !== undefined && values.busPassword !== undefined
          ? { user: values.busUser, password: values.busPassword }
          : undefined;
  const tls =
    values.busTlsCa !== undefined || values.busTlsCert !== undefined
      ? {
          ...(values.busTlsCa !== undefined ? { caFile: values.busTlsCa } : {}),
          ...(values.busTlsCert !== undefined ? { certFile: values.busTlsCert } : {}),
          ...(values.busTlsKey !== undefined ? { keyFile: values.busTlsKey } : {}),
        }
      : undefined;
  return {
    servers: values.bus,
    ...(values.busPrefix !== undefined ? { prefix: values.busPrefix } : {}),
    ...(auth ? { auth } : {}),
    ...(tls ? { tls } : {}),
    ttlMs: values.busTtlMs,
    replicas: values.busReplicas,
  };
}

/** `sourceLabel` for a bus or cluster setting of `table`. */
export function labelOf(sources: Readonly<Record<string, Source>>, rows: ReadonlyMap<string, Parameters<typeof sourceLabel>[1]>) {
  return (key: string): string => {
    const source = sources[key];
    return source ? sourceLabel(source, rows.get(key)) : `--${key}`;
  };
}
