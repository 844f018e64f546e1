import { describe, expect, it } from 'vitest';
import type { ListedClient } from '@mdp/protocol';
import { hash6, emptyNameBook } from '../src/names.js';
import { buildSurface, catalogClient, type CatalogClient, type SurfaceOptions } from '../src/surface.js';
import { endpoint, prompt, skill } from '@mdp/test-kit';
import { client, obj } from './fixtures.js';

const OPTIONS: SurfaceOptions = { surface: 'catalog', maxTools: 40, include: [], exclude: [], descriptionMaxChars: 200 };
const build = (clients: CatalogClient[], options: Partial<SurfaceOptions> = {}, book = emptyNameBook) =>
  buildSurface(clients, book, { ...OPTIONS, ...options });
const toolNames = (clients: CatalogClient[], options: Partial<SurfaceOptions> = {}) => build(clients, options).surface.tools.map((t) => t.definition.name);

describe('catalog tools', () => {
  it('one tool per endpoint, named by its static segments', () => {
    expect(toolNames([client('todo', [endpoint('/page/click', 'POST'), endpoint('/todos/:id', 'GET'), endpoint('/', 'GET')])])).toEqual([
      'page_click',
      'todos',
      'get',
    ]);
  });

  it('several methods on one path get a verb prefix', () => {
    expect(toolNames([client('a', [endpoint('/users/profile', 'GET'), endpoint('/users/profile', 'DELETE')])])).toEqual([
      'get_users_profile',
      'delete_users_profile',
    ]);
  });

  it('the same method, path and schema on several clients is one tool with a clientId enum', () => {
    const schema = { inputSchema: obj({ selector: { type: 'string' } }) };
    const { surface } = build([client('a', [endpoint('/page/click', 'POST', schema)]), client('b', [endpoint('/page/click', 'POST', schema)])]);
    expect(surface.tools).toHaveLength(1);
    const [tool] = surface.tools;
    expect(tool!.definition.name).toBe('page_click');
    expect(tool!.definition.inputSchema.properties.clientId).toMatchObject({ enum: ['a', 'b'] });
    expect(tool!.definition.description).toBe('Endpoint POST /page/click of MDP clients "a", "b".');
    expect(tool!.plan.clientIds).toEqual(['a', 'b']);
  });

  it('equal schemas with keys in another order are the same schema', () => {
    const one = { inputSchema: { type: 'object', properties: { a: {}, b: {} } } };
    const two = { inputSchema: { properties: { b: {}, a: {} }, type: 'object' } };
    expect(toolNames([client('a', [endpoint('/x', 'POST', one)]), client('b', [endpoint('/x', 'POST', two)])])).toEqual(['x']);
  });

  it('another schema on the same route is a variant with the client alias as prefix', () => {
    const names = toolNames([
      client('todo', [endpoint('/page/click', 'POST', { inputSchema: obj({ a: {} }) })]),
      client('shop-app', [endpoint('/page/click', 'POST', { inputSchema: obj({ b: {} }) })]),
    ]);
    expect(names).toEqual(['page_click', 'shop_app_page_click']);
  });

  it('names are [a-z0-9_], at most 48 characters, and unique', () => {
    const long = `/${'segment'.repeat(5)}/${'another'.repeat(5)}`;
    const names = toolNames([client('a', [endpoint(long, 'GET'), endpoint('/page-click', 'GET'), endpoint('/page/click', 'GET')])]);
    for (const name of names) expect(name).toMatch(/^[a-z0-9_]{1,48}$/);
    expect(new Set(names).size).toBe(names.length);
    expect(names[2]).toBe(`page_click_${hash6('GET /page/click')}`);
  });

  it('keeps a name for the life of the book, even when the rule would now choose another', () => {
    const first = build([client('a', [endpoint('/users/profile', 'GET')])]);
    expect(first.surface.tools[0]!.definition.name).toBe('users_profile');
    const later = build([client('a', [endpoint('/users/profile', 'GET'), endpoint('/users/profile', 'DELETE')])], {}, first.book);
    expect(later.surface.tools.map((t) => t.definition.name)).toEqual(['users_profile', 'delete_users_profile']);
  });

  it('labels and caps descriptions from clients', () => {
    const { surface } = build([client('a', [endpoint('/x', 'GET', { description: 'z'.repeat(500) })], 'App A')], { descriptionMaxChars: 20 });
    const text = surface.tools[0]!.definition.description;
    expect(text.startsWith('Endpoint GET /x of MDP client "a" (App A). Its description: zzz')).toBe(true);
    expect(text.endsWith('…')).toBe(true);
  });

  it('carries the annotations of the method', () => {
    const { surface } = build([client('a', [endpoint('/r', 'GET'), endpoint('/d', 'DELETE'), endpoint('/p', 'PUT')])]);
    expect(surface.tools.map((t) => t.definition.annotations)).toEqual([
      { title: 'GET /r', readOnlyHint: true },
      { title: 'DELETE /d', readOnlyHint: false, destructiveHint: true },
      { title: 'PUT /p', readOnlyHint: false, idempotentHint: true },
    ]);
  });

  it('lists at most maxTools tools, the four generic ones counted, the first seen kept', () => {
    const paths = Array.from({ length: 10 }, (_, i) => endpoint(`/t${i}`, 'POST'));
    const { surface } = build([client('a', paths)], { maxTools: 7 });
    expect(surface.tools.map((t) => t.definition.name)).toEqual(['t0', 't1', 't2']);
    expect(surface.toolsOverCap).toBe(7);
    expect(build([client('a', paths)], { maxTools: 4 }).surface.tools).toEqual([]);
  });

  it('include and exclude match tool names or <clientId><path>', () => {
    const clients = [
      client('todo', [endpoint('/page/click', 'POST'), endpoint('/page/type', 'POST'), endpoint('/items', 'GET')]),
      client('shop', [endpoint('/cart', 'GET')]),
    ];
    expect(toolNames(clients, { include: ['page_*'] })).toEqual(['page_click', 'page_type']);
    expect(toolNames(clients, { include: ['shop/*'] })).toEqual(['cart']);
    expect(toolNames(clients, { exclude: ['page_type', 'todo/items'] })).toEqual(['page_click', 'cart']);
  });

  it('generic surface lists no catalog tools, prompts or resources', () => {
    expect(build([client('a', [endpoint('/x', 'GET'), prompt('/p/prompt.md'), skill('/s/skill.md')])], { surface: 'generic' }).surface).toEqual({
      tools: [],
      prompts: [],
      resources: [],
      templates: [],
      toolsOverCap: 0,
    });
  });
});

describe('catalog prompts', () => {
  it('one prompt per path without the prompt.md leaf, shared ones with a clientId argument', () => {
    const schema = { inputSchema: obj({ tone: { description: 'How' } }) };
    const { surface } = build([
      client('a', [prompt('/review/prompt.md', schema), prompt('/summarize.prompt.md')]),
      client('b', [prompt('/review/prompt.md', schema)]),
    ]);
    expect(surface.prompts.map((p) => p.definition.name)).toEqual(['review', 'summarize']);
    expect(surface.prompts[0]!.definition.arguments.map((a) => a.name)).toEqual(['clientId', 'tone']);
    expect(surface.prompts[0]!.definition.description).toBe('Prompt /review/prompt.md of MDP clients "a", "b".');
  });
});

describe('catalog resources', () => {
  it('skills are resources, mime type from contentType or text/markdown; :param skills are templates', () => {
    const { surface } = build([
      client('todo', [
        skill('/docs/skill.md', { description: 'Docs' }),
        skill('/api/skill.md', { contentType: 'text/plain' }),
        skill('/topics/:topic/skill.md'),
      ]),
    ]);
    expect(surface.resources.map((r) => r.definition)).toEqual([
      {
        uri: 'mdp://todo/docs/skill.md',
        name: 'todo/docs/skill.md',
        description: 'Skill /docs/skill.md of MDP client "todo". Its description: Docs',
        mimeType: 'text/markdown',
      },
      { uri: 'mdp://todo/api/skill.md', name: 'todo/api/skill.md', description: 'Skill /api/skill.md of MDP client "todo".', mimeType: 'text/plain' },
    ]);
    expect(surface.templates.map((t) => t.definition)).toEqual([
      {
        uriTemplate: 'mdp://todo/topics/{topic}/skill.md',
        name: 'todo/topics/:topic/skill.md',
        description: 'Skill /topics/:topic/skill.md of MDP client "todo".',
        mimeType: 'text/markdown',
      },
    ]);
  });

  it('filters apply to resources by URI or <clientId><path>', () => {
    const clients = [client('todo', [skill('/a/skill.md'), skill('/b/skill.md')])];
    expect(build(clients, { exclude: ['todo/a/*'] }).surface.resources.map((r) => r.definition.uri)).toEqual(['mdp://todo/b/skill.md']);
  });
});

describe('catalogClient', () => {
  it('gives agents the bare id of a mirrored client that has one', () => {
    const base = {
      name: 'T',
      status: 'online',
      connectedAt: '',
      lastSeenAt: '',
      connection: { mode: 'ws', secure: false, authSource: 'none' },
    } as const;
    expect(catalogClient({ ...base, paths: [], id: 'hub.todo', aliases: ['todo'] } as ListedClient).id).toBe('todo');
    expect(catalogClient({ ...base, paths: [], id: 'todo', aliases: [] } as ListedClient).id).toBe('todo');
  });
});
