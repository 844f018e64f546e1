/** Builders of the catalog entries and client descriptors tests register. */
import type { ClientDescriptor, EndpointMethod, PathDescriptor } from '@mdp/protocol';

/** A skill at `path` (a `…/skill.md` path, or any path a test means to be refused). */
export function skill(path: string, extra: Record<string, unknown> = {}): PathDescriptor {
  return { type: 'skill', path, ...extra } as PathDescriptor;
}

/** An endpoint `method path` (default GET). */
export function endpoint(path: string, method: EndpointMethod = 'GET', extra: Record<string, unknown> = {}): PathDescriptor {
  return { type: 'endpoint', path, method, ...extra } as PathDescriptor;
}

export function prompt(path: string, extra: Record<string, unknown> = {}): PathDescriptor {
  return { type: 'prompt', path, ...extra } as PathDescriptor;
}

/** Client `id`, named `Client <id>`, with `paths` (default one skill, `/docs/skill.md`). */
export function descriptor(id: string, paths: PathDescriptor[] = [skill('/docs/skill.md')], extra: Partial<ClientDescriptor> = {}): ClientDescriptor {
  return { id, name: `Client ${id}`, paths, ...extra };
}
