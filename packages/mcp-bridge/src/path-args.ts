/**
 * What tools and prompts share when an agent's arguments become a call: which client, and the
 * concrete path from the `:param` segments. Errors are sentences an agent can act on.
 */
import { isValidParamValue } from '@mdp/protocol';

export const CLIENT_ID_ARG = 'clientId';

/** The pattern a parameter value must match (clients in the field accept only this). */
export const PARAM_VALUE_PATTERN = '^[a-z0-9][a-z0-9_-]*$';

export type Picked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

/** Names of the `:param` segments of `path`, in order. */
export function paramNames(path: string): string[] {
  return path
    .slice(1)
    .split('/')
    .filter((segment) => segment.startsWith(':'))
    .map((segment) => segment.slice(1));
}

/** The client a call goes to: the only one, or the one `clientId` names among `clientIds`. */
export function pickClient(clientIds: readonly string[], args: Readonly<Record<string, unknown>>): Picked<string> {
  if (clientIds.length === 1) return { ok: true, value: clientIds[0] as string };
  const given = args[CLIENT_ID_ARG];
  if (typeof given === 'string' && clientIds.includes(given)) return { ok: true, value: given };
  const options = clientIds.map((id) => JSON.stringify(id)).join(', ');
  return given === undefined
    ? { ok: false, message: `Argument "${CLIENT_ID_ARG}" is required: one of ${options}` }
    : { ok: false, message: `Argument "${CLIENT_ID_ARG}" must be one of ${options}, got ${JSON.stringify(given)}` };
}

/** `pattern` with every `:param` segment filled from `args`. */
export function fillPath(pattern: string, args: Readonly<Record<string, unknown>>): Picked<string> {
  const segments: string[] = [];
  for (const segment of pattern.slice(1).split('/')) {
    if (!segment.startsWith(':')) {
      segments.push(segment);
      continue;
    }
    const name = segment.slice(1);
    const raw = args[name];
    const value = typeof raw === 'number' && Number.isFinite(raw) ? String(raw) : raw;
    if (typeof value !== 'string') {
      return { ok: false, message: `Argument "${name}" is required: a string, the value of ${segment} in ${pattern}` };
    }
    if (!isValidParamValue(value)) {
      return {
        ok: false,
        message: `Argument "${name}" must be lower-case letters, digits, "_" and "-", starting with a letter or digit; got ${JSON.stringify(value)}`,
      };
    }
    segments.push(value);
  }
  return { ok: true, value: `/${segments.join('/')}` };
}

/** A query string value for an argument: strings as they are, anything else as JSON. */
export function queryValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
