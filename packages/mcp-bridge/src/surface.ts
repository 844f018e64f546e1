/**
 * The catalog surface as a pure function: the clients (in the order they were first seen) in, the
 * MCP tools, prompts, resources and resource templates out, with their names from the name book
 * (names.ts). Rules:
 *
 *   - every endpoint is a tool; the same method and path on several clients with the same input
 *     schema is one tool with a required `clientId` enum; a client that publishes it with another
 *     schema gets its own tool, prefixed with its alias;
 *   - every prompt is an MCP prompt, grouped the same way (`clientId` is then a prompt argument);
 *   - every skill is a resource `mdp://<clientId><path>` (a template when it has `:param`
 *     segments), its mime type the skill's `contentType` or `text/markdown`;
 *   - the include/exclude globs match a name (tool, prompt, resource URI) or `<clientId><path>`;
 *   - at most `maxTools` tools are listed, the four generic ones included; catalog tools beyond
 *     that are left out, newest first (the generic tools still reach them);
 *   - descriptions are capped and labelled with their clients (text.ts).
 */
import type { EndpointDescriptor, EndpointMethod, ListedClient, PathDescriptor, PromptDescriptor, SkillDescriptor } from '@mdp/protocol';
import { createFilter } from './glob.js';
import { GENERIC_TOOL_NAMES, assignNames, bookKey, clientAlias, joinName, pathName, trimNameBook, type NameBook } from './names.js';
import { promptInput, type PromptArgument, type PromptPlan } from './prompt-input.js';
import { resourceUri, resourceUriTemplate } from './resource-uri.js';
import { capSchemaText } from './schema-text.js';
import { toolOutputSchema } from './output-schema.js';
import { labelledDescription } from './text.js';
import { toolAnnotations, toolInput, type ToolAnnotations, type ToolInputSchema, type ToolPlan } from './tool-input.js';

export const SURFACES = ['catalog', 'generic'] as const;
export type SurfaceMode = (typeof SURFACES)[number];

export interface SurfaceOptions {
  /** `catalog`: the generic tools plus every endpoint, prompt and skill; `generic`: the four generic tools only. */
  readonly surface: SurfaceMode;
  /** Most tools listed, the four generic ones included (some hosts send only the first 40). */
  readonly maxTools: number;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  /** Longest description (or text in an input schema) taken from a client, characters. */
  readonly descriptionMaxChars: number;
}

/** A client as the catalog sees it. */
export interface CatalogClient {
  /** The id agents are given: the bare id of a mirrored client that has one (it survives a failover), else its id. */
  readonly id: string;
  readonly name: string;
  readonly paths: readonly PathDescriptor[];
}

export function catalogClient(listed: ListedClient): CatalogClient {
  const aliases = Array.isArray(listed.aliases) ? listed.aliases : [];
  return { id: aliases.length === 1 ? (aliases[0] as string) : listed.id, name: listed.name, paths: listed.paths };
}

export interface McpToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: ToolInputSchema;
  readonly annotations?: ToolAnnotations;
  /** The result envelope with the endpoint's declared `outputSchema` as `data` (output-schema.ts). */
  readonly outputSchema?: Record<string, unknown>;
  /** Whether the tool may run as an MCP task (absent: it may not). */
  readonly execution?: { readonly taskSupport: 'forbidden' | 'optional' | 'required' };
}

export interface CatalogTool {
  readonly definition: McpToolDefinition;
  readonly plan: ToolPlan;
  /** The endpoint's declared `contentType` (an image or audio one makes its answers media blocks). */
  readonly contentType?: string;
}

export interface CatalogPrompt {
  readonly definition: { readonly name: string; readonly description: string; readonly arguments: PromptArgument[] };
  readonly plan: PromptPlan;
}

export interface CatalogResource {
  readonly definition: { readonly uri: string; readonly name: string; readonly description: string; readonly mimeType: string };
}

export interface CatalogTemplate {
  readonly definition: { readonly uriTemplate: string; readonly name: string; readonly description: string; readonly mimeType: string };
  readonly clientId: string;
  /** The skill's path pattern. */
  readonly path: string;
}

export interface Surface {
  /** Catalog tools listed (after the filters and the cap). */
  readonly tools: readonly CatalogTool[];
  readonly prompts: readonly CatalogPrompt[];
  readonly resources: readonly CatalogResource[];
  readonly templates: readonly CatalogTemplate[];
  /** Catalog tools the cap left out. */
  readonly toolsOverCap: number;
}

export const emptySurface: Surface = { tools: [], prompts: [], resources: [], templates: [], toolsOverCap: 0 };

/** JSON with object keys sorted, so that two clients' equal schemas compare equal. Input depth is bounded (capSchemaText). */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, child]) => `${JSON.stringify(key)}:${canonicalJson(child)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

interface Group<D> {
  /** What the name stands for: the route, plus `@<clientId>` for a variant with another schema. */
  readonly key: string;
  /** Alias prefix of a variant. */
  readonly alias: string | undefined;
  /** The first client's descriptor (their schemas are equal; its description is shown). */
  readonly descriptor: D;
  readonly clients: CatalogClient[];
}

/**
 * Group what clients offer on one route by input schema, in the order groups first appear. The
 * first schema seen on a route has the route's plain key; each other one is a variant keyed by
 * its first client.
 */
function groupOffers<D extends EndpointDescriptor | PromptDescriptor>(
  clients: readonly CatalogClient[],
  type: D['type'],
  routeOf: (descriptor: D) => string,
  maxChars: number,
): Group<D>[] {
  const groups: Group<D>[] = [];
  const routes = new Map<string, Map<string, Group<D>>>();
  for (const client of clients) {
    for (const path of client.paths) {
      if (path.type !== type) continue;
      const descriptor = path as D;
      const route = routeOf(descriptor);
      const schema = canonicalJson(descriptor.inputSchema === undefined ? null : capSchemaText(descriptor.inputSchema, maxChars));
      let classes = routes.get(route);
      if (!classes) routes.set(route, (classes = new Map()));
      let group = classes.get(schema);
      if (!group) {
        const variant = classes.size > 0;
        group = { key: variant ? `${route} @${client.id}` : route, alias: variant ? clientAlias(client.id) : undefined, descriptor, clients: [] };
        classes.set(schema, group);
        groups.push(group);
      }
      // A client listing the same route twice counts once.
      if (!group.clients.includes(client)) group.clients.push(client);
    }
  }
  return groups;
}

const routeNames = (clients: readonly CatalogClient[], path: string): string[] => clients.map((client) => `${client.id}${path}`);

export function buildSurface(clients: readonly CatalogClient[], book: NameBook, options: SurfaceOptions): { surface: Surface; book: NameBook } {
  if (options.surface === 'generic') return { surface: emptySurface, book };
  const max = options.descriptionMaxChars;
  const listed = createFilter(options.include, options.exclude);
  const inUse = new Set<string>();

  // Tools
  const endpoints = groupOffers<EndpointDescriptor>(clients, 'endpoint', (d) => `${d.method} ${d.path}`, max);
  const methodsAt = new Map<string, Set<EndpointMethod>>();
  for (const group of endpoints) {
    const { path, method } = group.descriptor;
    const methods = methodsAt.get(path) ?? new Set<EndpointMethod>();
    methods.add(method);
    methodsAt.set(path, methods);
  }
  const toolNames = assignNames(
    book,
    'tool',
    endpoints.map((group) => ({
      key: group.key,
      preferred: () => {
        const { path, method } = group.descriptor;
        const base = pathName(path);
        const verb = (methodsAt.get(path)?.size ?? 0) > 1 || base === '';
        return joinName(group.alias ?? '', verb ? method.toLowerCase() : '', base);
      },
    })),
  );
  book = toolNames.book;
  const tools: CatalogTool[] = [];
  for (const group of endpoints) {
    const name = toolNames.names.get(group.key) as string;
    inUse.add(bookKey('tool', group.key));
    const { method, path, description } = group.descriptor;
    if (!listed([name, ...routeNames(group.clients, path)])) continue;
    const { inputSchema, plan } = toolInput(
      group.descriptor,
      group.clients.map((client) => client.id),
      max,
    );
    const outputSchema = group.descriptor.outputSchema === undefined ? undefined : toolOutputSchema(group.descriptor.outputSchema, max);
    tools.push({
      definition: {
        name,
        description: labelledDescription(`Endpoint ${method} ${path}`, group.clients, description, max),
        inputSchema,
        annotations: toolAnnotations(method, path),
        ...(outputSchema ? { outputSchema } : {}),
      },
      plan,
      ...(group.descriptor.contentType === undefined ? {} : { contentType: group.descriptor.contentType }),
    });
  }
  const room = Math.max(0, options.maxTools - GENERIC_TOOL_NAMES.length);

  // Prompts
  const promptGroups = groupOffers<PromptDescriptor>(clients, 'prompt', (d) => d.path, max);
  const promptNames = assignNames(
    book,
    'prompt',
    promptGroups.map((group) => ({ key: group.key, preferred: () => joinName(group.alias ?? '', pathName(group.descriptor.path) || 'prompt') })),
  );
  book = promptNames.book;
  const prompts: CatalogPrompt[] = [];
  for (const group of promptGroups) {
    const name = promptNames.names.get(group.key) as string;
    inUse.add(bookKey('prompt', group.key));
    const { path, description } = group.descriptor;
    if (!listed([name, ...routeNames(group.clients, path)])) continue;
    const input = promptInput(
      group.descriptor,
      group.clients.map((client) => client.id),
      max,
    );
    prompts.push({
      definition: { name, description: labelledDescription(`Prompt ${path}`, group.clients, description, max), arguments: input.arguments },
      plan: input.plan,
    });
  }

  // Resources and templates
  const resources: CatalogResource[] = [];
  const templates: CatalogTemplate[] = [];
  for (const client of clients) {
    const seen = new Set<string>();
    for (const path of client.paths) {
      if (path.type !== 'skill' || seen.has(path.path)) continue;
      seen.add(path.path);
      const skill = path as SkillDescriptor;
      const name = `${client.id}${skill.path}`;
      const description = labelledDescription(`Skill ${skill.path}`, [client], skill.description, max);
      const mimeType = skill.contentType ?? 'text/markdown';
      if (skill.path.includes('/:')) {
        const uriTemplate = resourceUriTemplate(client.id, skill.path);
        if (listed([uriTemplate, name])) templates.push({ definition: { uriTemplate, name, description, mimeType }, clientId: client.id, path: skill.path });
      } else {
        const uri = resourceUri(client.id, skill.path);
        if (listed([uri, name])) resources.push({ definition: { uri, name, description, mimeType } });
      }
    }
  }

  return {
    surface: { tools: tools.slice(0, room), prompts, resources, templates, toolsOverCap: Math.max(0, tools.length - room) },
    book: trimNameBook(book, inUse),
  };
}
