/**
 * A workaround for a leak of the SDK's web-standard Streamable HTTP transport (1.x, up to 1.32.2):
 * in JSON response mode it resolves a POST's answer but never runs the stream mapping's cleanup,
 * so every answered POST leaves one `_streamMapping` entry (holding the resolved `Response`)
 * behind for the life of the session: about 10 KB per MCP call here.
 * (typescript-sdk issue #2559; the fix, #2747, is not in a 1.x release yet.)
 *
 * After an answer, the entries of finished JSON POSTs — those no pending request id maps to any
 * more — are released with their own cleanup. If the SDK's internals change (or it fixes the
 * leak), the fields are not found and nothing is done.
 */

interface StreamEntry {
  readonly resolveJson?: unknown;
  cleanup(): void;
}

interface TransportInternals {
  readonly _streamMapping?: unknown;
  readonly _requestToStreamMapping?: unknown;
}

/** Release the stream mappings of answered JSON-mode POSTs; returns how many it released. */
export function releaseAnsweredJsonStreams(transport: object): number {
  const { _streamMapping: streams, _requestToStreamMapping: requests } = transport as TransportInternals;
  if (!(streams instanceof Map) || !(requests instanceof Map)) return 0;
  const pending = new Set<unknown>(requests.values());
  let released = 0;
  for (const [streamId, entry] of [...(streams as Map<unknown, StreamEntry>)]) {
    if (entry.resolveJson === undefined || pending.has(streamId)) continue;
    entry.cleanup();
    released += 1;
  }
  return released;
}

/** How many stream mappings the transport holds (for tests of the workaround). */
export function streamMappingCount(transport: object): number | undefined {
  const streams = (transport as TransportInternals)._streamMapping;
  return streams instanceof Map ? streams.size : undefined;
}
