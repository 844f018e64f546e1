/**
 * Tenancy by principal (issue 36, `tenancy.ts` of `@mdp/core`): which clients a caller sees under
 * an auth policy. A group of the settings table.
 */
import * as v from 'valibot';
import { TENANCY_MODES, sharedPatternProblem } from '@mdp/core';
import { list, oneOf } from './values.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';
import { settingGroup } from './table.js';

/** Client ids or globs, each one `createTenancy` takes. */
const sharedClients = v.pipe(
  list('client ids'),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    for (const pattern of dataset.value) {
      const problem = sharedPatternProblem(pattern);
      if (problem) addIssue({ message: problem });
    }
  }),
);

export const TENANCY_SETTINGS = settingGroup({
  title: 'Tenancy (who sees which clients under --auth-token)',
  settings: {
    tenancy: {
      flag: 'tenancy',
      placeholder: '<mode>',
      schema: oneOf(TENANCY_MODES),
      default: SERVER_DEFAULTS.tenancy,
      help: `shared: every credential lists, reads and calls every client (one token per app);
        principal: a credential reaches only the clients registered with it (its principal) and
        the shared ones, and any other looks exactly like an unknown client (needs --auth-token)`,
    },
    sharedClient: {
      flag: 'shared-client',
      placeholder: '<id|glob>',
      arity: 'list',
      schema: sharedClients,
      help: `under --tenancy principal, a client every credential reaches (repeatable; * is any
        characters, ? one, e.g. printer or team-*); a client mirrored from a cluster member matches by
        the id it has there`,
    },
  },
});

/** Why the settings cannot run, or undefined. */
export function tenancyProblem(values: { readonly tenancy: string }, guarded: boolean): string | undefined {
  if (values.tenancy !== 'principal' || guarded) return undefined;
  return TENANCY_NEEDS_POLICY;
}

/** Why `tenancy: 'principal'` is refused without an auth policy. */
export const TENANCY_NEEDS_POLICY =
  'tenancy principal needs an auth policy (--auth-token, --auth-tokens-file or --auth-issuer): without credentials there is no principal to keep clients apart by';

/** The options of the settings' values. */
export function tenancyOptions(values: {
  readonly tenancy: (typeof TENANCY_MODES)[number];
  readonly sharedClient?: readonly string[] | undefined;
}): Pick<MdpServerOptions, 'tenancy' | 'sharedClients'> {
  return { tenancy: values.tenancy, ...(values.sharedClient ? { sharedClients: values.sharedClient } : {}) };
}
