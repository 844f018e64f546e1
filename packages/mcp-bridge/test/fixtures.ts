import type { PathDescriptor } from '@mdp/protocol';
import type { CatalogClient } from '../src/surface.js';

export const client = (id: string, paths: PathDescriptor[], name = id): CatalogClient => ({ id, name, paths });
export const obj = (properties: Record<string, unknown>) => ({ type: 'object', properties });
