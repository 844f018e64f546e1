/**
 * The scenarios of `pnpm bench` (issue 5), as data: which subjects run side by side, which loads
 * they get, and which ratios are compared against which target.
 */
import type { Population } from './fixtures.js';
import type { Scanner } from './scan.js';
import type { SubjectSpec } from './subjects.js';

export interface Sizes {
  /** Clients in the "many clients" skill-read cases. */
  readonly manyClients: number;
  /** Catalog scale: clients × skills each. */
  readonly catalogClients: number;
  readonly catalogSkills: number;
  /** Idle memory: websocket clients held. */
  readonly idleClients: number;
  /** Registration rate: connect-register-close loops in flight, and skills per registration. */
  readonly registrationConcurrency: number;
  readonly registrationSkills: number;
  /** Listing: clients × paths each of the path-count case (the default cap: 250,000 paths in all). */
  readonly listingPathClients: number;
  readonly listingPathsEach: number;
  /** Listing: clients of the large-catalog case, paths in each catalog, and characters of each path's description. */
  readonly listingBigClients: number;
  readonly listingBigPaths: number;
  readonly listingDescriptionBytes: number;
  /** Listing: walkers at once while /mdp/meta is timed. */
  readonly listingWalkers: number;
  /** Cold starts of each command (medians over them). */
  readonly coldStarts: number;
  /** Fleet read: websocket clients spread over the fleet's nodes. */
  readonly fleetReadClients: number;
  /** Fleet scale: websocket clients spread over the fleet's nodes. */
  readonly fleetScaleClients: number;
  /** Fleet scenarios: the bus TTL of every node (`--bus-ttl-ms`), ms. */
  readonly fleetTtlMs: number;
}

export const FULL_SIZES: Sizes = {
  manyClients: 50,
  catalogClients: 2000,
  catalogSkills: 20,
  idleClients: 5000,
  registrationConcurrency: 16,
  registrationSkills: 20,
  listingPathClients: 25,
  listingPathsEach: 10_000,
  // The byte caps' defaults: descriptions of 16 KiB at most, 1 MiB a catalog, 32 MiB in all. 31
  // catalogs of 62 descriptions of 16,000 characters (about 1 MB each) are the largest they take.
  listingBigClients: 31,
  listingBigPaths: 62,
  listingDescriptionBytes: 16_000,
  listingWalkers: 4,
  coldStarts: 10,
  fleetReadClients: 48,
  fleetScaleClients: 20_000,
  // The server's default (BUS_DEFAULTS.ttlMs): what a dead node's clients take to leave every view.
  fleetTtlMs: 5000,
};

/** Tiny sizes for the smoke test: every code path, no meaningful figures. */
export const SMOKE_SIZES: Sizes = {
  manyClients: 5,
  catalogClients: 20,
  catalogSkills: 20,
  idleClients: 20,
  registrationConcurrency: 4,
  registrationSkills: 20,
  listingPathClients: 2,
  listingPathsEach: 100,
  listingBigClients: 4,
  listingBigPaths: 2,
  listingDescriptionBytes: 10_000,
  listingWalkers: 2,
  coldStarts: 1,
  fleetReadClients: 6,
  fleetScaleClients: 30,
  // The smallest the bus takes: the smoke waits for a dead node's clients to leave.
  fleetTtlMs: 1000,
};

/**
 * What a comparison divides: server CPU per operation (the default of read, registration and scan
 * scenarios; in a fleet, summed over its nodes), RSS growth per connection (the default of memory
 * scenarios), the server's RSS peak over its whole run (registration, warm-up and every round), a
 * fleet's CPU per operation with the NATS server's added, or the median latency (the time of a
 * start, the default of cold starts).
 */
export type ComparisonMetric = 'cpuUsPerOp' | 'bytesPerConn' | 'rssPeakBytes' | 'fleetCpuUsPerOp' | 'p50';

export interface ComparisonSpec {
  /** Subject labels: the ratio is a / b, or (a − minus) / b. */
  readonly a: string;
  readonly b: string;
  /** What is taken off a before dividing (per round): a's cost beyond this subject's. */
  readonly minus?: string;
  /** Default: the scenario kind's. */
  readonly metric?: ComparisonMetric;
  /** Pass when the ratio is at most this; no target means the ratio is reported only. */
  readonly target?: number;
}

export interface LoadSpec {
  readonly concurrency: number;
}

/** Subjects brought up together, then loaded in alternation. */
export interface ReadCase {
  readonly label: string;
  readonly subjects: readonly SubjectSpec[];
  readonly loads: readonly LoadSpec[];
  readonly comparisons: readonly ComparisonSpec[];
}

export type Scenario =
  | { readonly name: string; readonly kind: 'read'; readonly title: string; readonly cases: readonly ReadCase[] }
  | {
      readonly name: string;
      readonly kind: 'memory';
      readonly title: string;
      readonly subjects: readonly SubjectSpec[];
      readonly comparisons: readonly ComparisonSpec[];
    }
  | {
      readonly name: string;
      readonly kind: 'registration';
      readonly title: string;
      readonly subjects: readonly SubjectSpec[];
      readonly concurrency: number;
      readonly skills: number;
      readonly comparisons: readonly ComparisonSpec[];
    }
  | {
      readonly name: string;
      readonly kind: 'listing';
      readonly title: string;
      /** One server each: the MDP server with the catalog of `population`, or the bare pages baseline. */
      readonly cases: ReadonlyArray<{ readonly label: string; readonly server: 'mdp' | 'bare-pages'; readonly population: Population }>;
      /** Walkers at once, one load each (0: /mdp/meta timed with nothing else running, the control). */
      readonly walkers: readonly number[];
      /** Time between two /mdp/meta probes, ms. */
      readonly metaIntervalMs: number;
      /** What /mdp/meta should stay under while listings run, ms (issue 36: 50). */
      readonly metaTargetMs: number;
      readonly comparisons: readonly ComparisonSpec[];
    }
  | {
      /**
       * A fleet (SPEC §16): one nats-server and `nodes` mdp-server processes on it, websocket
       * clients spread over the nodes; reads go to the node that holds the client, to another one,
       * or to any, alternating round by round on the same fleet, at each concurrency.
       */
      readonly name: string;
      readonly kind: 'fleet-read';
      readonly title: string;
      readonly nodes: number;
      readonly clients: number;
      /** Each a load of its own (closed loops at once), every destination alternating within it. */
      readonly concurrencies: readonly number[];
      readonly ttlMs: number;
      readonly destinations: ReadonlyArray<{ readonly label: string; readonly sendTo: 'holder' | 'other' | 'any' }>;
      readonly comparisons: readonly ComparisonSpec[];
    }
  | {
      /**
       * A fleet at scale: `clients` websocket clients over `nodes` nodes. The first node's heap per
       * client of the others (its directory), and, after SIGKILL of the last node, how long until
       * no other node lists its clients. A fresh fleet per round.
       */
      readonly name: string;
      readonly kind: 'fleet-scale';
      readonly title: string;
      readonly nodes: number;
      readonly clients: number;
      readonly ttlMs: number;
      /** Heap per remote client the directory should stay under, bytes (issue 32: 1 KB). */
      readonly heapTargetBytes: number;
      readonly comparisons: readonly ComparisonSpec[];
    }
  | {
      readonly name: string;
      readonly kind: 'scan';
      readonly title: string;
      /** What scans, by label. */
      readonly scanners: ReadonlyArray<{ readonly label: string; readonly scanner: Scanner }>;
      /** The range scanned on 127.0.0.1, inclusive. */
      readonly fromPort: number;
      readonly toPort: number;
      readonly comparisons: readonly ComparisonSpec[];
    }
  | {
      readonly name: string;
      readonly kind: 'cold-start';
      readonly title: string;
      /** Measured starts of each subject, in alternating order round by round. */
      readonly starts: number;
      /** The first is the floor: each start is also reported as its excess over that round's floor. */
      readonly subjects: readonly ColdStartSubject[];
      readonly comparisons: readonly ComparisonSpec[];
    };

/**
 * What one cold start runs: node alone, the mdp-server binary, or the bare SDK stdio server, as
 * module files (`bare-mcp-stdio`) or bundled into one file as the binary is (`bare-mcp-stdio-bundled`).
 */
export interface StartSpec {
  readonly program: 'node' | 'mdp' | 'bare-mcp-stdio' | 'bare-mcp-stdio-bundled';
  readonly args: readonly string[];
  /** Done at exit (status 0), or once `initialize` is answered on stdout. */
  readonly until: 'exit' | 'initialize';
}

export interface ColdStartSubject {
  readonly label: string;
  readonly start: StartSpec;
  /** Pass when the median start takes at most this, ms. */
  readonly targetMs?: number;
}

const MDP = 'mdp-server';
const FLEET_LOCAL = 'local read';
const FLEET_REMOTE = 'remote read';
const FLEET_ANY = 'read to any node';
const population = (clients: number, skills = 1): Population => ({ prefix: 'c', clients, skills });

function wsReadCase(clients: number, loads: LoadSpec[]): ReadCase {
  const pop = population(clients);
  return {
    label: `${clients} client${clients === 1 ? '' : 's'}`,
    subjects: [
      { label: MDP, server: 'mdp', transport: 'ws', population: pop },
      { label: 'bare relay', server: 'bare-relay', transport: 'ws', population: pop },
      { label: 'bare http', server: 'bare-http', transport: 'none', population: pop },
    ],
    loads,
    comparisons: [
      { a: MDP, b: 'bare relay', target: 1.2 },
      { a: MDP, b: 'bare http' },
    ],
  };
}

function loopReadCase(clients: number): ReadCase {
  const pop = population(clients);
  return {
    label: `${clients} client${clients === 1 ? '' : 's'}`,
    subjects: [
      { label: MDP, server: 'mdp', transport: 'loop', population: pop },
      { label: 'bare loop relay', server: 'bare-loop', transport: 'loop', population: pop },
    ],
    loads: [{ concurrency: 32 }],
    comparisons: [{ a: MDP, b: 'bare loop relay', target: 1.3 }],
  };
}

/**
 * Catalog scale. Besides the target pair (many clients against one), the same many clients with
 * every read sent to one of them (the registry alone) and to a few of them (the socket fan-out
 * without cold per-client data), each also through the bare relay, which has no catalog at all:
 * together they split the growth into its parts.
 */
function catalogCase(sizes: Sizes): ReadCase {
  const many = `${sizes.catalogClients.toLocaleString('en-US')} clients`;
  const few = Math.min(sizes.manyClients, sizes.catalogClients);
  const all = population(sizes.catalogClients, sizes.catalogSkills);
  const subject = (server: 'mdp' | 'bare-relay', name: string, pop: Population): SubjectSpec => ({ label: name, server, transport: 'ws', population: pop });
  const labels = (name: string) => ({
    many: `${name}, ${many}`,
    one: `${name}, 1 client`,
    toOne: `${name}, ${many}, reads to 1`,
    toFew: `${name}, ${many}, reads to ${few}`,
  });
  const mdp = labels(MDP);
  const bare = labels('bare relay');
  return {
    label: `${sizes.catalogSkills} skills each`,
    subjects: [
      subject('mdp', mdp.many, all),
      subject('mdp', mdp.one, population(1, sizes.catalogSkills)),
      subject('mdp', mdp.toOne, { ...all, readClients: 1 }),
      subject('mdp', mdp.toFew, { ...all, readClients: few }),
      subject('bare-relay', bare.many, all),
      subject('bare-relay', bare.one, population(1, sizes.catalogSkills)),
      subject('bare-relay', bare.toFew, { ...all, readClients: few }),
    ],
    loads: [{ concurrency: 32 }],
    comparisons: [
      { a: mdp.many, b: mdp.one, target: 1.1 },
      // The registry: as many clients held, reads to one socket.
      { a: mdp.toOne, b: mdp.one },
      // The fan-out: calls and results spread over a few sockets, whose objects stay in cache.
      { a: mdp.toFew, b: mdp.one },
      { a: bare.toFew, b: bare.one },
      // Cold per-client data: the same fan-out over all of them.
      { a: mdp.many, b: mdp.toFew },
      { a: bare.many, b: bare.toFew },
      { a: bare.many, b: bare.one },
      { a: mdp.many, b: bare.many },
      // Memory under load: what the reads add to the catalog's heap (issue 37).
      { a: mdp.many, b: bare.many, metric: 'rssPeakBytes', target: 1.2 },
    ],
  };
}

/**
 * Host calls (issue 16): `POST /mdp/call` of an endpoint against a skill read, on the same kind of
 * client; both relay one call and answer with the same text, the host call adds a JSON body to
 * parse and validate and an `{ok, data}` answer.
 */
function hostCallCase(): ReadCase {
  const skillRead = 'skill read';
  const hostCall = 'host call';
  return {
    label: '1 client',
    subjects: [
      { label: skillRead, server: 'mdp', transport: 'ws', population: population(1) },
      { label: hostCall, server: 'mdp', transport: 'ws', population: { ...population(1), via: 'host-call' } },
    ],
    loads: [{ concurrency: 32 }],
    comparisons: [{ a: hostCall, b: skillRead, target: 1.15 }],
  };
}

/**
 * MCP calls (issue 16): `tools/call` of the generic `callPath` tool over Streamable HTTP, on one MCP
 * session, against the host call of the same endpoint: the MCP layer's cost on top of the host API;
 * and that cost against the MCP SDK's own for a tools/call (issue 33), the floor of any server on it.
 */
function mcpCallCase(): ReadCase {
  const hostCall = 'host call';
  const mcpCall = 'mcp call';
  const bareSdk = 'bare SDK mcp call';
  return {
    label: '1 client',
    subjects: [
      { label: hostCall, server: 'mdp', transport: 'ws', population: { ...population(1), via: 'host-call' } },
      { label: mcpCall, server: 'mdp', transport: 'ws', population: { ...population(1), via: 'mcp-call' } },
      // The SDK alone (servers/bare-mcp.ts): a tools/call answered with a constant, no relay.
      { label: bareSdk, server: 'bare-mcp', transport: 'none', population: { ...population(1), via: 'mcp-call' } },
    ],
    loads: [{ concurrency: 32 }],
    comparisons: [
      { a: mcpCall, b: hostCall, target: 2.5 },
      // Issue 33: what MCP adds to a host call, against what the SDK alone costs for a tools/call.
      { a: mcpCall, minus: hostCall, b: bareSdk, target: 1.2 },
    ],
  };
}

/**
 * Signed access tokens (issue 34): the same skill read with a JWT of an issuer (`--auth-issuer`)
 * and with a static token (`--auth-token`), and with no auth at all. A verified token is cached
 * until it expires, so the JWT should cost about what the static token does.
 */
function jwtReadCase(): ReadCase {
  const jwt = 'skill read, JWT';
  const token = 'skill read, static token';
  const open = 'skill read, no auth';
  return {
    label: '1 client',
    subjects: [
      { label: jwt, server: 'mdp', transport: 'ws', population: population(1), auth: 'jwt' },
      { label: token, server: 'mdp', transport: 'ws', population: population(1), auth: 'token' },
      { label: open, server: 'mdp', transport: 'ws', population: population(1) },
    ],
    loads: [{ concurrency: 32 }],
    comparisons: [
      { a: jwt, b: token, target: 1.1 },
      { a: token, b: open },
    ],
  };
}

/**
 * Cold starts (issue 33): what an agent's host waits for when it launches `mdp-server mcp`, and
 * `--version` and `--help`, against node alone and the MCP SDK alone on stdio (bundled into one file
 * as the binary is, the floor of `mcp`, and as the SDK's module files). The `mcp` target is
 * half the reference server's stdio start as issue 33 states it (0.25 s; the reference is not
 * available to the bench).
 */
function coldStartScenario(sizes: Sizes): Scenario {
  const mcp = (...extra: string[]): StartSpec => ({ program: 'mdp', args: ['mcp', '--port', '0', ...extra], until: 'initialize' });
  return {
    name: 'cold-start',
    kind: 'cold-start',
    title: 'Cold start: a new process until it answers initialize on stdio, or exits',
    starts: sizes.coldStarts,
    subjects: [
      { label: 'node alone', start: { program: 'node', args: [], until: 'exit' } },
      { label: 'mdp-server --version', start: { program: 'mdp', args: ['--version'], until: 'exit' }, targetMs: 100 },
      { label: 'mdp-server --help', start: { program: 'mdp', args: ['--help'], until: 'exit' }, targetMs: 100 },
      { label: 'bare SDK, stdio', start: { program: 'bare-mcp-stdio', args: [], until: 'initialize' } },
      // The same server bundled by esbuild into one file, as the binary is: the fair floor of `mcp`.
      { label: 'bare SDK bundled, stdio', start: { program: 'bare-mcp-stdio-bundled', args: [], until: 'initialize' } },
      { label: 'mdp-server mcp', start: mcp('--cluster-mode', 'standalone'), targetMs: 125 },
      // As agents' hosts launch it (auto mode: it looks for a hub on the machine), on a free port.
      { label: 'mdp-server mcp, auto mode', start: mcp('--cluster-id', 'bench-cold-start'), targetMs: 125 },
    ],
    comparisons: [
      { a: 'mdp-server mcp', b: 'bare SDK bundled, stdio', metric: 'p50' },
      { a: 'mdp-server mcp', b: 'bare SDK, stdio', metric: 'p50' },
      { a: 'mdp-server --version', b: 'node alone', metric: 'p50' },
    ],
  };
}

export function scenarios(sizes: Sizes): Scenario[] {
  const many = `${sizes.catalogClients.toLocaleString('en-US')} clients`;
  return [
    {
      name: 'ws-read',
      kind: 'read',
      title: 'Skill read over the websocket',
      cases: [wsReadCase(1, [{ concurrency: 32 }, { concurrency: 1 }]), wsReadCase(sizes.manyClients, [{ concurrency: 32 }])],
    },
    {
      name: 'loop-read',
      kind: 'read',
      title: 'Skill read over the HTTP loop',
      cases: [loopReadCase(1), loopReadCase(sizes.manyClients)],
    },
    {
      name: 'host-call',
      kind: 'read',
      title: 'Host API call of an endpoint (POST /mdp/call) against a skill read, over the websocket',
      cases: [hostCallCase()],
    },
    {
      name: 'mcp-call',
      kind: 'read',
      title: 'MCP tools/call of callPath over Streamable HTTP against the host call of the same endpoint',
      cases: [mcpCallCase()],
    },
    {
      name: 'jwt-read',
      kind: 'read',
      title: 'Skill read with an access token (JWT) against a static token, over the websocket',
      cases: [jwtReadCase()],
    },
    {
      name: 'catalog',
      kind: 'read',
      title: `Catalog scale: ${many} × ${sizes.catalogSkills} skills, random targets`,
      cases: [catalogCase(sizes)],
    },
    {
      name: 'idle-memory',
      kind: 'memory',
      title: `Idle memory: ${sizes.idleClients.toLocaleString('en-US')} websocket clients registered`,
      subjects: [
        { label: MDP, server: 'mdp', transport: 'ws', population: population(sizes.idleClients) },
        { label: 'bare ws', server: 'bare-ws', transport: 'ws', population: population(sizes.idleClients) },
      ],
      comparisons: [{ a: MDP, b: 'bare ws', target: 1.15 }],
    },
    {
      // An auto-mode server scans its discovery range every 2 s (the cluster's DISCOVERY_DEFAULTS):
      // the round's length and CPU, where nothing listens.
      name: 'discovery',
      kind: 'scan',
      title: 'Discovery round: one scan of the default 100-port range (127.0.0.1:47372-47471)',
      scanners: [
        { label: 'scanRange', scanner: 'scan-range' },
        { label: 'bare connect', scanner: 'bare-connect' },
      ],
      fromPort: 47372,
      toPort: 47471,
      comparisons: [{ a: 'scanRange', b: 'bare connect' }],
    },
    {
      // Issue 36: listings of the largest catalogs the limits allow must not stall the node.
      name: 'listing',
      kind: 'listing',
      title: 'GET /mdp/meta while paged listings of the largest catalogs run',
      cases: [
        {
          label: `${(sizes.listingPathClients * sizes.listingPathsEach).toLocaleString('en-US')} paths (${sizes.listingPathClients} clients × ${sizes.listingPathsEach.toLocaleString('en-US')})`,
          server: 'mdp',
          population: { prefix: 'p', clients: sizes.listingPathClients, skills: sizes.listingPathsEach },
        },
        {
          label: `${sizes.listingBigClients} clients × ${sizes.listingBigPaths} paths × ${(sizes.listingDescriptionBytes / 1000).toLocaleString('en-US')} kB descriptions`,
          server: 'mdp',
          population: { prefix: 'b', clients: sizes.listingBigClients, skills: sizes.listingBigPaths, descriptionBytes: sizes.listingDescriptionBytes },
        },
        // The machine's floor: plain node:http writing pages of the same size, no registry.
        { label: 'bare node:http, 1 MB pages (control)', server: 'bare-pages', population: { prefix: 'x', clients: 0, skills: 0 } },
      ],
      walkers: [0, 1, sizes.listingWalkers],
      metaIntervalMs: 10,
      metaTargetMs: 50,
      comparisons: [],
    },
    {
      // Issue 32: a call for a client of another node is one NATS request to it; what does that cost
      // the fleet against a read on the node that holds the client?
      name: 'fleet-read',
      kind: 'fleet-read',
      title: `Fleet on NATS: skill reads of ${sizes.fleetReadClients} websocket clients over 3 nodes, sent to the holder, to another node, to any node; concurrency 32 and 1`,
      nodes: 3,
      clients: sizes.fleetReadClients,
      // 32 readers batch work into each wake-up of a node; 1 reader is the bare round trip, each
      // read alone, whatever the destination.
      concurrencies: [32, 1],
      ttlMs: sizes.fleetTtlMs,
      destinations: [
        { label: FLEET_LOCAL, sendTo: 'holder' },
        { label: FLEET_REMOTE, sendTo: 'other' },
        { label: FLEET_ANY, sendTo: 'any' },
      ],
      comparisons: [
        { a: FLEET_REMOTE, b: FLEET_LOCAL, target: 2 },
        { a: FLEET_ANY, b: FLEET_LOCAL },
        { a: FLEET_REMOTE, b: FLEET_LOCAL, metric: 'fleetCpuUsPerOp' },
      ],
    },
    {
      name: 'fleet-scale',
      kind: 'fleet-scale',
      title: `Fleet on NATS at scale: ${sizes.fleetScaleClients.toLocaleString('en-US')} websocket clients over 3 nodes, then one node killed`,
      nodes: 3,
      clients: sizes.fleetScaleClients,
      ttlMs: sizes.fleetTtlMs,
      heapTargetBytes: 1024,
      comparisons: [],
    },
    {
      name: 'registration',
      kind: 'registration',
      title: `Registration rate: connect, register ${sizes.registrationSkills} skills, confirm, close`,
      subjects: [
        { label: MDP, server: 'mdp', transport: 'ws', population: population(0) },
        { label: 'bare ws', server: 'bare-ws', transport: 'ws', population: population(0) },
      ],
      concurrency: sizes.registrationConcurrency,
      skills: sizes.registrationSkills,
      comparisons: [{ a: MDP, b: 'bare ws' }],
    },
    coldStartScenario(sizes),
  ];
}

export const SCENARIO_NAMES = [
  'ws-read',
  'loop-read',
  'host-call',
  'mcp-call',
  'jwt-read',
  'catalog',
  'idle-memory',
  'discovery',
  'listing',
  'registration',
  'cold-start',
  'fleet-read',
  'fleet-scale',
] as const;
