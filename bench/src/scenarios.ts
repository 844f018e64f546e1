/**
 * The scenarios of `pnpm bench` (issue 5), as data: which subjects run side by side, which loads
 * they get, and which ratios are compared against which target.
 */
import type { Population } from './fixtures.js';
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
}

export const FULL_SIZES: Sizes = {
  manyClients: 50,
  catalogClients: 2000,
  catalogSkills: 20,
  idleClients: 5000,
  registrationConcurrency: 16,
  registrationSkills: 20,
};

/** Tiny sizes for the smoke test: every code path, no meaningful figures. */
export const SMOKE_SIZES: Sizes = {
  manyClients: 5,
  catalogClients: 20,
  catalogSkills: 20,
  idleClients: 20,
  registrationConcurrency: 4,
  registrationSkills: 20,
};

export interface ComparisonSpec {
  /** Subject labels: the ratio is a / b. */
  readonly a: string;
  readonly b: string;
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
    };

const MDP = 'mdp-server';
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
      name: 'catalog',
      kind: 'read',
      title: `Catalog scale: ${many} × ${sizes.catalogSkills} skills, random targets`,
      cases: [
        {
          label: `${sizes.catalogSkills} skills each`,
          subjects: [
            { label: `${MDP}, ${many}`, server: 'mdp', transport: 'ws', population: population(sizes.catalogClients, sizes.catalogSkills) },
            { label: `${MDP}, 1 client`, server: 'mdp', transport: 'ws', population: population(1, sizes.catalogSkills) },
            // The registry alone: as many clients registered, every read to one of them, so the
            // socket fan-out of random targets (see the controls) is left out.
            {
              label: `${MDP}, ${many}, reads to 1`,
              server: 'mdp',
              transport: 'ws',
              population: { ...population(sizes.catalogClients, sizes.catalogSkills), readClients: 1 },
            },
            // Control: the same spread over many sockets through the bare relay, which has no
            // catalog at all, shows what 2,000 sockets cost any relay (fewer reads and writes batched).
            { label: `bare relay, ${many}`, server: 'bare-relay', transport: 'ws', population: population(sizes.catalogClients, sizes.catalogSkills) },
            { label: 'bare relay, 1 client', server: 'bare-relay', transport: 'ws', population: population(1, sizes.catalogSkills) },
          ],
          loads: [{ concurrency: 32 }],
          comparisons: [
            { a: `${MDP}, ${many}`, b: `${MDP}, 1 client`, target: 1.1 },
            { a: `${MDP}, ${many}, reads to 1`, b: `${MDP}, 1 client` },
            { a: `bare relay, ${many}`, b: 'bare relay, 1 client' },
            { a: `${MDP}, ${many}`, b: `bare relay, ${many}` },
          ],
        },
      ],
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
  ];
}

export const SCENARIO_NAMES = ['ws-read', 'loop-read', 'catalog', 'idle-memory', 'registration'] as const;
