/**
 * Settings of `mdp-server` (the table: table.ts), from flags, `MDP_*` environment variables and
 * an optional config file, turned into MdpServerOptions. A new group of settings is a
 * `settingGroup({...})` in its own module of this folder, one entry in GROUPS and one line in
 * toServerOptions.
 */
import { readFileSync } from 'node:fs';
import { cookieKeysFile } from '../cookie-keys.js';
import { ACCESS_TOKEN_SETTINGS, accessTokenOptions } from './access-tokens.js';
import { AUTH_SETTINGS, tokensOf } from './auth.js';
import { BUS_SETTINGS, busOptions, busProblems, labelOf } from './bus.js';
import { CLUSTER_SETTINGS, clusterOptions, userStateDir } from './cluster.js';
import { CONFIG_SETTINGS } from './config.js';
import { LIMIT_SETTINGS, limitOptions } from './limits.js';
import { MCP_SETTINGS, mcpOptions } from './mcp.js';
import { OBSERVE_SETTINGS, observeOptions } from './observe.js';
import type { MdpServerOptions } from './options.js';
import { ORIGIN_SETTINGS, originOptions } from './origins.js';
import { SERVER_SETTINGS } from './server.js';
import { commandLineLayer, resolveSettings, type Env, type FileSetting, type ReadText } from './sources.js';
import { STATE_STORE_SETTINGS, stateStoreOptions } from './state-store.js';
import { settingTable, sourceLabel, type Source, type TableValues } from './table.js';
import { TENANCY_SETTINGS, tenancyOptions, tenancyProblem } from './tenancy.js';
import { configDocument, helpSections } from './text.js';
import { TLS_SETTINGS, tlsSettings, type TlsSettings } from './tls.js';

/** The groups, in `--help` order. */
const GROUPS = [
  SERVER_SETTINGS,
  AUTH_SETTINGS,
  ACCESS_TOKEN_SETTINGS,
  TENANCY_SETTINGS,
  ORIGIN_SETTINGS,
  TLS_SETTINGS,
  LIMIT_SETTINGS,
  CLUSTER_SETTINGS,
  BUS_SETTINGS,
  MCP_SETTINGS,
  OBSERVE_SETTINGS,
  STATE_STORE_SETTINGS,
  CONFIG_SETTINGS,
] as const;
export const CLI_SETTINGS = settingTable(GROUPS);
export type CliValues = TableValues<typeof GROUPS>;

/** Settings whose value is a file of further settings, each read below the layers before it. */
const FILES: readonly FileSetting[] = [
  { key: 'config', kind: 'file' },
  { key: 'clusterConfig', kind: 'manifest' },
];

export const HELP = `Usage: mdp-server [options]
       mdp-server mcp [options]     the same server, plus MCP on stdin/stdout for the agent that
                                    launched it (stdout carries only MCP; end of stdin stops it)
       mdp-server setup [options]   add this server to your agent hosts' MCP config (setup --help)
       mdp-server rotate-cookie-key [options]
                                    seal new mdp_auth cookies with a new key; the old one is
                                    still accepted for an hour (rotate-cookie-key --help)

Runs an MDP server: MDP clients connect over the websocket or the HTTP loop and publish paths;
their skills are readable at /skills/<clientId>/<path> and /<clientId>/skills/<path>, every path
is callable through the host API (/mdp/clients, /mdp/paths, /mdp/call, /mdp/call-many) and, for
agents, through MCP (/mcp).

${helpSections(CLI_SETTINGS)}

Every flag can also be set in the environment, as MDP_ and its name in capitals (--port:
MDP_PORT, --cluster-lease-duration-ms: MDP_CLUSTER_LEASE_DURATION_MS), and in the --config
file, as its name in camelCase ("port", "clusterLeaseDurationMs"). A flag wins over the
environment, the environment over the config file, the file over the default.

Stops gracefully on SIGINT or SIGTERM: stops accepting, refuses new calls, lets the calls in
flight finish for up to --drain-timeout-ms, then ends the rest (every waiting reader is answered)
and exits within that plus one second (0 when it stopped cleanly). On SIGHUP a server on TLS
reads its certificate files again (a bad file keeps the old ones).
Exit status: 0 stopped cleanly; 1 could not start (port in use, a TLS file it cannot use, …),
or stopped on an error; 64 a bad flag, environment variable or config file (EX_USAGE).`;

export type CliCommand =
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  /** `--print-config`: the settings in effect, as a config file. */
  | { readonly kind: 'print-config'; readonly text: string }
  | { readonly kind: 'run'; readonly options: MdpServerOptions }
  /** One line per bad value, each naming where the value came from. */
  | { readonly kind: 'error'; readonly messages: readonly string[] };

const readText: ReadText = (path) => readFileSync(path, 'utf8');

/**
 * The command `argv` asks for, with settings from `env` and the files they name (read by `readFile`).
 * `subcommand` `mcp`: stdout carries MCP, so nothing else may be sent there.
 */
export function parseCliArgs(argv: readonly string[], env: Env = {}, readFile: ReadText = readText, subcommand?: 'mcp'): CliCommand {
  const flags = commandLineLayer(CLI_SETTINGS, argv);
  if (!flags.ok) return { kind: 'error', messages: flags.errors };
  if (flags.layer.has('help')) return { kind: 'help' };
  if (flags.layer.has('version')) return { kind: 'version' };
  const resolved = resolveSettings(CLI_SETTINGS, { flags: flags.layer, env, readFile, files: FILES });
  if (!resolved.ok) return { kind: 'error', messages: resolved.errors };
  const { values, sources } = resolved;
  if (values.printConfig) return { kind: 'print-config', text: configDocument(CLI_SETTINGS, values, sources) };
  if (subcommand === 'mcp' && values.auditLog === '-') {
    const label = sourceLabel(sources.auditLog!, CLI_SETTINGS.rows.get('auditLog'));
    return { kind: 'error', messages: [`${label} cannot be - (stdout) with "mdp-server mcp": stdout carries MCP to the agent; give a file`] };
  }
  const tokens = tokensOf(values, sources, readFile);
  if (typeof tokens === 'string') return { kind: 'error', messages: [tokens] };
  // Access tokens of an issuer are a policy too: their principals are iss + sub.
  const tenancy = tenancyProblem(values, tokens.length > 0 || values.authIssuer !== undefined);
  if (tenancy) return { kind: 'error', messages: [`${sourceLabel(sources.tenancy!, CLI_SETTINGS.rows.get('tenancy'))}: ${tenancy}`] };
  const tls = tlsSettings(values, sources);
  if (!tls.ok) return { kind: 'error', messages: tls.messages };
  const bus = busProblems(values, sources, labelOf(sources, CLI_SETTINGS.rows));
  if (bus.length > 0) return { kind: 'error', messages: bus };
  const access = accessTokenOptions(values);
  if (typeof access === 'string') return { kind: 'error', messages: [access] };
  return { kind: 'run', options: { ...toServerOptions(values, sources, tokens, tls), ...access } };
}

function toServerOptions(
  values: CliValues,
  sources: Readonly<Record<string, Source>>,
  tokens: readonly string[],
  tls: Extract<TlsSettings, { ok: true }>,
): MdpServerOptions {
  return {
    host: values.host,
    port: values.port,
    ...(values.serverId !== undefined ? { serverId: values.serverId } : {}),
    invocationTimeoutMs: values.invocationTimeoutMs,
    heartbeatIntervalMs: values.heartbeatIntervalMs,
    heartbeatTimeoutMs: values.heartbeatTimeoutMs,
    maxMessageBytes: values.maxMessageBytes,
    httpLoopLongPollTimeoutMs: values.longPollTimeoutMs,
    drainTimeoutMs: values.drainTimeoutMs,
    clusterId: values.clusterId,
    logLevel: values.logLevel,
    ...(tokens.length > 0 ? { authTokens: tokens } : {}),
    ...tenancyOptions(values),
    ...originOptions(values),
    ...(tls.tls ? { tls: tls.tls } : {}),
    cookieSameSite: tls.cookieSameSite,
    // Used under an auth policy only: nothing is made without one.
    cookieKeyFile: cookieKeysFile(userStateDir(values)),
    // A fleet on NATS runs each node standalone: no discovery, election or hub (SPEC §16).
    cluster: values.bus
      ? { ...clusterOptions(values, { portGiven: true }), mode: 'standalone' }
      : clusterOptions(values, { portGiven: sources.port?.kind !== 'default' }),
    ...(values.bus ? { bus: busOptions(values) } : {}),
    mcp: mcpOptions(values),
    ...observeOptions(values),
    ...limitOptions(values),
    ...stateStoreOptions(values),
  };
}
