/** Which upstream hubs accept our protocol version (SPEC §10.6). */
import semver from 'semver';
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
      return semver.validRange(range) !== null && semver.satisfies(version, range);
    } catch {
      return false;
    }
  });
}
