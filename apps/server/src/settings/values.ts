/**
 * valibot schemas for the values of settings. One schema per kind of value takes every form a
 * source gives: a string from the command line or the environment, a JSON value from a config
 * file. Each message is a whole predicate ("must be …"); the caller puts the setting's name and
 * source in front of it and the value it got behind it.
 */
import * as v from 'valibot';
import { normalizeTarget } from '@mdp/cluster';

/** What every value schema is: any input in, a `T` out. */
export type ValueSchema<T> = v.GenericSchema<unknown, T>;

/** A whole number in [min, max]: digits in a string, or a JSON number. */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): ValueSchema<number> {
  const message =
    max !== Number.MAX_SAFE_INTEGER
      ? `must be a whole number from ${min} to ${max}`
      : min === 1
        ? 'must be a positive whole number'
        : `must be a whole number of at least ${min}`;
  return v.pipe(
    v.union([v.pipe(v.string(message), v.trim(), v.digits(message), v.transform(Number)), v.number(message)], message),
    v.integer(message),
    v.minValue(min, message),
    v.maxValue(max, message),
  );
}

/** A string that is not empty once trimmed; the trimmed string. */
export function text(): ValueSchema<string> {
  return v.pipe(v.string('must be a string'), v.trim(), v.nonEmpty('must not be empty'));
}

/** One of `choices`, exactly. */
export function oneOf<const T extends readonly string[]>(choices: T): ValueSchema<T[number]> {
  return v.picklist(choices, `must be one of ${choices.join(', ')}`);
}

/**
 * A list of non-empty strings, without duplicates: a comma-separated string (the environment, or
 * a flag that takes a list in one value) whose empty items are skipped, or an array (a repeated
 * flag, a JSON array) in which an empty item is an error.
 */
export function list(items: string): ValueSchema<readonly string[]> {
  const item = items.replace(/s$/, '');
  const fromText = v.pipe(
    v.string(),
    v.transform((value) =>
      value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    ),
  );
  const fromArray = v.pipe(
    v.array(v.string(`must be a list of ${items}`), `must be a list of ${items}`),
    v.transform((values) => values.map((item) => item.trim())),
    v.check((values) => !values.includes(''), `must not hold an empty ${item}`),
  );
  return v.pipe(
    v.union([fromText, fromArray], `must be a list of ${items}`),
    v.minLength(1, `must name at least one ${item}`),
    v.transform((values) => [...new Set(values)]),
  );
}

/** `true`/`false`: a JSON boolean, or `true`, `false`, `1`, `0`, `yes`, `no` as text. */
export function toggle(): ValueSchema<boolean> {
  const message = 'must be true or false';
  const words = new Map([
    ['true', true],
    ['1', true],
    ['yes', true],
    ['false', false],
    ['0', false],
    ['no', false],
  ]);
  return v.union(
    [
      v.boolean(message),
      v.pipe(
        v.string(message),
        v.trim(),
        v.toLowerCase(),
        v.picklist([...words.keys()], message),
        v.transform((word) => words.get(word) === true),
      ),
    ],
    message,
  );
}

/** Why `target` cannot name an MDP server, or `undefined`. */
function targetProblem(target: string): string | undefined {
  try {
    normalizeTarget(target);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The address of an MDP server: a URL (http, https, ws, wss), HOST:PORT, HOST or PORT. */
export function serverAddress(): ValueSchema<string> {
  return v.pipe(
    text(),
    v.check(
      (value) => targetProblem(value) === undefined,
      (issue) => `must be the address of an MDP server (URL, HOST:PORT or PORT): ${targetProblem(issue.input as string) ?? 'bad address'}`,
    ),
  );
}

/** Each item the address of an MDP server. */
export function serverAddresses(): ValueSchema<readonly string[]> {
  return v.pipe(
    list('addresses'),
    v.check(
      (values) => values.every((value) => targetProblem(value) === undefined),
      (issue) => {
        const bad = (issue.input as readonly string[]).find((value) => targetProblem(value) !== undefined) ?? '';
        return `must be addresses of MDP servers (URL, HOST:PORT or PORT): ${JSON.stringify(bad)}: ${targetProblem(bad) ?? 'bad address'}`;
      },
    ),
  );
}
