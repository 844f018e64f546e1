import type { EndpointMethod, PathDescriptor } from '@mdp/protocol';
import type { CatalogClient } from '../src/surface.js';

export const ep = (method: EndpointMethod, path: string, extra: Record<string, unknown> = {}): PathDescriptor =>
  ({ type: 'endpoint', method, path, ...extra }) as PathDescriptor;
export const prompt = (path: string, extra: Record<string, unknown> = {}): PathDescriptor => ({ type: 'prompt', path, ...extra }) as PathDescriptor;
export const skill = (path: string, extra: Record<string, unknown> = {}): PathDescriptor => ({ type: 'skill', path, ...extra }) as PathDescriptor;
export const client = (id: string, paths: PathDescriptor[], name = id): CatalogClient => ({ id, name, paths });
export const obj = (properties: Record<string, unknown>) => ({ type: 'object', properties });
