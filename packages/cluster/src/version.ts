/**
 * Which upstream hubs accept our protocol version (SPEC §10.6). The two functions of `semver` it
 * needs are imported on their own: the package's index loads all of it (a bundled server's start).
 */
import satisfies from 'semver/functions/satisfies.js';
import validRange from 'semver/ranges/valid.js';
import { PROTOCOL_VERSION } from '@mdp/protocol';

/**
 * Whether `version` satisfies at least one of the upstream's `supportedProtocolRanges`. Ranges that
 * are not valid semver ranges accept nothing, and neither does an empty one (which semver would
 * read as `*`).
 */
export function upstreamAccepts(ranges: readonly string[], version: string = PROTOCOL_VERSION): boolean {
  return ranges.some((range) => {
    if (range.trim() === '') return false;
    try {
      return validRange(range) !== null && satisfies(version, range);
    } catch {
      return false;
    }
  });
}
