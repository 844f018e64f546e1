/**
 * Test doubles: the kit's fake client, registered on a real Router, answering each call with the
 * text of a skill read (or as the test scripts). No sockets.
 */
import type { Router } from '@mdp/core';
import type { AuthContext, ClientDescriptor, PathDescriptor } from '@mdp/protocol';
import { descriptor, fakeClient, type FakeClient } from '@mdp/test-kit';
import type { SkillReadRequest } from '../src/index.js';

/** Open a session on a fake client and register `id` with `paths`; it answers `skill at <path>`. */
export function connectClient(router: Router, id: string, paths: PathDescriptor[], extra: Partial<ClientDescriptor> = {}): FakeClient {
  return fakeClient(router, descriptor(id, paths, extra), { reply: (call) => ({ ok: true, data: `skill at ${call.path}` }) });
}

export function readRequest(pathname: string, init: Partial<Omit<SkillReadRequest, 'pathname'>> = {}): SkillReadRequest {
  return { method: 'GET', pathname, query: {}, headers: {}, auth: undefined as AuthContext | undefined, ...init };
}
